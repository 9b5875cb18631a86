// Real, unmodified programs recorded end to end: CPython, the sqlite3 shell and a g++ compile
// (which forks cc1plus, as and ld). Their output must not change under memledger.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "harness.h"
#include "site_expect.h"

using namespace memledger::test;

namespace {

bool executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string onPath(const std::string& name) {
  RunResult r = run({"sh", "-c", "command -v " + name});
  if (r.status != 0) return "";
  std::string path = r.out;
  while (!path.empty() && path.back() == '\n') path.pop_back();
  return path;
}

}  // namespace

TEST(RealPrograms, PythonBuildsADictUnchanged) {
  const std::string python = "/usr/bin/python3";
  if (!executable(python)) GTEST_SKIP() << "no " << python;
  const std::vector<std::string> args = {"-c", "d = {i: str(i) for i in range(200000)}\nprint(len(d))"};
  std::vector<std::string> direct = {python};
  direct.insert(direct.end(), args.begin(), args.end());
  RunResult plain = run(direct);
  ASSERT_EQ(plain.status, 0) << plain.err;

  Recorded rec = record(python, args);
  EXPECT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, "200000\n");
  EXPECT_EQ(rec.program.out, plain.out);
  json report = reportJson(rec.db);
  EXPECT_GT(report["totals"]["allocations"].get<int64_t>(), 0);
  ASSERT_FALSE(report["processes"].empty());
  EXPECT_NE(report["processes"][0]["command"].get<std::string>().find("python3"), std::string::npos)
      << report["processes"][0].dump();
  EXPECT_EQ(report["processes"][0]["exit_code"], 0);
}

TEST(RealPrograms, Sqlite3ShellCountsItsRowsUnchanged) {
  std::string sqlite = onPath("sqlite3");
  if (sqlite.empty()) GTEST_SKIP() << "no sqlite3 shell on PATH";
  RunOptions options;
  options.stdinData =
      "CREATE TABLE t(x INTEGER, y TEXT);\n"
      "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10000)\n"
      "  INSERT INTO t SELECT i, 'row ' || i FROM c;\n"
      "SELECT count(*) FROM t;\n";
  RunResult plain = run({sqlite, ":memory:"}, options);
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(plain.out, "10000\n");

  Recorded rec = record(sqlite, {":memory:"}, options);
  EXPECT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, plain.out);
  json report = reportJson(rec.db);
  // 10,000 rows of text are at least 10,000 allocations' worth of work for SQLite's allocator.
  EXPECT_GT(report["totals"]["allocations"].get<int64_t>(), 1000);
  ASSERT_EQ(report["processes"].size(), 1u);
  EXPECT_EQ(report["processes"][0]["exit_code"], 0);
}

TEST(RealPrograms, GxxCompileFollowsItsChildrenAndBuildsAWorkingBinary) {
  std::string gxx = onPath("g++");
  if (gxx.empty()) GTEST_SKIP() << "no g++ on PATH";
  TempDir dir;
  {
    std::ofstream src(dir.file("hello.cpp"));
    src << "#include <cstdio>\n#include <string>\n"
           "int main() { std::string s = \"compiled under memledger\"; std::puts(s.c_str()); return 7; }\n";
  }
  Recorded rec = record(gxx, {"-O0", "-o", dir.file("hello"), dir.file("hello.cpp")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  RunResult hello = run({dir.file("hello")});
  EXPECT_EQ(hello.status, 7);
  EXPECT_EQ(hello.out, "compiled under memledger\n");

  json report = reportJson(rec.db);
  const json& procs = report["processes"];
  // g++ itself, cc1plus, as, collect2/ld: every one a row.
  EXPECT_GE(procs.size(), 3u) << procs.dump(1);
  bool cc1plus = false;
  for (const auto& p : procs) cc1plus = cc1plus || p["command"].get<std::string>().find("cc1plus") != std::string::npos;
  EXPECT_TRUE(cc1plus) << procs.dump(1);
  EXPECT_NE(procs[0]["command"].get<std::string>().find("g++"), std::string::npos) << procs[0].dump();
  EXPECT_EQ(procs[0]["exit_code"], 0);
  EXPECT_GT(report["totals"]["allocations"].get<int64_t>(), 1000);
}
