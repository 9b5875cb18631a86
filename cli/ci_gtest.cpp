#include "ci_gtest.h"

#include <sstream>

#include "ci_process.h"

namespace memledger::cli {

namespace {

std::string trimmed(std::string s) {
  auto hash = s.find('#');
  if (hash != std::string::npos) s.resize(hash);
  size_t b = s.find_first_not_of(" \t\r");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

std::vector<GTestCase> parseGTestList(const std::string& text) {
  std::vector<GTestCase> out;
  std::istringstream in(text);
  std::string line, suite;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    bool indented = line[0] == ' ' || line[0] == '\t';
    std::string t = trimmed(line);
    if (t.empty()) continue;
    if (!indented) {
      // A suite line ends with '.'; anything else (a banner a main() printed) resets the suite.
      suite = t.back() == '.' ? t.substr(0, t.size() - 1) : std::string();
      continue;
    }
    if (suite.empty()) continue;
    auto disabled = [](const std::string& s) {
      return s.starts_with("DISABLED_") || s.find("/DISABLED_") != std::string::npos;
    };
    if (disabled(suite) || disabled(t)) continue;
    out.push_back({suite, t});
  }
  return out;
}

std::string listGTests(const std::vector<std::string>& program, std::vector<GTestCase>& tests) {
  std::vector<std::string> argv = program;
  argv.push_back("--gtest_list_tests");
  ChildResult r = runChildCapture(argv);
  if (r.status != 0)
    return "'" + program.front() + " --gtest_list_tests' failed (status " + std::to_string(r.status) +
           "): is it a GoogleTest binary?";
  tests = parseGTestList(r.out);
  if (tests.empty()) return "'" + program.front() + " --gtest_list_tests' listed no tests";
  return "";
}

}  // namespace memledger::cli
