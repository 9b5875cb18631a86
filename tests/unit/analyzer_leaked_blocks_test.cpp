// What a time range's leaks are summed from (analyzer/leaked_blocks.h) and the per-frame leak
// origin classification (analyzer/suppressions.h), on real recordings of sample programs: each
// against the SQL and the whole-stack classification it replaces.
#include <sqlite3.h>

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
