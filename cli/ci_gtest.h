// GoogleTest binaries for `check --per-test`: which tests they hold.
#pragma once

#include <string>
#include <vector>

namespace memledger::cli {

struct GTestCase {
  std::string suite;  // "Suite" or "Prefix/Suite/0" for parameterized suites
  std::string name;   // "Name" or "Name/0"
  std::string fullName() const { return suite + "." + name; }
};

// Parses `--gtest_list_tests` output: "Suite." lines, then indented test names; "# GetParam()"
// and "# TypeParam" comments are dropped. DISABLED_ tests are left out (they would not run).
std::vector<GTestCase> parseGTestList(const std::string& text);

// Runs `program... --gtest_list_tests`; on success fills `tests` and returns "", otherwise the
// reason (program failed, no tests).
std::string listGTests(const std::vector<std::string>& program, std::vector<GTestCase>& tests);

}  // namespace memledger::cli
