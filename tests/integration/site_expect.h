// GoogleTest predicates over report JSON, so a failing check prints the whole site list it
// looked at instead of a bare "0 != 1".
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <string_view>

#include "harness.h"

namespace memledger::test {

// Exactly one site of `sites` has `function` in its stack, and it has this count, bytes and kind.
// With innermost=true its innermost frame must be `function` itself: the allocator's and the
// hook's frames are not part of a stack (docs/architecture.md).
inline ::testing::AssertionResult hasOneSite(const json& sites, std::string_view function, int64_t count,
                                             int64_t bytes, std::string_view kind, bool innermost = true) {
  auto found = sitesWith(sites, function);
  if (found.size() != 1)
    return ::testing::AssertionFailure() << found.size() << " sites name " << function
                                         << " (expected 1); sites:\n" << describeSites(sites);
  const json& s = found[0];
  if (s.value("count", int64_t{-1}) != count || s.value("bytes", int64_t{-1}) != bytes)
    return ::testing::AssertionFailure() << "site of " << function << " has " << s.value("count", int64_t{-1})
                                         << " blocks / " << s.value("bytes", int64_t{-1}) << " bytes, expected "
                                         << count << " / " << bytes << "; sites:\n" << describeSites(sites);
  if (s.value("kind", std::string()) != kind)
    return ::testing::AssertionFailure() << "site of " << function << " has kind '" << s.value("kind", std::string())
                                         << "', expected '" << kind << "'";
  if (innermost && !frameIs(s["stack"][0], function))
    return ::testing::AssertionFailure() << "innermost frame of " << function << "'s site is '"
                                         << memledger::test::innermost(s) << "'; sites:\n" << describeSites(sites);
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult hasNoSite(const json& sites, std::string_view function) {
  auto found = sitesWith(sites, function);
  if (found.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << found.size() << " sites name " << function << " (expected none):\n"
                                       << describeSites(json(found));
}

// The 1-based line of the only line of `path` containing `text` (0 when none or several).
inline int64_t lineOf(const std::string& path, std::string_view text) {
  std::ifstream in(path);
  std::string line;
  int64_t number = 0, found = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find(text) != std::string::npos) {
      if (found) return 0;
      found = number;
    }
  }
  return found;
}

// The innermost frame of the single site naming `function` points at `file`:`line` (file compared
// by its ending, so both absolute and relative paths match).
inline ::testing::AssertionResult innermostAt(const json& sites, std::string_view function, std::string_view file,
                                              int64_t line) {
  if (line <= 0) return ::testing::AssertionFailure() << "the expected source line of " << function << " is not unique";
  auto found = sitesWith(sites, function);
  if (found.size() != 1) return ::testing::AssertionFailure() << found.size() << " sites name " << function;
  const json& frame = found[0]["stack"][0];
  std::string f = frame.value("file", json()).is_string() ? frame["file"].get<std::string>() : "";
  int64_t l = frame.value("line", json()).is_number() ? frame["line"].get<int64_t>() : -1;
  if (f.size() < file.size() || f.compare(f.size() - file.size(), file.size(), file) != 0 || l != line)
    return ::testing::AssertionFailure() << "innermost frame of " << function << " is " << frame.dump()
                                         << ", expected " << file << ":" << line;
  return ::testing::AssertionSuccess();
}

// Records build/samples/NAME once per test binary and checks the recording left the program's
// behaviour alone: same stdout and exit status as a direct run.
inline const Recorded& recordSampleUnchanged(const std::string& name, const std::vector<std::string>& args = {}) {
  const Recorded& rec = recordOnce(sample(name), args);
  static std::map<std::string, RunResult> direct;
  auto it = direct.find(name + joinArgs(args));
  if (it == direct.end()) {
    std::vector<std::string> argv = {sample(name)};
    argv.insert(argv.end(), args.begin(), args.end());
    it = direct.emplace(name + joinArgs(args), run(argv)).first;
  }
  EXPECT_EQ(rec.program.status, it->second.status) << name << " under memledger; stderr:\n" << rec.program.err;
  EXPECT_EQ(rec.program.out, it->second.out) << name << " under memledger";
  return rec;
}

// The leak list adds up to its totals, and every leak site whose innermost frame lies in the
// sample's own executable (module ending in "/<sample>") names one of `expected`: a sample leaks
// nothing but what its ground truth says. Sites of the C/C++ runtime (stdout's buffer,
// libstdc++'s emergency pool) are innermost in libc/libstdc++ and are left alone.
inline ::testing::AssertionResult leaksAccountedFor(const json& report, const std::string& sampleName,
                                                    std::initializer_list<std::string_view> expected) {
  const json& leaks = report["leaks"];
  int64_t count = 0, bytes = 0;
  for (const auto& site : leaks["sites"]) {
    count += site["count"].get<int64_t>();
    bytes += site["bytes"].get<int64_t>();
    const json& stack = site["stack"];
    if (stack.empty() || !stack[0].value("module", json()).is_string()) continue;
    if (!stack[0]["module"].get<std::string>().ends_with("/" + sampleName)) continue;
    bool named = false;
    for (auto fn : expected) named = named || stackHas(stack, fn);
    if (!named)
      return ::testing::AssertionFailure() << "unexpected leak site in " << sampleName << ":\n"
                                           << describeSites(json::array({site})) << "all sites:\n"
                                           << describeSites(leaks["sites"]);
  }
  if (count != leaks["count"].get<int64_t>() || bytes != leaks["bytes"].get<int64_t>())
    return ::testing::AssertionFailure() << "sites add up to " << count << " blocks / " << bytes
                                         << " bytes, totals say " << leaks["count"] << " / " << leaks["bytes"];
  return ::testing::AssertionSuccess();
}

}  // namespace memledger::test
