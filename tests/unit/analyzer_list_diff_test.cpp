// analyzer/list_diff.h: the GUI's B − A of leaks, sizes and headline numbers, on the hand-built
// recordings of ci_fixture.h (every number known): B moves leak_here's line (the same site),
// allocates 40000 B more from build_table (50000 -> 90000 B in 100 blocks) and leaks 512 B from a
// new site, new_leak.
#include <gtest/gtest.h>

#include "analyzer/list_diff.h"
#include "analyzer_sample_recording.h"
#include "ci_fixture.h"

namespace an = memledger::analyzer;
using memledger::testing::buildCiRecording;
using memledger::testing::CiRecordingOptions;

namespace {
CiRecordingOptions changed() {
  CiRecordingOptions o;
  o.leakLine = 11;
  o.tableAllocBytes = 90000;
  o.extraLeakSite = true;
  return o;
}

an::Leaks leaksOf(const an::Recording& rec, size_t top) {
  an::Filter f;
  if (top) f.top = top;  // 0: every site
  return an::leaks(rec, f);
}
}  // namespace

TEST(ListDiff, LeaksAreMatchedByFunctionAndFileNotLine) {
  an::Recording a = an::Recording::open(buildCiRecording("listdiff-a.db"));
  an::Recording b = an::Recording::open(buildCiRecording("listdiff-b.db", changed()));
  an::ListChanges c = an::diffLeaks(leaksOf(a, 0), leaksOf(b, 0));
  EXPECT_EQ(c.bytes_b - c.bytes_a, 512);
  EXPECT_EQ(c.count_b - c.count_a, 1);
  EXPECT_FALSE(c.cut_a || c.cut_b);
  ASSERT_EQ(c.sites.size(), 1u);  // leak_here moved a line only: unchanged, left out
  const an::SiteChange& s = c.sites[0];
  EXPECT_EQ(s.stack.at(0).function, "new_leak");
  EXPECT_EQ(s.status, an::DiffStatus::New);
  EXPECT_EQ(s.deltaBytes(), 512);
  EXPECT_EQ(s.deltaCount(), 1);
  EXPECT_TRUE(s.listed_b);
  EXPECT_FALSE(s.listed_a);
  // The other way round the site is gone.
  an::ListChanges back = an::diffLeaks(leaksOf(b, 0), leaksOf(a, 0));
  ASSERT_EQ(back.sites.size(), 1u);
  EXPECT_EQ(back.sites[0].status, an::DiffStatus::Gone);
  EXPECT_EQ(back.sites[0].deltaBytes(), -512);
}

// Two leaking sites, `keep` and `grow`, with their leaked bytes (one block each).
std::string twoSites(const std::string& name, int64_t keep, int64_t grow) {
  memledger::testing::RecordingBuilder b(name);
  b.meta("peak_image", "1");
  b.process({});
  for (auto [function, bytes] : {std::pair{"keep", keep}, std::pair{"grow", grow}}) {
    memledger::testing::SiteSpec s;
    s.stack = b.stack(1, {{function, "/src/two.c", 3}, {"main", "/src/two.c", 9}});
    s.alloc_count = s.leak_count = 1;
    s.alloc_bytes = s.leak_bytes = bytes;
    b.site(s);
  }
  return b.finish();
}

TEST(ListDiff, ASiteBelowACutListIsComparedOnlyPastTheCut) {
  an::Recording a = an::Recording::open(buildCiRecording("listdiff-cut-a.db"));
  an::Recording b = an::Recording::open(buildCiRecording("listdiff-cut-b.db", changed()));
  // A lists only its largest site (leak_here, 4096 B): B's stdio buffer (1024 B, in A too) and
  // new_leak (512 B, new) are within that cut, where A may hold as much: neither is compared.
  an::ListChanges c = an::diffLeaks(leaksOf(a, 1), leaksOf(b, 0));
  EXPECT_TRUE(c.cut_a);
  EXPECT_FALSE(c.cut_b);
  EXPECT_EQ(c.sites_a, 2u);
  EXPECT_EQ(c.sites_b, 3u);
  EXPECT_EQ(c.bytes_b - c.bytes_a, 512);  // the totals are over every site, not the lists
  EXPECT_TRUE(c.sites.empty());
  EXPECT_EQ(c.uncertain, 2u);
  // `grow` leaks 100 B in A (below A's cut of 5000 B) and 9000 B in B: past the cut, so it grew
  // by at least 4000 B; it is listed as changed, A's amount unknown (counted 0).
  an::Recording x = an::Recording::open(twoSites("listdiff-two-a.db", 5000, 100));
  an::Recording y = an::Recording::open(twoSites("listdiff-two-b.db", 5000, 9000));
  an::ListChanges g = an::diffLeaks(leaksOf(x, 1), leaksOf(y, 0));
  ASSERT_EQ(g.sites.size(), 1u);
  EXPECT_EQ(g.uncertain, 0u);
  EXPECT_EQ(g.sites[0].stack.at(0).function, "grow");
  EXPECT_EQ(g.sites[0].status, an::DiffStatus::Changed);
  EXPECT_FALSE(g.sites[0].listed_a);
  EXPECT_EQ(g.sites[0].deltaBytes(), 9000);
  EXPECT_EQ(g.bytes_b - g.bytes_a, 8900);
}

// Real runs of samples/ci_leaky.c: A leaks ten 1000-byte blocks from ci_leak_block, B holds one
// block of 4,000,000 bytes in ci_hold_peak; both allocate the stdio buffer and a 64-byte scratch.
TEST(ListDiff, SizeBucketsOfBothRunsSideBySide) {
  std::string why;
  const std::string pathA = memledger::testing::sampleRecording("ci_leaky", &why, false, "leak 10");
  const std::string pathB = pathA.empty() ? "" : memledger::testing::sampleRecording("ci_leaky", &why, false, "peak 4000000");
  if (pathA.empty() || pathB.empty()) GTEST_SKIP() << why;
  an::Recording a = an::Recording::open(pathA), b = an::Recording::open(pathB);
  std::vector<an::SizeBucketChange> c = an::diffSizes(an::sizeHistogram(a), an::sizeHistogram(b));
  const an::SizeBucketChange *from512 = nullptr, *from2m = nullptr, *from64 = nullptr;
  for (const auto& x : c) {
    if (x.from == 512) from512 = &x;
    if (x.from == 2097152) from2m = &x;
    if (x.from == 64) from64 = &x;
  }
  ASSERT_TRUE(from512 && from2m && from64);
  EXPECT_EQ(from512->to, 1023u);
  EXPECT_EQ(from512->count_a, 10);
  EXPECT_EQ(from512->bytes_a, 10000);
  EXPECT_EQ(from512->count_b, 0);
  ASSERT_EQ(from512->sites.sites.size(), 1u);
  EXPECT_EQ(from512->sites.sites[0].stack.at(0).function, "ci_leak_block");
  EXPECT_EQ(from512->sites.sites[0].status, an::DiffStatus::Gone);
  EXPECT_EQ(from512->sites.sites[0].deltaCount(), -10);
  EXPECT_EQ(from2m->count_a, 0);
  EXPECT_EQ(from2m->count_b, 1);
  EXPECT_EQ(from2m->bytes_b, 4000000);
  ASSERT_EQ(from2m->sites.sites.size(), 1u);
  EXPECT_EQ(from2m->sites.sites[0].stack.at(0).function, "ci_hold_peak");
  EXPECT_EQ(from2m->sites.sites[0].status, an::DiffStatus::New);
  // The 64-byte scratch block, in both runs: the bucket is there, no site changed in it.
  EXPECT_EQ(from64->count_a, from64->count_b);
  EXPECT_TRUE(from64->sites.sites.empty());
  for (size_t i = 1; i < c.size(); ++i) EXPECT_LT(c[i - 1].from, c[i].from);
}

TEST(ListDiff, HeadlinesOfBothRuns) {
  an::Recording a = an::Recording::open(buildCiRecording("listdiff-head-a.db"));
  an::Recording b = an::Recording::open(buildCiRecording("listdiff-head-b.db", changed()));
  an::Report ra = an::report(a), rb = an::report(b);
  std::vector<an::HeadlineChange> h = an::compareHeadlines(ra, an::memorySeries(a), rb, an::memorySeries(b));
  auto find = [&](const std::string& name) -> const an::HeadlineChange& {
    for (const auto& x : h)
      if (x.name == name) return x;
    ADD_FAILURE() << "no " << name;
    static an::HeadlineChange none;
    return none;
  };
  EXPECT_EQ(find("Allocated").b - find("Allocated").a, 40512);
  EXPECT_EQ(find("Allocations").b - find("Allocations").a, 1);
  EXPECT_EQ(find("Leaked").b - find("Leaked").a, 512);
  EXPECT_EQ(find("Leaked blocks").b - find("Leaked blocks").a, 1);
  EXPECT_EQ(find("Leaked").unit, "bytes");
  EXPECT_EQ(find("heap peak").a, 10000);
  EXPECT_TRUE(find("heap peak").in_a && find("heap peak").in_b);
}
