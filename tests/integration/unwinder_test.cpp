// The preload library's own unwinder (interpose/unwinder.h) against libunwind: with
// MEMLEDGER_UNWIND_CHECK=1 every captured stack is also taken by unw_backtrace and compared, and
// each process prints one line with the counts at exit. Not one stack may differ, on our hard
// cases (samples/unwind_shapes.c, built -O0 with frame pointers and -O2 without) and on real
// programs; and a recording made with MEMLEDGER_UNWIND=libunwind reports the same leaks.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "harness.h"
#include "site_expect.h"

using namespace memledger::test;

namespace {

struct CheckTotals {
  int processes = 0;
  int64_t compared = 0, differ = 0, reused = 0, fallbacks = 0, cached = 0;
};

// Stacks the own walker took are compared; the ones it handed to libunwind (a rule it cannot
// follow, or another thread computing rules right then: more of those on a loaded machine) are
// counted apart. Together they are every stack the program's allocations took.
CheckTotals checkLines(const std::string& err) {
  static const std::regex line(
      R"(memledger: unwind check: (\d+) stacks compared, (\d+) differ \((\d+) reused a known outer part, \d+ frames walked, (\d+) by libunwind alone, (\d+) whole from the trace cache\))");
  CheckTotals t;
  for (std::sregex_iterator it(err.begin(), err.end(), line), end; it != end; ++it) {
    ++t.processes;
    t.compared += std::stoll((*it)[1]);
    t.differ += std::stoll((*it)[2]);
    t.reused += std::stoll((*it)[3]);
    t.fallbacks += std::stoll((*it)[4]);
    t.cached += std::stoll((*it)[5]);
  }
  return t;
}

RunOptions checked(RunOptions options = {}) {
  options.env.emplace_back("MEMLEDGER_UNWIND_CHECK", "1");
  return options;
}

// count, bytes and the function names of each leak site, sorted: comparable across recordings.
// The thread library's DTV blocks are left out: their size follows the number of loaded modules
// with TLS, which libunwind (loaded for the check) changes.
std::vector<std::string> leakShapes(const json& report) {
  std::vector<std::string> out;
  for (const auto& site : report["leaks"]["sites"]) {
    if (stackHas(site["stack"], "allocate_dtv")) continue;
    std::string s = std::to_string(site["count"].get<int64_t>()) + " x " +
                    std::to_string(site["bytes"].get<int64_t>()) + " B:";
    for (const auto& f : site["stack"]) s += " " + (f["function"].is_string() ? f["function"].get<std::string>() : "?");
    out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class UnwindShapes : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(UnwindShapes, EveryStackEqualsLibunwindsAndTheLeaksAreExact) {
  Recorded own = record(sample(GetParam()), {}, checked());
  ASSERT_EQ(own.program.status, 0) << own.program.err;
  EXPECT_EQ(own.program.out, "unwind_shapes: 0x1\n");
  CheckTotals t = checkLines(own.program.err);
  EXPECT_EQ(t.processes, 1) << own.program.err;
  EXPECT_EQ(t.differ, 0) << own.program.err;
  // 4 x 500 + 1000 rounds of 4-5 allocations, each taken by the own walker or by libunwind.
  EXPECT_GT(t.compared + t.fallbacks, 12000) << own.program.err;
  EXPECT_GT(t.compared, 1000) << own.program.err;
  EXPECT_GT(t.reused, 0) << "no walk reused the last trace's outer part: " << own.program.err;
  EXPECT_GT(t.cached, 0) << "no stack came whole from the trace cache: " << own.program.err;

  json report = reportJson(own.db);
  const json& sites = report["leaks"]["sites"];
  // Three calls of path_a on three lines of main, two of path_b: one site each.
  auto a = sitesWith(sites, "path_a");
  ASSERT_EQ(a.size(), 3u) << describeSites(sites);
  for (const auto& s : a) {
    EXPECT_EQ(s["count"], 1);
    EXPECT_EQ(s["bytes"], 1000);
    EXPECT_EQ(innermost(s), "leaf");
  }
  auto b = sitesWith(sites, "path_b");
  ASSERT_EQ(b.size(), 2u) << describeSites(sites);
  for (const auto& s : b) EXPECT_EQ(s["bytes"], 2000);
  EXPECT_EQ(sumWith(sites, "on_signal", "bytes"), 777) << describeSites(sites);
  int64_t deepBytes = 0;
  for (const auto& s : sitesWith(sites, "deep")) {
    deepBytes += s["bytes"].get<int64_t>();
    if (s["bytes"] == 4000) {
      EXPECT_EQ(s["stack"].size(), 128u) << "150 levels, cut at a record's 128 frames";
    }
  }
  EXPECT_EQ(deepBytes, 9000) << describeSites(sites);

  Recorded lib = record(sample(GetParam()), {}, RunOptions{{{"MEMLEDGER_UNWIND", "libunwind"}}});
  ASSERT_EQ(lib.program.status, 0) << lib.program.err;
  EXPECT_EQ(leakShapes(report), leakShapes(reportJson(lib.db)));
}

INSTANTIATE_TEST_SUITE_P(Builds, UnwindShapes, ::testing::Values("unwind_shapes", "unwind_shapes_o2"));

TEST(UnwinderCheck, PythonStacksEqualLibunwinds) {
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  RunOptions options = checked();
  options.env.emplace_back("PYTHONMALLOC", "malloc");  // every object a real malloc
  Recorded rec = record(python, {"-c", "d = {str(i): (i, [i]) for i in range(100000)}\nprint(len(d))"}, options);
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, "100000\n");
  CheckTotals t = checkLines(rec.program.err);
  EXPECT_EQ(t.differ, 0) << rec.program.err;
  EXPECT_GT(t.compared, 300000) << rec.program.err;
}

TEST(UnwinderCheck, Sqlite3AndGxxStacksEqualLibunwinds) {
  RunResult which = run({"sh", "-c", "command -v sqlite3 && command -v g++"});
  if (which.status != 0) GTEST_SKIP() << "needs sqlite3 and g++ on PATH";
  std::istringstream paths(which.out);
  std::string sqlite3, gxx;
  std::getline(paths, sqlite3);
  std::getline(paths, gxx);
  RunOptions sql = checked();
  sql.stdinData =
      "CREATE TABLE t(x INTEGER, y TEXT);\n"
      "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20000)\n"
      "  INSERT INTO t SELECT i, 'row ' || i FROM c;\n"
      "CREATE INDEX ty ON t(y);\n"
      "SELECT count(*) FROM t;\n";
  Recorded s = record(sqlite3, {":memory:"}, sql);
  ASSERT_EQ(s.program.status, 0) << s.program.err;
  EXPECT_EQ(s.program.out, "20000\n");
  CheckTotals st = checkLines(s.program.err);
  EXPECT_EQ(st.differ, 0) << s.program.err;
  EXPECT_GT(st.compared, 1000) << s.program.err;
  // SQLite's allocations alternate between a few call paths: most come whole from the cache.
  EXPECT_GT(st.cached * 2, st.compared) << s.program.err;

  TempDir tmp;
  std::string src = tmp.file("hello.cpp");
  {
    std::ofstream(src) << "#include <map>\n#include <string>\nint main() { std::map<std::string, int> m; "
                          "m[\"a\"] = 1; return m.size() == 1 ? 0 : 1; }\n";
  }
  Recorded g = record(gxx, {"-O2", "-c", src, "-o", tmp.file("hello.o")}, checked());
  ASSERT_EQ(g.program.status, 0) << g.program.err;
  CheckTotals gt = checkLines(g.program.err);
  EXPECT_GE(gt.processes, 3) << g.program.err;  // g++, cc1plus, as
  EXPECT_EQ(gt.differ, 0) << g.program.err;
  EXPECT_GT(gt.compared, 10000) << g.program.err;
}
