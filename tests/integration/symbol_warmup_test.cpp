// Symbols looked up while the program runs (recorder/symbol_warmer.h) must be exactly those a cold
// lookup at the end gives. With MEMLEDGER_SYMBOLIZE_CHECK=1 the recorder lets its warm-up thread
// look up every ip recorded (however little CPU it got while the program ran), then answers every
// lookup of the final job from the warmed source and again from a fresh one, and prints the
// counts: not one may differ. Real programs: CPython (libc with its
// separate debug file, the interpreter, extension modules) and the sqlite3 shell.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <tuple>

#include "harness.h"

using namespace memledger::test;

namespace {

struct CheckLine {
  bool found = false;
  int64_t compared = 0, warmed = 0, batches = 0, differ = 0;
};

CheckLine checkLine(const std::string& err) {
  static const std::regex line(
      R"(memledger: symbolize check: (\d+) lookups compared, (\d+) ips warmed in (\d+) batches, (\d+) differ)");
  CheckLine c;
  std::smatch m;
  if (!std::regex_search(err, m, line)) return c;
  c.found = true;
  c.compared = std::stoll(m[1]);
  c.warmed = std::stoll(m[2]);
  c.batches = std::stoll(m[3]);
  c.differ = std::stoll(m[4]);
  return c;
}

// Allocates from the interpreter, a C extension (json's scanner) and libc, then stays alive long
// enough for the recorder's loop to hand the ips to the warm-up thread.
const char* kPythonScript =
    "import json, time\n"
    "data = [json.loads('{\"k\": [1, 2, \"%d\"]}' % i) for i in range(2000)]\n"
    "time.sleep(0.4)\n"
    "print(len(data))\n";

RunOptions withEnv(std::vector<std::pair<std::string, std::string>> env) {
  RunOptions o;
  o.env = std::move(env);
  return o;
}

TEST(SymbolWarmup, PythonWarmedFramesEqualColdLookups) {
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  auto rec = record(python, {"-c", kPythonScript}, withEnv({{"MEMLEDGER_SYMBOLIZE_CHECK", "1"}}));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  CheckLine c = checkLine(rec.program.err);
  ASSERT_TRUE(c.found) << rec.program.err;
  EXPECT_EQ(c.differ, 0) << rec.program.err;
  EXPECT_GT(c.compared, 100);
  EXPECT_GE(c.batches, 1);
  EXPECT_GT(c.warmed, 100) << "the warm-up looked nothing up";
  EXPECT_GT(sqlInt(rec.db, "SELECT count(*) FROM frames WHERE function IS NOT NULL"), 100);
}

TEST(SymbolWarmup, SqliteShellWarmedFramesEqualColdLookups) {
  std::string sqlite;
  for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/bin/"})
    if (access((std::string(dir) + "sqlite3").c_str(), X_OK) == 0) {
      sqlite = std::string(dir) + "sqlite3";
      break;
    }
  if (sqlite.empty()) GTEST_SKIP() << "no sqlite3 shell";
  // sqlite3 runs the statements, then the shell's own `.shell sleep` keeps it alive a moment.
  auto rec = record(sqlite, {":memory:",
                             "CREATE TABLE t(a, b); "
                             "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) "
                             "INSERT INTO t SELECT x, printf('row %d', x) FROM c; "
                             "CREATE INDEX ti ON t(b); SELECT count(*) FROM t;",
                             ".shell sleep 0.3"},
                    withEnv({{"MEMLEDGER_SYMBOLIZE_CHECK", "1"}}));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  CheckLine c = checkLine(rec.program.err);
  ASSERT_TRUE(c.found) << rec.program.err;
  EXPECT_EQ(c.differ, 0) << rec.program.err;
  EXPECT_GT(c.compared, 10);
  EXPECT_GT(c.warmed, 10) << "the warm-up looked nothing up";
}

// Frames of one recording keyed by what symbolization depends on: the module's path and the
// module-relative address (ASLR moves everything else between runs).
using FrameKey = std::pair<std::string, int64_t>;
std::map<FrameKey, std::vector<std::tuple<std::string, std::string, int64_t>>> framesByModuleAddress(
    const std::string& dbFile) {
  std::map<FrameKey, std::vector<std::tuple<std::string, std::string, int64_t>>> out;
  sqlite3* h = nullptr;
  std::string db = plainRecording(dbFile);
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return out;
  sqlite3_stmt* st = nullptr;
  const char* sql =
      "SELECT m.path, i.address - m.bias, f.function, f.file, f.line, i.id FROM frames f "
      "JOIN ips i ON i.id = f.ip_id JOIN modules m ON m.id = i.module_id "
      "ORDER BY i.id, f.depth";
  if (sqlite3_prepare_v2(h, sql, -1, &st, nullptr) == SQLITE_OK) {
    std::map<FrameKey, int64_t> ipOf;  // several ips (images) may share a key: the first one's frames
    while (sqlite3_step(st) == SQLITE_ROW) {
      auto text = [&](int i) {
        const unsigned char* t = sqlite3_column_text(st, i);
        return t ? std::string(reinterpret_cast<const char*>(t)) : std::string("<null>");
      };
      FrameKey key{text(0), sqlite3_column_int64(st, 1)};
      const int64_t ip = sqlite3_column_int64(st, 5);
      if (ipOf.try_emplace(key, ip).first->second != ip) continue;
      out[key].emplace_back(text(2), text(3), sqlite3_column_int64(st, 4));
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

// The warm-up off (MEMLEDGER_SYMBOL_WARM=0) and on: every (module, address) both runs recorded
// has the same frames.
TEST(SymbolWarmup, WarmUpOnAndOffGiveTheSameFrames) {
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  auto cold = record(python, {"-c", kPythonScript}, withEnv({{"MEMLEDGER_SYMBOL_WARM", "0"}}));
  auto warm = record(python, {"-c", kPythonScript});
  ASSERT_EQ(cold.program.status, 0) << cold.program.err;
  ASSERT_EQ(warm.program.status, 0) << warm.program.err;
  auto a = framesByModuleAddress(cold.db), b = framesByModuleAddress(warm.db);
  ASSERT_GT(a.size(), 100u);
  size_t common = 0, differ = 0;
  for (const auto& [key, frames] : a) {
    auto it = b.find(key);
    if (it == b.end()) continue;
    ++common;
    if (frames != it->second && differ++ < 5) ADD_FAILURE() << key.first << "+" << key.second << " differs";
  }
  EXPECT_GT(common, a.size() / 2) << "the two runs share too few addresses to compare";
  EXPECT_EQ(differ, 0u);
}

}  // namespace
