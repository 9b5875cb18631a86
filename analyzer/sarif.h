// SARIF 2.1.0 for code-scanning UIs (GitHub, GitLab, VS Code's SARIF viewer): one result per
// violating site, located at the innermost frame that has a source file, with the whole stack.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/check.h"

namespace memledger::analyzer {

struct SarifInput {
  std::string name;  // the check it came from: the command, or the test name with --per-test
  const CheckResult* result = nullptr;
};

// `srcRoot` (absolute, may be empty): source files below it are written relative to it with
// uriBaseId "SRCROOT", which code-scanning services resolve against the checkout; others as
// absolute file:// URIs.
nlohmann::json sarifLog(const std::vector<SarifInput>& checks, const std::string& srcRoot,
                        const std::string& toolVersion);

// A percent-encoded URI reference for a path (RFC 3986: unreserved characters and '/' kept).
std::string pathToUri(const std::string& path);

}  // namespace memledger::analyzer
