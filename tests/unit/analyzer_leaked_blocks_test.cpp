// What a time range's leaks are summed from (analyzer/leaked_blocks.h) and the per-frame leak
// origin classification (analyzer/suppressions.h), on real recordings of sample programs: each
// against the SQL and the whole-stack classification it replaces.
#include <sqlite3.h>

#include <filesystem>
#include <optional>
#include <tuple>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer/leaked_blocks.h"
#include "analyzer/suppressions.h"
#include "analyzer_sample_recording.h"

using namespace memledger::analyzer;

namespace {

std::string recordingOf(const std::string& sample, const std::string& args = "") {
  std::string why;
  std::string path = memledger::testing::sampleRecording(sample, &why, false, args);
  if (path.empty()) ADD_FAILURE() << why;
  return path;
}

using Row = std::tuple<int64_t, std::string, int64_t, int64_t, int64_t>;  // stack, kind, image, count, bytes

// The leaked sites of [from, to] as the SQL that LeakedBlocks replaces gives them, in its order.
std::vector<Row> sqlSites(const Recording& rec, int64_t from, int64_t to) {
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(rec.db(),
                               "SELECT stack_id, kind, image_id, count(*), sum(size) FROM allocations WHERE t_free IS "
                               "NULL AND t_alloc >= ? AND t_alloc <= ? GROUP BY stack_id, kind, image_id",
                               -1, &q, nullptr),
            SQLITE_OK);
  sqlite3_bind_int64(q, 1, from);
  sqlite3_bind_int64(q, 2, to);
  std::vector<Row> out;
  while (sqlite3_step(q) == SQLITE_ROW)
    out.emplace_back(sqlite3_column_int64(q, 0), reinterpret_cast<const char*>(sqlite3_column_text(q, 1)),
                     sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 3), sqlite3_column_int64(q, 4));
  sqlite3_finalize(q);
  return out;
}

std::vector<Row> memorySites(const detail::LeakedBlocks& blocks, int64_t from, int64_t to) {
  std::vector<Row> out;
  for (const detail::LeakedSite& s : detail::leakedSites(blocks.range(from, to), [](const auto&) { return true; }))
    out.emplace_back(s.stack, blocks.kinds()[s.kind], s.image, s.count, s.bytes);
  return out;
}

// Every range of a sixth of the run, and the whole run: the same sites in the same order.
void expectSameAsSql(const std::string& path) {
  Recording rec = Recording::open(path);
  const detail::LeakedBlocks& blocks = rec.leakedBlocks();
  ASSERT_TRUE(blocks.available());
  const int64_t end = rec.info().duration_ns;
  EXPECT_EQ(memorySites(blocks, INT64_MIN, INT64_MAX), sqlSites(rec, INT64_MIN, INT64_MAX));
  EXPECT_FALSE(sqlSites(rec, INT64_MIN, INT64_MAX).empty());
  for (int i = 0; i < 6; ++i) {
    const int64_t from = end * i / 6, to = end * (i + 2) / 6;
    EXPECT_EQ(memorySites(blocks, from, to), sqlSites(rec, from, to)) << from << ":" << to;
  }
}

}  // namespace

// fork_loop's children each leak (several images); leak_kinds' blocks have leak kinds.
TEST(AnalyzerLeakedBlocks, SitesOfARangeAsSql) {
  for (const std::string& path : {recordingOf("fork_loop"), recordingOf("leak_kinds", "all")}) {
    if (path.empty()) continue;
    SCOPED_TRACE(path);
    expectSameAsSql(path);
  }
}

// A range over the whole run, answered from the blocks in memory, gives the leak kinds the
// whole-run answer reads through SQL: leak_kinds' documented blocks among them.
TEST(AnalyzerLeakedBlocks, LeakKindsOfARange) {
  std::string path = recordingOf("leak_kinds", "all");
  if (path.empty()) return;
  Recording rec = Recording::open(path);
  Leaks whole = leaks(rec);
  Filter all;
  all.t_from_ns = 0;
  all.t_to_ns = INT64_MAX;
  prepareRanges(rec);
  Leaks ranged = leaks(rec, all);
  ASSERT_TRUE(whole.scanned);
  EXPECT_EQ(ranged.count, whole.count);
  EXPECT_EQ(ranged.bytes, whole.bytes);
  for (int k = 0; k < kLeakKindSlots; ++k) {
    EXPECT_EQ(ranged.kinds[k].count, whole.kinds[k].count) << leakKindName(k);
    EXPECT_EQ(ranged.kinds[k].bytes, whole.kinds[k].bytes) << leakKindName(k);
  }
  // samples/leak_kinds.c "all": definite 100 + 32 + 48, possible 200, at least.
  EXPECT_GE(ranged.kinds[kDefinite].bytes, 180);
  EXPECT_GE(ranged.kinds[kPossible].bytes, 200);
  ASSERT_EQ(ranged.sites.size(), whole.sites.size());
  for (size_t i = 0; i < ranged.sites.size(); ++i) {
    EXPECT_EQ(ranged.sites[i].stack_id, whole.sites[i].stack_id);
    EXPECT_EQ(ranged.sites[i].origin, whole.sites[i].origin);
    for (int k = 0; k < kLeakKindSlots; ++k) EXPECT_EQ(ranged.sites[i].leak_kinds[k].bytes, whole.sites[i].leak_kinds[k].bytes);
  }
}

// Classifying a stack frame by frame (each frame's facts once) gives the answer of matching every
// built-in entry against the whole stack (SuppressionList::match(), as `check` does) for every
// leak site; threads_leak and leak_kinds have runtime leaks (glibc's TLS, stdio, the loader)
// beside the program's.
TEST(AnalyzerLeakedBlocks, OriginsFrameByFrame) {
  for (const std::string& path : {recordingOf("threads_leak"), recordingOf("leak_kinds", "all")}) {
    if (path.empty()) continue;
    SCOPED_TRACE(path);
    Recording rec = Recording::open(path);
    Leaks l = leaks(rec);
    SuppressionList defaults;
    defaults.addDefaults();
    int runtime = 0;
    for (const SiteAmount& s : l.sites) {
      std::vector<FrameOrigin> frames;
      for (const Frame& f : s.stack) frames.push_back(frameOrigin(f));
      std::optional<RuntimeClass> byFrames = runtimeClassOf(frames, s.kind);
      const Suppression* matched = defaults.match(s.stack, s.kind);
      ASSERT_EQ(byFrames.has_value(), matched != nullptr);
      if (!matched) {
        EXPECT_EQ(s.origin, kOriginProgram);
        continue;
      }
      if (!matched->rule) {
        EXPECT_EQ(byFrames->pattern, matched->pattern);
      }
      EXPECT_EQ(s.origin, byFrames->origin);  // what leaks() attached
      EXPECT_EQ(s.origin_reason, byFrames->reason);
      EXPECT_NE(s.origin, kOriginProgram);
      ++runtime;
    }
    EXPECT_GT(runtime, 0);
  }
}

// leaks() makes SiteAmounts of the listed sites only (one process: its rows are cut first): with
// a `top`, the list is the first sites of the whole list, with the same amounts, Python ownership,
// origins and leak kinds, and the totals are over every site. A CPython run (its import machinery:
// hundreds of sites, the Python rule), fork_loop (several processes: merged, then cut) and
// leak_kinds (classified blocks), for the whole run and a range.
TEST(AnalyzerLeakedBlocks, TopSitesAreTheWholeListsFirst) {
  std::vector<std::string> paths = {recordingOf("fork_loop"), recordingOf("leak_kinds", "all")};
  const std::string cli = memledger::testing::recordBuild() + "/bin/memledger";
  const std::string python = memledger::testing::tempPath("leaks-top-deep_paths.db");
  const std::string cmd = "'" + cli + "' record --no-compress --force -o '" + python + "' -- /usr/bin/python3 '" +
                          MEMLEDGER_SOURCE_DIR + "/samples/python/deep_paths.py' 7 >/dev/null 2>&1";
  if (std::filesystem::exists("/usr/bin/python3") && std::system(cmd.c_str()) == 0) paths.push_back(python);
  else ADD_FAILURE() << "`" << cmd << "` failed";
  for (const std::string& path : paths) {
    if (path.empty()) continue;
    SCOPED_TRACE(path);
    Recording rec = Recording::open(path);
    const int64_t end = rec.info().duration_ns;
    for (auto [from, to] : {std::pair<std::optional<int64_t>, std::optional<int64_t>>{},
                            std::pair<std::optional<int64_t>, std::optional<int64_t>>{end / 4, end * 3 / 4}}) {
      Filter f;
      f.t_from_ns = from;
      f.t_to_ns = to;
      const Leaks all = leaks(rec, f);
      if (path == python && !from) {
        EXPECT_GT(all.sites.size(), 100u);
      }
      f.top = std::max<size_t>(1, all.sites.size() / 3);
      const Leaks cut = leaks(rec, f);
      EXPECT_EQ(cut.sites.size(), std::min(*f.top, all.sites.size()));
      EXPECT_EQ(std::tie(cut.count, cut.bytes, cut.pool_count, cut.pool_bytes, cut.site_count, cut.pool_site_count),
                std::tie(all.count, all.bytes, all.pool_count, all.pool_bytes, all.site_count, all.pool_site_count));
      for (int k = 0; k < kLeakKindSlots; ++k)
        EXPECT_EQ(std::tie(cut.kinds[k].count, cut.kinds[k].bytes), std::tie(all.kinds[k].count, all.kinds[k].bytes));
      for (size_t i = 0; i < cut.sites.size(); ++i) {
        const SiteAmount &a = cut.sites[i], &b = all.sites[i];
        EXPECT_EQ(std::tie(a.stack_id, a.kind, a.image_id, a.pid, a.count, a.bytes, a.python_owned, a.origin, a.origin_reason),
                  std::tie(b.stack_id, b.kind, b.image_id, b.pid, b.count, b.bytes, b.python_owned, b.origin, b.origin_reason))
            << "site " << i;
        EXPECT_EQ(a.stack.size(), b.stack.size());
        EXPECT_EQ(a.processes.size(), b.processes.size());
        for (int k = 0; k < kLeakKindSlots; ++k)
          EXPECT_EQ(std::tie(a.leak_kinds[k].count, a.leak_kinds[k].bytes), std::tie(b.leak_kinds[k].count, b.leak_kinds[k].bytes));
      }
    }
  }
}
