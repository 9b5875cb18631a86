// JUnit XML for CI systems (Jenkins, GitLab, GitHub test reporters): one <testcase> per recorded
// process (or per test with `check --per-test`), failing when a violation belongs to it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analyzer/check.h"

namespace memledger::analyzer {

struct JUnitCase {
  std::string classname;
  std::string name;
  double time_s = 0;
  bool failed = false;
  std::string failure_message;  // one line (the attribute)
  std::string failure_text;     // the body: violations with their stacks
  std::string system_out;
};

// Escapes &, <, >, " and ' and replaces characters XML 1.0 forbids (control characters other
// than tab, newline and carriage return) by '?', so any command line or symbol name is safe.
std::string escapeXml(std::string_view text);

std::string junitXml(const std::string& suiteName, const std::vector<JUnitCase>& cases);

// One case per process image of the recording (name = its command). Violations not tied to any
// image (e.g. nothing was recorded) get a case of their own named "memledger check".
std::vector<JUnitCase> junitCasesPerProcess(const CheckResult& result);

// One case for a whole check result (per-test mode: one recording per test).
JUnitCase junitCaseFor(const CheckResult& result, const std::string& classname, const std::string& name);

}  // namespace memledger::analyzer
