// detail::forEachSite (analyzer/sql.h): every site's totals decoded straight from the packed
// site_totals rows, without SQLite's virtual table. On a real recording of samples/leak_chains
// (ground truth in its header: leak_malloc 3 x 1000 B, leak_calloc 2 x 1000 B, leak_realloc one
// block of 300 B, no_leak nothing) it gives exactly what `SELECT ... FROM sites` gives, entry by
// entry and in the same order, and the exact leaks of each function; the activity's sites
// (Recording::activitySites()) are made once and hold every site of a known kind. siteRows()
// without a filter (decoded and sorted here, not by SQLite) lists what its query lists, in the
// same order, on that run and on samples/fork_tree's tree of processes.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer/site_activity.h"
#include "analyzer/sql.h"
#include "analyzer_fixture.h"
#include "analyzer_sample_recording.h"

using namespace memledger::analyzer;

namespace {

std::vector<detail::SiteEntry> viaSql(const Recording& rec) {
#define MEMLEDGER_COUNTER_COLUMN(name) ", " #name
  detail::Statement q(rec, "SELECT stack_id, kind, image_id" MEMLEDGER_SITE_COUNTERS(MEMLEDGER_COUNTER_COLUMN) ", account FROM sites");
#undef MEMLEDGER_COUNTER_COLUMN
  std::vector<detail::SiteEntry> out;
  while (q.step()) {
    detail::SiteEntry e;
    e.stack_id = q.i64(0);
    const memledger::kinds::KindInfo* k = memledger::kinds::byName(q.text(1));
    e.kind = k ? k->code : 255;
    e.image_id = q.i64(2);
    int column = 3;
#define MEMLEDGER_READ(name) e.name = q.i64(column++);
    MEMLEDGER_SITE_COUNTERS(MEMLEDGER_READ)
#undef MEMLEDGER_READ
    e.account = static_cast<uint64_t>(q.i64(column));
    out.push_back(e);
  }
  return out;
}

TEST(SiteScan, DecodesEverySiteAsTheSitesTableReadsIt) {
  std::string why;
  std::string path = memledger::testing::sampleRecording("leak_chains", &why);
  if (path.empty()) GTEST_SKIP() << why;
  Recording rec = Recording::open(path);
  ASSERT_GE(rec.info().schema_version, 4);

  std::vector<detail::SiteEntry> scanned;
  detail::forEachSite(rec, [&](const detail::SiteEntry& e) { scanned.push_back(e); });
  const std::vector<detail::SiteEntry> expected = viaSql(rec);
  ASSERT_EQ(scanned.size(), expected.size());
  ASSERT_GT(scanned.size(), 4u);
  int64_t allocations = 0;
  for (size_t i = 0; i < scanned.size(); ++i) {
    const detail::SiteEntry &a = scanned[i], &b = expected[i];
    EXPECT_EQ(a.image_id, b.image_id) << i;
    EXPECT_EQ(a.stack_id, b.stack_id) << i;
    EXPECT_EQ(a.kind, b.kind) << i;
    EXPECT_EQ(a.account, b.account) << i;
#define MEMLEDGER_SAME(name) EXPECT_EQ(a.name, b.name) << #name << " of entry " << i;
    MEMLEDGER_SITE_COUNTERS(MEMLEDGER_SAME)
#undef MEMLEDGER_SAME
    allocations += a.alloc_count;
  }
  // totals() sums the same entries (no pool kinds in this run).
  EXPECT_EQ(totals(rec, {}).allocations, allocations);

  // The sample's ground truth, per function that made the leaked blocks.
  std::map<std::string, std::pair<int64_t, int64_t>> leaked;  // function -> (blocks, bytes)
  for (const detail::SiteEntry& e : scanned) {
    if (e.leak_count == 0) continue;
    const Frame* f = detail::namedFrame(rec.stack(e.stack_id));
    for (const Frame& frame : rec.stack(e.stack_id))
      if (frame.function && frame.function->rfind("leak_", 0) == 0) {
        f = &frame;
        break;
      }
    if (!f || !f->function) continue;
    leaked[*f->function].first += e.leak_count;
    leaked[*f->function].second += e.leak_bytes;
  }
  EXPECT_EQ(leaked["leak_malloc"], std::make_pair(int64_t{3}, int64_t{3000}));
  EXPECT_EQ(leaked["leak_calloc"], std::make_pair(int64_t{2}, int64_t{2000}));
  EXPECT_EQ(leaked["leak_realloc"], std::make_pair(int64_t{1}, int64_t{300}));
  EXPECT_EQ(leaked.count("no_leak"), 0u);

  // leaks() lists the same sites the scan finds leaking, with the same totals.
  int64_t blocks = 0, bytes = 0;
  for (const detail::SiteEntry& e : scanned) {
    blocks += e.leak_count;
    bytes += e.leak_bytes;
  }
  Leaks l = leaks(rec, {});
  EXPECT_EQ(l.count + l.pool_count, blocks);
  EXPECT_EQ(l.bytes + l.pool_bytes, bytes);

  // The activity's sites: once per recording, every site of a known kind (no two accounts here).
  const detail::ActivitySites& sites = rec.activitySites();
  EXPECT_EQ(&sites, &rec.activitySites());
  EXPECT_EQ(sites.all().size(), scanned.size());
  for (const detail::SiteEntry& e : scanned) {
    int32_t i = sites.find(e.image_id, e.stack_id, e.kind);
    ASSERT_GE(i, 0);
    EXPECT_TRUE(sites.all()[size_t(i)].active);
    EXPECT_EQ(sites.all()[size_t(i)].stack_id, e.stack_id);
    EXPECT_EQ(sites.all()[size_t(i)].leak_bytes, e.leak_bytes);
    EXPECT_EQ(sites.all()[size_t(i)].peak_bytes, e.peak_bytes);
    // The one table of sites: the tree index reads its amounts and sizes from it too.
    EXPECT_EQ(sites.all()[size_t(i)].alloc_bytes, e.alloc_bytes);
    EXPECT_EQ(sites.all()[size_t(i)].alloc_count, e.alloc_count);
    EXPECT_EQ(sites.all()[size_t(i)].temp_count, e.temp_count);
    EXPECT_EQ(sites.all()[size_t(i)].min_size, e.min_size);
    EXPECT_EQ(sites.all()[size_t(i)].max_size, e.max_size);
    ASSERT_LT(size_t(sites.all()[size_t(i)].space_id), sites.spaces().size());
    EXPECT_FALSE(sites.spaces()[size_t(sites.all()[size_t(i)].space_id)].empty());
  }
  // Its kept activity replays what the file holds: every allocation, once.
  int64_t replayed = 0;
  EXPECT_TRUE(sites.replay(rec, [&](int64_t, int64_t, int32_t i, const detail::SiteActivity& e) {
    EXPECT_GE(i, 0);
    replayed += e.allocs;
  }));
  EXPECT_EQ(replayed, allocations);
}

TEST(SiteScan, SiteRowsWithoutAFilterListAsTheQueryDoes) {
  for (const char* sample : {"leak_chains", "fork_tree"}) {
    std::string why;
    std::string path = memledger::testing::sampleRecording(sample, &why);
    if (path.empty()) GTEST_SKIP() << why;
    Recording rec = Recording::open(path);
    ASSERT_GE(rec.info().schema_version, 4);
    const std::vector<Site> decoded = detail::siteRows(rec, {});
    const std::vector<Site> queried = detail::siteRows(rec, {}, "1");  // a condition: SQLite lists them
    ASSERT_EQ(decoded.size(), queried.size()) << sample;
    ASSERT_GT(decoded.size(), 3u) << sample;
    std::map<int64_t, int> images;
    for (size_t i = 0; i < decoded.size(); ++i) {
      const Site &a = decoded[i], &b = queried[i];
      EXPECT_EQ(a.stack_id, b.stack_id) << sample << " " << i;
      EXPECT_EQ(a.kind, b.kind) << sample << " " << i;
      EXPECT_EQ(a.image_id, b.image_id) << sample << " " << i;
      EXPECT_EQ(a.pid, b.pid) << sample << " " << i;
      EXPECT_EQ(a.account, b.account) << sample << " " << i;
      EXPECT_EQ(a.space, b.space) << sample << " " << i;
#define MEMLEDGER_SAME(name) EXPECT_EQ(a.name, b.name) << #name << " of " << sample << " " << i;
      MEMLEDGER_SITE_COUNTERS(MEMLEDGER_SAME)
#undef MEMLEDGER_SAME
      if (i) {
        EXPECT_GE(decoded[i - 1].alloc_bytes, a.alloc_bytes) << sample << " " << i;
      }
      ++images[a.image_id];
    }
    if (std::string(sample) == "fork_tree") {
      EXPECT_GT(images.size(), 1u);
    }
  }
}

}  // namespace

// The kept activity holds an entry in 20 bytes (16-bit counts, 32-bit amounts) and one that does
// not fit whole beside it: samples/temp_storm's 1,000,000 malloc(48)/free pairs at one site, in
// one 100 s bucket, replay as 1,000,000 allocations, frees and temporaries of 48,000,000 bytes.
TEST(SiteScan, KeptActivityReplaysEntriesTooWideForItsSteps) {
  const std::string build = memledger::testing::recordBuild();
  const std::string cli = build + "/bin/memledger", program = build + "/samples/temp_storm";
  if (!std::filesystem::exists(cli) || !std::filesystem::exists(program)) GTEST_SKIP() << "needs " << cli << " and " << program;
  const std::string out = memledger::testing::tempPath("temp_storm-one-bucket.db");
  const std::string cmd = "'" + cli + "' record --force --no-compress --bucket-ms 100000 -o '" + out + "' -- '" + program +
                          "' >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Recording rec = Recording::open(out);
  const detail::ActivitySites& sites = rec.activitySites();
  int64_t allocs = 0, widest = 0;
  detail::SiteActivity storm;
  EXPECT_TRUE(sites.replay(rec, [&](int64_t, int64_t, int32_t, const detail::SiteActivity& e) {
    allocs += e.allocs;
    if (e.allocs > widest) {
      widest = e.allocs;
      storm = e;
    }
  }));
  EXPECT_EQ(allocs, report(rec, {}).totals.allocations);
  EXPECT_EQ(storm.allocs, 1000000);
  EXPECT_EQ(storm.frees, 1000000);
  EXPECT_EQ(storm.temps, 1000000);
  EXPECT_EQ(storm.alloc_bytes, 48000000);
  EXPECT_EQ(storm.freed_bytes, 48000000);
}
