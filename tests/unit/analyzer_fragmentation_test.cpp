// Fragmentation from a hand-made timeline (heap vs resident anonymous memory), and heap layouts.
#include "analyzer/analyzer.h"
#include "analyzer_fixture.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;

namespace {
constexpr int64_t MB = 1000000;
}

// The shape of "200,000 x 1000 B, free every other one, then 100,000 x 3000 B": the holes left
// by the frees cannot hold the larger blocks, so resident memory outgrows the live heap.
TEST(AnalyzerFragmentation, RatioAtThePeakPlateau) {
  RecordingBuilder b("frag.db");
  b.process({.peak_heap_bytes = 400 * MB, .peak_heap_ns = 3000000});
  b.timeline({.t_ns = 0, .heap_bytes = 200 * MB, .rss_bytes = 210 * MB, .anon_bytes = 205 * MB});
  b.timeline({.t_ns = 1000000, .heap_bytes = 100 * MB, .rss_bytes = 210 * MB, .anon_bytes = 205 * MB});
  b.timeline({.t_ns = 2000000, .heap_bytes = 250 * MB});  // no sample yet: skipped
  b.timeline({.t_ns = 3000000, .heap_bytes = 400 * MB, .rss_bytes = 510 * MB, .anon_bytes = 505 * MB});
  // Still on the plateau, but the /proc sample lags (taken before the last blocks were touched).
  b.timeline({.t_ns = 4000000, .heap_bytes = 390 * MB, .rss_bytes = 410 * MB, .anon_bytes = 405 * MB});
  // Anonymous mmaps are not heap: they are taken out of the resident figure.
  b.timeline({.t_ns = 5000000, .heap_bytes = 0, .mmap_bytes = 100 * MB, .anon_bytes = 110 * MB});
  b.timeline({.t_ns = 6000000, .heap_bytes = 0, .mmap_bytes = 100 * MB, .anon_bytes = 90 * MB});  // resident<0: skipped
  auto rec = Recording::open(b.finish());
  Fragmentation f = fragmentation(rec);
  ASSERT_EQ(f.series.size(), 4u);
  EXPECT_DOUBLE_EQ(f.series[0].ratio, 1.0 - 200.0 / 205.0);
  EXPECT_DOUBLE_EQ(f.series[1].ratio, 1.0 - 100.0 / 205.0);
  EXPECT_EQ(f.series[2].t_ns, 3000000);
  // Nothing live in 10 MB of resident heap at 5 ms: a ratio of nothing, counted, not a 100% point
  // (this test expected 100% there before issue 15).
  EXPECT_EQ(f.series.back().t_ns, 4000000);
  EXPECT_EQ(f.nothing_live_samples, 1);
  ASSERT_TRUE(f.nothing_live_from_ns);
  EXPECT_EQ(*f.nothing_live_from_ns, 5000000);
  ASSERT_TRUE(f.peak_ratio);
  EXPECT_DOUBLE_EQ(*f.peak_ratio, 1.0 - 400.0 / 505.0);
  EXPECT_GT(*f.peak_ratio, 0.1);
  EXPECT_LT(*f.peak_ratio, 0.6);
  EXPECT_EQ(f.peak_resident_bytes, 505 * MB);
  EXPECT_EQ(f.peak_heap_bytes, 400 * MB);
}

TEST(AnalyzerFragmentation, NearestSampleWhenThePlateauHasNone) {
  RecordingBuilder b("frag-nearest.db");
  b.process({.peak_heap_bytes = 100 * MB});
  b.timeline({.t_ns = 0, .heap_bytes = 10 * MB, .anon_bytes = 40 * MB});
  b.timeline({.t_ns = 1000000, .heap_bytes = 100 * MB});
  b.timeline({.t_ns = 5000000, .heap_bytes = 60 * MB, .anon_bytes = 120 * MB});
  auto rec = Recording::open(b.finish());
  Fragmentation f = fragmentation(rec);
  ASSERT_TRUE(f.peak_ratio);
  EXPECT_DOUBLE_EQ(*f.peak_ratio, 1.0 - 10.0 / 40.0);  // t=0 is nearer to the peak at t=1ms
}

TEST(AnalyzerFragmentation, NoSamplesNoRatio) {
  RecordingBuilder b("frag-none.db");
  b.process({.peak_heap_bytes = 100});
  b.timeline({.t_ns = 0, .heap_bytes = 100});
  auto rec = Recording::open(b.finish());
  Fragmentation f = fragmentation(rec);
  EXPECT_FALSE(f.peak_ratio);
  EXPECT_TRUE(f.series.empty());
  EXPECT_TRUE(toJson(f)["peak_ratio"].is_null());
}

// A run that frees everything before it ends: the samples taken with nothing live say nothing
// about fragmentation (0 live bytes of any resident size would read 100%); they are counted
// apart, with the time from which nothing stays live, and the ratios over the run come from the
// samples with live blocks only. Samples with nothing live in the middle are counted too, but
// the samples do not end there unless nothing is live after them.
TEST(AnalyzerFragmentation, SamplesWithNothingLiveHaveNoRatio) {
  RecordingBuilder b("frag-empty-end.db");
  b.process({.peak_heap_bytes = 60 * MB, .peak_heap_ns = 2000000});
  b.timeline({.t_ns = 0, .heap_bytes = 0, .anon_bytes = 1 * MB});  // before the first malloc
  b.timeline({.t_ns = 1000000, .heap_bytes = 30 * MB, .anon_bytes = 40 * MB});
  b.timeline({.t_ns = 2000000, .heap_bytes = 60 * MB, .anon_bytes = 80 * MB});
  b.timeline({.t_ns = 3000000, .heap_bytes = 0, .anon_bytes = 70 * MB});  // freed, pages kept
  b.timeline({.t_ns = 4000000, .heap_bytes = 0, .anon_bytes = 70 * MB});
  auto rec = Recording::open(b.finish());
  Fragmentation f = fragmentation(rec);
  ASSERT_EQ(f.series.size(), 2u);
  EXPECT_DOUBLE_EQ(f.series[0].ratio, 1.0 - 30.0 / 40.0);
  EXPECT_DOUBLE_EQ(f.series[1].ratio, 1.0 - 60.0 / 80.0);
  for (const auto& p : f.series) EXPECT_LT(p.ratio, 1.0) << p.t_ns;
  EXPECT_EQ(f.nothing_live_samples, 3);
  ASSERT_TRUE(f.nothing_live_from_ns);
  EXPECT_EQ(*f.nothing_live_from_ns, 3000000);
  ASSERT_TRUE(f.peak_ratio);
  EXPECT_DOUBLE_EQ(*f.peak_ratio, 0.25);
  auto j = toJson(f);
  EXPECT_EQ(j["nothing_live_samples"], 3);
  EXPECT_EQ(j["nothing_live_from_ns"], 3000000);
  EXPECT_EQ(j["series"].size(), 2u);

  // A time range counts only its own samples: from 3.5 ms on, one sample, and nothing is live.
  Filter late;
  late.t_from_ns = 3500000;
  Fragmentation g = fragmentation(rec, late);
  EXPECT_TRUE(g.series.empty());
  EXPECT_EQ(g.nothing_live_samples, 1);
  ASSERT_TRUE(g.nothing_live_from_ns);
  EXPECT_EQ(*g.nothing_live_from_ns, 4000000);
  // Up to 2.5 ms: the empty sample at 0 is counted, but the samples end with blocks live.
  Filter early;
  early.t_to_ns = 2500000;
  Fragmentation e = fragmentation(rec, early);
  EXPECT_EQ(e.series.size(), 2u);
  EXPECT_EQ(e.nothing_live_samples, 1);
  EXPECT_FALSE(e.nothing_live_from_ns);
  EXPECT_TRUE(toJson(e)["nothing_live_from_ns"].is_null());
}

// Nothing live at any sample: no ratio at all (not "100%").
TEST(AnalyzerFragmentation, NothingEverLiveIsNoRatio) {
  RecordingBuilder b("frag-empty.db");
  b.process({});
  b.timeline({.t_ns = 0, .heap_bytes = 0, .anon_bytes = 1 * MB});
  b.timeline({.t_ns = 1000000, .heap_bytes = 0, .anon_bytes = 2 * MB});
  auto rec = Recording::open(b.finish());
  Fragmentation f = fragmentation(rec);
  EXPECT_FALSE(f.peak_ratio);
  EXPECT_TRUE(f.series.empty());
  EXPECT_EQ(f.nothing_live_samples, 2);
  ASSERT_TRUE(f.nothing_live_from_ns);
  EXPECT_EQ(*f.nothing_live_from_ns, 0);
}

TEST(AnalyzerFragmentation, LayoutOfAnAddressRange) {
  RecordingBuilder b("layout.db");
  b.process({});
  int64_t s = b.stack(1, {{"f", "f.c", 1}});
  b.alloc(1, s, 0x1000, 0x100, 10);        // live at t=100
  b.alloc(1, s, 0x1100, 0x100, 10, 50);    // freed before t=100: a hole
  b.alloc(1, s, 0x1200, 0x200, 20);        // live
  b.alloc(1, s, 0x1400, 0x100, 200);       // allocated after t=100
  b.alloc(1, s, 0x9000, 0x100, 10);        // outside the range
  b.alloc(2, s, 0x1100, 0x100, 10);        // another process image
  auto rec = Recording::open(b.finish());
  HeapLayout l = heapLayout(rec, 1, 0x1000, 0x1800, 100);
  ASSERT_EQ(l.blocks.size(), 2u);
  EXPECT_EQ(l.blocks[0].address, 0x1000u);
  EXPECT_EQ(l.blocks[1].address, 0x1200u);
  EXPECT_EQ(l.blocks[1].size, 0x200u);
  EXPECT_EQ(l.blocks[1].stack_id, s);
  ASSERT_EQ(l.holes.size(), 2u);
  EXPECT_EQ(l.holes[0].address, 0x1100u);
  EXPECT_EQ(l.holes[0].size, 0x100u);
  EXPECT_EQ(l.holes[1].address, 0x1400u);
  EXPECT_EQ(l.holes[1].size, 0x400u);
  EXPECT_EQ(l.live_bytes, 0x300u);
  EXPECT_EQ(l.free_bytes, 0x500u);
  EXPECT_EQ(l.largest_hole, 0x400u);
  EXPECT_DOUBLE_EQ(l.external_fragmentation, 0.2);

  EXPECT_TRUE(l.complete);  // allocation_rows 'all': every block has a row

  HeapLayout later = heapLayout(rec, 1, 0x1000, 0x1800, 300);
  EXPECT_EQ(later.blocks.size(), 3u);
  EXPECT_EQ(later.largest_hole, 0x300u);
}

// The recorder's default keeps rows only for leaks: a layout mid-run may miss blocks freed later
// and says so; at the end of the image its live blocks are exactly its leaks.
TEST(AnalyzerFragmentation, LayoutWithLeakRowsOnlyIsCompleteAtTheEnd) {
  RecordingBuilder b("layout-leaks.db");
  b.meta("allocation_rows", "leaks");
  b.process({.end_ns = 1000});
  int64_t s = b.stack(1, {{"f", "f.c", 1}});
  b.alloc(1, s, 0x1000, 0x100, 10);
  b.alloc(1, s, 0x1200, 0x100, 20);
  auto rec = Recording::open(b.finish());
  HeapLayout mid = heapLayout(rec, 1, 0x1000, 0x1800, 100);
  EXPECT_FALSE(mid.complete);
  EXPECT_EQ(mid.blocks.size(), 2u);
  HeapLayout end = heapLayout(rec, 1, 0x1000, 0x1800, 1000);
  EXPECT_TRUE(end.complete);
  EXPECT_EQ(end.live_bytes, 0x200u);
  EXPECT_EQ(end.largest_hole, 0x500u);
}
