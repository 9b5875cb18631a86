// Phases: automatic ramp-then-release detection on a bucketed heap curve, and marker phases.
#include "analyzer/analyzer.h"
#include "analyzer_fixture.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;

namespace {

constexpr int64_t MiB = 1 << 20;
constexpr int64_t kBucket = 1000000;  // 1 ms

// Writes one timeline row per bucket from the heap level at the end of each bucket. Within a
// bucket the curve wanders by `jitter` beyond its start and end values (noise of small allocs),
// and alloc_bytes is the growth plus the churn that the jitter implies.
struct Curve {
  std::vector<int64_t> ends;
  int64_t jitter = 0;
  mutable int64_t peakT = 0;  // start of the first bucket holding the highest point

  void ramp(int64_t to, int buckets) {
    int64_t from = ends.empty() ? 0 : ends.back();
    for (int i = 1; i <= buckets; ++i) ends.push_back(from + (to - from) * i / buckets);
  }
  void hold(int buckets, int64_t wobble) {
    int64_t v = ends.back();
    for (int i = 0; i < buckets; ++i) ends.push_back(v + (i % 2 ? wobble : -wobble));
  }
  int64_t write(RecordingBuilder& b, int64_t image = 1) const {
    int64_t prev = 0, peak = 0;
    for (size_t i = 0; i < ends.size(); ++i) {
      int64_t e = ends[i];
      int64_t hi = std::max(prev, e) + jitter, lo = std::max<int64_t>(0, std::min(prev, e) - jitter);
      if (hi > peak) {
        peak = hi;
        peakT = static_cast<int64_t>(i) * kBucket;
      }
      b.timeline({.image = image, .t_ns = static_cast<int64_t>(i) * kBucket, .heap_bytes = e, .heap_max = hi,
                  .heap_min = lo, .allocs = 10, .frees = 10,
                  .alloc_bytes = std::max<int64_t>(0, e - prev) + 2 * jitter});
      prev = e;
    }
    return peak;
  }
};

}  // namespace

TEST(AnalyzerPhases, ThreeRampsAreThreePhasesPeakInSecond) {
  RecordingBuilder b("three-phases.db");
  Curve c;
  c.jitter = MiB / 2;
  c.ramp(100 * MiB, 12);
  c.ramp(2 * MiB, 4);  // release, not quite to zero
  c.hold(3, MiB / 4);
  c.ramp(300 * MiB, 25);
  c.hold(6, 4 * MiB);  // a noisy plateau must not split the phase
  c.ramp(1 * MiB, 6);
  c.ramp(50 * MiB, 5);
  c.ramp(0, 3);
  int64_t peak = c.write(b);
  ASSERT_EQ(c.peakT, 45 * kBucket);
  b.process({.peak_heap_bytes = peak, .peak_heap_ns = c.peakT + 123});
  b.meta("duration_ns", std::to_string(c.ends.size() * kBucket));
  int64_t sa = b.stack(1, {{"load_data", "a.c", 1}});
  int64_t sb = b.stack(1, {{"train", "b.c", 2}});
  int64_t sc = b.stack(1, {{"evaluate", "c.c", 3}});
  // Every allocation row belongs to a site (the recorder writes both).
  b.site({.stack = sa, .alloc_count = 2, .alloc_bytes = 101 * MiB});
  b.site({.stack = sb, .alloc_count = 2, .alloc_bytes = 299 * MiB});
  b.site({.stack = sc, .alloc_count = 1, .alloc_bytes = 50 * MiB});
  b.alloc(1, sa, 0x1000, 100 * MiB, 2 * kBucket, 13 * kBucket);
  b.alloc(1, sb, 0x2000, 200 * MiB, 25 * kBucket, 50 * kBucket);
  b.alloc(1, sb, 0x3000, 99 * MiB, 30 * kBucket, 50 * kBucket);
  b.alloc(1, sa, 0x4000, 1 * MiB, 31 * kBucket, 50 * kBucket);
  b.alloc(1, sc, 0x5000, 50 * MiB, 57 * kBucket, 59 * kBucket);
  auto rec = Recording::open(b.finish());

  auto ph = phases(rec);
  ASSERT_EQ(ph.size(), 3u);
  EXPECT_EQ(ph[0].name, "phase 1");
  EXPECT_FALSE(ph[0].from_marker);
  EXPECT_EQ(ph[0].start_ns, 0);
  // Each phase starts where the previous one ended, and they come in time order.
  EXPECT_EQ(ph[1].start_ns, ph[0].end_ns);
  EXPECT_EQ(ph[2].start_ns, ph[1].end_ns);
  EXPECT_GE(ph[2].end_ns, static_cast<int64_t>(c.ends.size()) * kBucket);

  // The release of phase 1 ends in buckets 12..18 (the valley); phase 2 ramps from bucket 19.
  EXPECT_GE(ph[0].end_ns, 12 * kBucket);
  EXPECT_LE(ph[0].end_ns, 20 * kBucket);
  EXPECT_GE(ph[1].end_ns, 50 * kBucket);
  EXPECT_LE(ph[1].end_ns, 57 * kBucket);

  EXPECT_EQ(ph[0].peak_bytes, 100 * MiB + MiB / 2);
  EXPECT_EQ(ph[1].peak_bytes, peak);
  EXPECT_EQ(peak, 304 * MiB + MiB / 2);
  EXPECT_EQ(ph[2].peak_bytes, 50 * MiB + MiB / 2);
  EXPECT_GT(ph[1].peak_bytes, ph[0].peak_bytes);
  EXPECT_GT(ph[1].peak_bytes, ph[2].peak_bytes);
  EXPECT_EQ(ph[1].peak_time_ns, c.peakT + 123);  // refined to the exact peak instant

  // Allocated: the ramp (+ churn); freed: what went away.
  EXPECT_GE(ph[0].allocated_bytes, 100 * MiB);
  EXPECT_GE(ph[0].freed_bytes, 98 * MiB);
  EXPECT_GE(ph[1].allocated_bytes, 300 * MiB);

  ASSERT_EQ(ph[0].top_sites.size(), 1u);
  EXPECT_EQ(ph[0].top_sites[0].stack_id, sa);
  ASSERT_EQ(ph[1].top_sites.size(), 2u);
  EXPECT_EQ(ph[1].top_sites[0].stack_id, sb);
  EXPECT_EQ(ph[1].top_sites[0].bytes, 299 * MiB);
  EXPECT_EQ(ph[1].top_sites[0].count, 2);
  EXPECT_EQ(ph[1].top_sites[1].stack_id, sa);
  ASSERT_EQ(ph[2].top_sites.size(), 1u);
  EXPECT_EQ(ph[2].top_sites[0].stack_id, sc);
  EXPECT_EQ(ph[2].top_sites[0].stack[0].function, "evaluate");
}

TEST(AnalyzerPhases, SmallReleaseDoesNotSplit) {
  RecordingBuilder b("no-split.db");
  Curve c;
  c.ramp(100 * MiB, 10);
  c.ramp(80 * MiB, 3);  // 20% release: part of the same phase
  c.ramp(200 * MiB, 10);
  c.ramp(0, 5);
  b.process({.peak_heap_bytes = c.write(b)});
  auto rec = Recording::open(b.finish());
  auto ph = phases(rec);
  ASSERT_EQ(ph.size(), 1u);
  EXPECT_EQ(ph[0].peak_bytes, 200 * MiB);
}

TEST(AnalyzerPhases, NoiseBelowThresholdIsOnePhase) {
  RecordingBuilder b("noise.db");
  Curve c;
  c.ramp(100 * MiB, 5);
  // Saw-tooth of 3 MiB (3% of the peak), many times: allocator noise, not phases.
  for (int i = 0; i < 20; ++i) {
    c.ramp(97 * MiB, 1);
    c.ramp(100 * MiB, 1);
  }
  b.process({.peak_heap_bytes = c.write(b)});
  auto rec = Recording::open(b.finish());
  EXPECT_EQ(phases(rec).size(), 1u);
}

TEST(AnalyzerPhases, ReleaseAndRampInsideOneBucket) {
  // 10 ms buckets: one bucket holds the end of a release and the start of the next ramp.
  RecordingBuilder b("one-bucket-valley.db");
  b.meta("bucket_ns", "10000000");
  auto row = [&](int64_t t, int64_t end, int64_t hi, int64_t lo) {
    b.timeline({.t_ns = t * 10000000, .heap_bytes = end, .heap_max = hi, .heap_min = lo, .alloc_bytes = 1});
  };
  row(0, 50 * MiB, 50 * MiB, 0);
  row(1, 100 * MiB, 100 * MiB, 50 * MiB);
  row(2, 40 * MiB, 100 * MiB, 0);  // released to 0, then already ramping again
  row(3, 120 * MiB, 120 * MiB, 40 * MiB);
  row(4, 0, 120 * MiB, 0);
  b.process({.peak_heap_bytes = 120 * MiB});
  auto rec = Recording::open(b.finish());
  auto ph = phases(rec);
  ASSERT_EQ(ph.size(), 2u);
  EXPECT_EQ(ph[0].peak_bytes, 100 * MiB);
  EXPECT_EQ(ph[1].peak_bytes, 120 * MiB);
}

TEST(AnalyzerPhases, MarkersNameThePhases) {
  RecordingBuilder b("markers.db");
  Curve c;
  c.ramp(10 * MiB, 10);
  c.ramp(30 * MiB, 20);
  c.ramp(5 * MiB, 10);
  b.process({.peak_heap_bytes = c.write(b)});
  b.meta("duration_ns", std::to_string(40 * kBucket));
  b.marker(1, 0, "load");
  b.marker(1, 10 * kBucket, "train");
  b.marker(1, 30 * kBucket, "eval");
  int64_t s = b.stack(1, {{"fit", "t.c", 9}});
  b.site({.stack = s, .alloc_count = 1, .alloc_bytes = 4096});
  b.alloc(1, s, 0x100, 4096, 15 * kBucket);
  auto rec = Recording::open(b.finish());
  auto ph = phases(rec);
  ASSERT_EQ(ph.size(), 3u);
  EXPECT_EQ(ph[0].name, "load");
  EXPECT_EQ(ph[1].name, "train");
  EXPECT_EQ(ph[2].name, "eval");
  for (const auto& p : ph) EXPECT_TRUE(p.from_marker);
  EXPECT_EQ(ph[0].start_ns, 0);
  EXPECT_EQ(ph[0].end_ns, 10 * kBucket);
  EXPECT_EQ(ph[1].start_ns, 10 * kBucket);
  EXPECT_EQ(ph[1].end_ns, 30 * kBucket);
  EXPECT_EQ(ph[2].start_ns, 30 * kBucket);
  EXPECT_EQ(ph[2].end_ns, 40 * kBucket);
  EXPECT_EQ(ph[0].peak_bytes, 10 * MiB);
  EXPECT_EQ(ph[1].peak_bytes, 30 * MiB);
  EXPECT_EQ(ph[0].allocated_bytes, 10 * MiB);
  EXPECT_EQ(ph[1].allocated_bytes, 20 * MiB);
  EXPECT_EQ(ph[2].freed_bytes, 25 * MiB);
  ASSERT_EQ(ph[1].top_sites.size(), 1u);
  EXPECT_EQ(ph[1].top_sites[0].bytes, 4096);
  EXPECT_TRUE(ph[0].top_sites.empty());

  // A time filter keeps the phases that overlap it.
  auto mid = phases(rec, {.t_from_ns = 12 * kBucket, .t_to_ns = 20 * kBucket});
  ASSERT_EQ(mid.size(), 1u);
  EXPECT_EQ(mid[0].name, "train");
}

// The recorder's default: freed blocks have no allocation row, only per-bucket site activity.
// Markers cut buckets, so a bucket's activity belongs to exactly one phase.
TEST(AnalyzerPhases, MarkerPhaseTopSitesComeFromSiteTimeline) {
  RecordingBuilder b("site-timeline.db");
  Curve c;
  c.ramp(10 * MiB, 10);
  c.ramp(0, 10);
  b.process({.peak_heap_bytes = c.write(b)});
  b.meta("duration_ns", std::to_string(20 * kBucket));
  b.meta("allocation_rows", "leaks");
  b.marker(1, 0, "load");
  b.marker(1, 10 * kBucket + 500, "train");  // cuts bucket 10: its rest starts at the marker
  int64_t load = b.stack(1, {{"load", "l.c", 1}});
  int64_t fit = b.stack(1, {{"fit", "f.c", 2}});
  int64_t scratch = b.stack(1, {{"scratch", "s.c", 3}});
  b.site({.stack = load, .alloc_count = 30, .alloc_bytes = 3000});
  b.site({.stack = fit, .alloc_count = 7, .alloc_bytes = 7 * MiB});
  b.site({.stack = scratch, .alloc_count = 5, .alloc_bytes = 500, .leak_count = 1, .leak_bytes = 100});
  b.siteActivity(1, 2 * kBucket, load, 10, 1000);
  b.siteActivity(1, 10 * kBucket, load, 20, 2000);        // just before the marker
  b.siteActivity(1, 10 * kBucket + 500, fit, 3, 3 * MiB);  // from the marker on
  b.siteActivity(1, 12 * kBucket, fit, 4, 4 * MiB);
  b.siteActivity(1, 3 * kBucket, scratch, 1, 100);
  b.siteActivity(1, 15 * kBucket, scratch, 3, 300);
  b.alloc(1, scratch, 0x100, 100, 4 * kBucket);  // the leak: a row, and counted in site_buckets
  // A damaged bucket (an entry cut short after its stack id) counts nothing and breaks nothing.
  b.siteBucketRaw(1, 16 * kBucket, "0381");
  auto rec = Recording::open(b.finish());
  EXPECT_EQ(rec.info().allocation_rows, "leaks");
  auto ph = phases(rec);
  ASSERT_EQ(ph.size(), 2u);
  ASSERT_EQ(ph[0].top_sites.size(), 2u);
  EXPECT_EQ(ph[0].top_sites[0].stack_id, load);
  EXPECT_EQ(ph[0].top_sites[0].count, 30);
  EXPECT_EQ(ph[0].top_sites[0].bytes, 3000);
  EXPECT_EQ(ph[0].top_sites[1].stack_id, scratch);
  EXPECT_EQ(ph[0].top_sites[1].count, 2);  // one from siteActivity, one from alloc()
  EXPECT_EQ(ph[0].top_sites[1].bytes, 200);
  ASSERT_EQ(ph[1].top_sites.size(), 2u);
  EXPECT_EQ(ph[1].top_sites[0].stack_id, fit);
  EXPECT_EQ(ph[1].top_sites[0].count, 7);
  EXPECT_EQ(ph[1].top_sites[0].bytes, 7 * MiB);
  EXPECT_EQ(ph[1].top_sites[1].stack_id, scratch);
  EXPECT_EQ(ph[1].top_sites[1].bytes, 300);
}

// A version 1 file has no site_timeline: phase top sites come from its allocation rows.
TEST(AnalyzerPhases, VersionOneFileTakesPhaseSitesFromAllocationRows) {
  RecordingBuilder b("version-one.db");
  b.versionOne("1000000");
  Curve c;
  c.ramp(10 * MiB, 10);
  c.ramp(0, 10);
  b.process({.peak_heap_bytes = c.write(b)});
  b.meta("duration_ns", std::to_string(20 * kBucket));
  b.marker(1, 0, "a");
  b.marker(1, 10 * kBucket, "b");
  int64_t s = b.stack(1, {{"work", "w.c", 1}});
  b.site({.stack = s, .alloc_count = 3, .alloc_bytes = 600});
  b.alloc(1, s, 0x100, 100, 1 * kBucket, 5 * kBucket);
  b.alloc(1, s, 0x200, 200, 11 * kBucket, 15 * kBucket);
  b.alloc(1, s, 0x300, 300, 12 * kBucket, 18 * kBucket);
  auto rec = Recording::open(b.finish());
  EXPECT_EQ(rec.info().schema_version, 1);
  EXPECT_EQ(rec.info().allocation_rows, "long_lived");
  auto ph = phases(rec);
  ASSERT_EQ(ph.size(), 2u);
  ASSERT_EQ(ph[0].top_sites.size(), 1u);
  EXPECT_EQ(ph[0].top_sites[0].bytes, 100);
  ASSERT_EQ(ph[1].top_sites.size(), 1u);
  EXPECT_EQ(ph[1].top_sites[0].count, 2);
  EXPECT_EQ(ph[1].top_sites[0].bytes, 500);
}

TEST(AnalyzerPhases, EmptyTimelineHasNoPhases) {
  RecordingBuilder b("empty-timeline.db");
  b.process({});
  auto rec = Recording::open(b.finish());
  EXPECT_TRUE(phases(rec).empty());
  EXPECT_TRUE(timeline(rec).empty());
}

TEST(AnalyzerTimeline, SummedOverImagesCarriesIdleImagesForward) {
  RecordingBuilder b("summed.db");
  b.process({.id = 1, .pid = 10});
  b.process({.id = 2, .pid = 11});
  b.timeline({.image = 1, .t_ns = 0, .heap_bytes = 100});
  b.timeline({.image = 2, .t_ns = 1000000, .heap_bytes = 50});
  b.timeline({.image = 1, .t_ns = 2000000, .heap_bytes = 10});
  auto rec = Recording::open(b.finish());
  auto tl = timeline(rec);
  ASSERT_EQ(tl.size(), 3u);
  EXPECT_EQ(tl[0].heap_bytes, 100);
  EXPECT_EQ(tl[1].heap_bytes, 150);  // image 1 still holds 100
  EXPECT_EQ(tl[2].heap_bytes, 60);
  EXPECT_EQ(timeline(rec, 2).size(), 1u);
}

TEST(AnalyzerPhases, OnePhaseTakesTopSitesFromSiteTotals) {
  RecordingBuilder b("one-phase-sites.db");
  Curve c;
  c.ramp(10 * MiB, 5);
  c.ramp(0, 5);
  b.process({.peak_heap_bytes = c.write(b)});
  int64_t s1 = b.stack(1, {{"small", "s.c", 1}});
  int64_t s2 = b.stack(1, {{"big", "b.c", 2}});
  // Folded allocations have no rows: the site totals still count them.
  b.site({.stack = s1, .alloc_count = 1000, .alloc_bytes = 4000});
  b.site({.stack = s2, .alloc_count = 10, .alloc_bytes = 10 * MiB});
  auto rec = Recording::open(b.finish());
  auto ph = phases(rec);
  ASSERT_EQ(ph.size(), 1u);
  ASSERT_EQ(ph[0].top_sites.size(), 2u);
  EXPECT_EQ(ph[0].top_sites[0].stack_id, s2);
  EXPECT_EQ(ph[0].top_sites[0].count, 10);
  EXPECT_EQ(ph[0].top_sites[1].bytes, 4000);
}

TEST(AnalyzerPhases, ManySwingsKeepOnlyTheMostSignificant) {
  // A loop that allocates and frees 10 MiB 100 times, with one 200 MiB job in the middle.
  RecordingBuilder b("swings.db");
  Curve c;
  for (int i = 0; i < 50; ++i) {
    c.ramp(10 * MiB, 2);
    c.ramp(0, 2);
  }
  c.ramp(200 * MiB, 5);
  c.ramp(0, 5);
  for (int i = 0; i < 50; ++i) {
    c.ramp(10 * MiB, 2);
    c.ramp(0, 2);
  }
  b.process({.peak_heap_bytes = c.write(b)});
  auto rec = Recording::open(b.finish());
  auto ph = phases(rec);
  EXPECT_LE(ph.size(), 20u);
  EXPECT_GE(ph.size(), 2u);
  int holding = 0;
  for (const auto& p : ph) holding += p.peak_bytes == 200 * MiB;
  EXPECT_EQ(holding, 1);
}

TEST(AnalyzerPhases, TinyCurveIsOnePhase) {
  // A program whose heap never exceeds 30 KB: every wiggle is noise.
  RecordingBuilder b("tiny.db");
  Curve c;
  for (int i = 0; i < 200; ++i) {
    c.ramp(30000, 1);
    c.ramp(100, 1);
  }
  b.process({.peak_heap_bytes = c.write(b)});
  auto rec = Recording::open(b.finish());
  EXPECT_EQ(phases(rec).size(), 1u);
}
