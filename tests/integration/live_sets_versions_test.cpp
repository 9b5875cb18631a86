// Schema 8 packed the two live-set tables (peak_site_lists, python_finalize_lists); readers of 8
// still read the row tables of versions 5-7. A real recording rewritten in the old form (rows as
// the version 7 recorder wrote them, or version 6's without python_finalize_sites.t_ns) gives the
// same report, leaks and peak as the packed original, with and without a time filter.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "analyzer/live_sets.h"
#include "harness.h"

using namespace memledger::test;
namespace live = memledger::analyzer::detail;

namespace {

void execOk(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << " in " << sql.substr(0, 200);
  sqlite3_free(err);
}

// A copy of the recording `db` with its packed live sets as the row tables of version 7 (times:
// with python_finalize_sites.t_ns) or 6 (without: one row per site, as the first version 6
// recorders wrote).
std::string downgraded(const std::string& db, bool times) {
  const std::string out = db + (times ? ".v7.db" : ".v6.db");
  std::filesystem::copy_file(plainRecording(db), out, std::filesystem::copy_options::overwrite_existing);
  auto rec = memledger::analyzer::Recording::open(db);
  EXPECT_EQ(rec.info().schema_version, 8);
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open(out.c_str(), &h), SQLITE_OK);
  execOk(h, "BEGIN");
  execOk(h, "CREATE TABLE peak_sites (space TEXT NOT NULL, image_id INTEGER NOT NULL, stack_id INTEGER NOT NULL, "
            "kind INTEGER NOT NULL, count INTEGER NOT NULL, bytes INTEGER NOT NULL)");
  execOk(h, std::string("CREATE TABLE python_finalize_sites (image_id INTEGER NOT NULL, stack_id INTEGER NOT NULL, "
                        "kind TEXT NOT NULL, count INTEGER NOT NULL, bytes INTEGER NOT NULL") +
                (times ? ", t_ns INTEGER)" : ")"));
  std::vector<std::string> spaces;
  {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(h, "SELECT name FROM spaces WHERE image_id = 0", -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) spaces.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
  }
  for (const std::string& space : spaces)
    for (const live::PeakSite& s : live::peakSites(rec, space))
      execOk(h, "INSERT INTO peak_sites VALUES ('" + space + "'," + std::to_string(s.image_id) + "," +
                    std::to_string(s.stack_id) + "," + std::to_string(s.kind) + "," + std::to_string(s.count) + "," +
                    std::to_string(s.bytes) + ")");
  std::map<std::tuple<int64_t, int64_t, std::string>, std::pair<int64_t, int64_t>> perSite;
  live::forEachFinalizeSite(rec, std::nullopt, [&](const live::FinalizeSite& s) {
    if (times) {
      execOk(h, "INSERT INTO python_finalize_sites VALUES (" + std::to_string(s.image_id) + "," +
                    std::to_string(s.stack_id) + ",'" + std::string(s.kind_name) + "'," + std::to_string(s.count) +
                    "," + std::to_string(s.bytes) + "," + std::to_string(*s.t_ns) + ")");
      return;
    }
    auto& v = perSite[{s.image_id, s.stack_id, std::string(s.kind_name)}];
    v.first += s.count;
    v.second += s.bytes;
  });
  for (const auto& [key, v] : perSite)
    execOk(h, "INSERT INTO python_finalize_sites VALUES (" + std::to_string(std::get<0>(key)) + "," +
                  std::to_string(std::get<1>(key)) + ",'" + std::get<2>(key) + "'," + std::to_string(v.first) + "," +
                  std::to_string(v.second) + ")");
  execOk(h, "DROP TABLE peak_site_lists; DROP TABLE python_finalize_lists;");
  execOk(h, times ? "PRAGMA user_version = 7" : "PRAGMA user_version = 6");
  execOk(h, std::string("UPDATE meta SET value = '") + (times ? "7" : "6") + "' WHERE key = 'schema_version'");
  execOk(h, "COMMIT");
  sqlite3_close(h);
  return out;
}

// `memledger COMMAND FILE --json ARGS`, the file's name in it replaced by `as`, its schema version by N.
std::string answer(const std::string& command, const std::string& file, const std::string& as,
                   const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv = {memledgerBinary(), command, file, "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv);
  EXPECT_EQ(r.status, 0) << joinArgs(argv) << ": " << r.err;
  std::string out = r.out;
  for (size_t at = 0; (at = out.find(file, at)) != std::string::npos; at += as.size()) out.replace(at, file.size(), as);
  // The one thing allowed to differ: the version the file says it is.
  const std::string key = "\"schema_version\": ";
  if (size_t at = out.find(key); at != std::string::npos) out.replace(at + key.size(), 1, "N");
  return out;
}

void expectSameAnswers(const Recorded& rec, const std::vector<std::vector<std::string>>& filters, bool python = false) {
  for (bool times : {true, false}) {
    std::string old = downgraded(rec.db, times);
    EXPECT_GT(sqlInt(old, "SELECT count(*) FROM peak_sites"), 0);
    if (python) {
      EXPECT_GT(sqlInt(old, "SELECT count(*) FROM python_finalize_sites"), 0);
    }
    for (const auto& args : filters) {
      // A version 6 file without times answers a time filter by another rule (blocks live at exit).
      bool timed = std::find(args.begin(), args.end(), "--time") != args.end();
      if (timed && !times) continue;
      for (const char* command : {"report", "leaks", "peak"}) {
        if (std::string(command) == "report" && !args.empty()) continue;  // report takes no filter
        EXPECT_EQ(answer(command, old, rec.db, args), answer(command, rec.db, rec.db, args))
            << command << " " << joinArgs(args) << " on " << (times ? "version 7" : "version 6");
      }
    }
  }
}

}  // namespace

// Three processes live at once (samples/overlap_tree.c): the heap's simultaneous peak lists sites
// of several images.
TEST(LiveSetVersions, SeveralProcessesPeakReadsTheSameFromRows) {
  const Recorded& rec = recordOnce(sample("overlap_tree"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  expectSameAnswers(rec, {{}, {"--top", "3"}, {"--kind", "malloc"}, {"--by-process"}});
}

// Device spaces' peaks (samples/collector_events.c): report's devices list their live sets.
TEST(LiveSetVersions, DevicePeakReadsTheSameFromRows) {
  const Recorded& rec = recordOnce(sample("collector_events"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  expectSameAnswers(rec, {{}});
}

// A Python script's leaks as of finalization (samples/python/leaky.py), whole run and by time.
TEST(LiveSetVersions, PythonFinalizationLeaksReadTheSameFromRows) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded rec = record("/usr/bin/python3", {sourceDir() + "/samples/python/leaky.py"});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  expectSameAnswers(rec, {{}, {"--top", "100000"}, {"--time", "0:50ms"}, {"--time", "50ms:"}, {"--time", "20ms:80ms"}, {"--kind", "malloc"}},
                    true);
}
