// Curves downsampled to a requested resolution (analyzer/curve.h): every point is the envelope
// of the buckets in its interval, and the exact peak stays in the point that holds it.
#include <algorithm>
#include <random>

#include "analyzer/analyzer.h"
#include "analyzer/curve.h"
#include "analyzer_fixture.h"
#include "analyzer_sample_recording.h"

using namespace memledger::analyzer;

namespace {

// A random walk, one bucket every `step` ns with gaps, and one spike at bucket `spikeAt`.
std::vector<SeriesPoint> walk(size_t n, int64_t step, size_t spikeAt, int64_t spike) {
  std::mt19937_64 rng(42);
  std::vector<SeriesPoint> s;
  int64_t v = 1 << 20, t = 0;
  for (size_t i = 0; i < n; ++i) {
    t += step * (1 + int64_t(rng() % 3));  // buckets without activity are not written
    int64_t prev = v;
    v = std::max<int64_t>(0, v + int64_t(rng() % 20001) - 10000);
    int64_t hi = std::max(prev, v) + int64_t(rng() % 5000), lo = std::max<int64_t>(0, std::min(prev, v) - int64_t(rng() % 5000));
    if (i == spikeAt) hi = spike;
    s.push_back({t, v, hi, lo});
  }
  return s;
}

// Checks every point against the buckets of its interval, counted by hand.
void expectEnvelope(const Curve& c, const std::vector<SeriesPoint>& s, int64_t from, int64_t to) {
  size_t covered = 0;
  for (const CurvePoint& p : c.points) {
    SCOPED_TRACE("point at " + std::to_string(p.t_from_ns));
    EXPECT_GE(p.t_from_ns, from);
    EXPECT_LE(p.t_to_ns, to);
    EXPECT_EQ(p.t_to_ns - p.t_from_ns <= c.interval_ns, true);
    int64_t lo = INT64_MAX, hi = INT64_MIN, last = 0;
    size_t n = 0;
    for (const SeriesPoint& b : s)
      if (b.t_ns >= p.t_from_ns && b.t_ns < p.t_to_ns) {
        lo = std::min(lo, b.min);
        hi = std::max(hi, b.max);
        last = b.value;
        ++n;
      }
    ASSERT_GT(n, 0u);
    EXPECT_EQ(p.buckets, n);
    EXPECT_EQ(p.min, lo);
    if (!c.exact_peak || p.max_t_ns != c.peak_ns) {
      EXPECT_EQ(p.max, hi);
    }
    EXPECT_EQ(p.last, last);
    covered += n;
  }
  EXPECT_EQ(covered, c.source_points);
}

}  // namespace

TEST(AnalyzerCurve, PointsAreTheEnvelopeOfTheirBuckets) {
  std::vector<SeriesPoint> s = walk(20000, 1000, 12345, 500 << 20);
  Curve c = downsample(s, 0, INT64_MAX, 300);
  ASSERT_LE(c.points.size(), 300u);
  EXPECT_GE(c.points.size(), 290u);  // the buckets cover the range evenly
  EXPECT_EQ(c.source_points, s.size());
  expectEnvelope(c, s, 0, s.back().t_ns + 1);
  // The spike is in the point of its bucket, to the byte and the bucket.
  EXPECT_EQ(c.peak_bytes, 500 << 20);
  EXPECT_EQ(c.peak_ns, s[12345].t_ns);
  EXPECT_FALSE(c.exact_peak);
  auto holder = std::find_if(c.points.begin(), c.points.end(), [&](const CurvePoint& p) { return p.max == 500 << 20; });
  ASSERT_NE(holder, c.points.end());
  EXPECT_LE(holder->t_from_ns, s[12345].t_ns);
  EXPECT_GT(holder->t_to_ns, s[12345].t_ns);
}

TEST(AnalyzerCurve, ARangeKeepsOnlyItsBuckets) {
  std::vector<SeriesPoint> s = walk(5000, 1000, 100, 7 << 20);
  int64_t from = s[1000].t_ns + 1, to = s[3000].t_ns;
  Curve c = downsample(s, from, to, 64);
  ASSERT_LE(c.points.size(), 64u);
  EXPECT_EQ(c.source_points, 1999u);  // buckets 1001 .. 2999
  expectEnvelope(c, s, from, to);
  EXPECT_LT(c.peak_bytes, 7 << 20);  // the spike is outside
  EXPECT_TRUE(downsample(s, to, from, 64).points.empty());
  EXPECT_TRUE(downsample(s, from, to, 0).points.empty());
  EXPECT_TRUE(downsample(std::vector<SeriesPoint>{}, 0, INT64_MAX, 10).points.empty());
  // Fewer buckets than points: one point per bucket.
  Curve few = downsample(s, 0, INT64_MAX, 100000);
  EXPECT_EQ(few.points.size(), s.size());
}

TEST(AnalyzerCurve, TheExactPeakGoesInTheIntervalOfItsInstant) {
  std::vector<SeriesPoint> s = walk(10000, 1000, 4000, 9 << 20);
  // The recorder's exact peak: in the bucket's time, a few bytes above what the bucket says.
  ExactPeak exact{s[4000].t_ns + 1, (9 << 20) + 17};
  Curve c = downsample(s, 0, INT64_MAX, 500, exact);
  EXPECT_TRUE(c.exact_peak);
  EXPECT_EQ(c.peak_bytes, exact.bytes);
  EXPECT_EQ(c.peak_ns, exact.t_ns);
  int holders = 0;
  for (const CurvePoint& p : c.points)
    if (p.max == exact.bytes) {
      ++holders;
      EXPECT_EQ(p.max_t_ns, exact.t_ns);
      EXPECT_LE(p.t_from_ns, exact.t_ns);
    }
  EXPECT_EQ(holders, 1);
  expectEnvelope(c, s, 0, s.back().t_ns + 1);
  // Outside the range it is not used.
  Curve before = downsample(s, 0, s[3000].t_ns, 500, exact);
  EXPECT_FALSE(before.exact_peak);
  EXPECT_LT(before.peak_bytes, exact.bytes);
}

TEST(AnalyzerCurve, ThreePhasesKeepsItsExactPeak) {
  // samples/three_phases.c: the heap peak is exactly 300 MiB, reached once.
  std::string why;
  std::string path = memledger::testing::sampleRecording("three_phases", &why);
  if (path.empty()) GTEST_SKIP() << why;
  Recording rec = Recording::open(path);
  std::vector<Process> procs = processes(rec);
  ASSERT_EQ(procs.size(), 1u);
  const Process& p = procs.front();
  ASSERT_EQ(p.peak_heap_bytes, 314572800);
  Series series = heapSeries(rec, p.image_id);
  const std::vector<SeriesPoint>& s = series.points;
  ASSERT_GT(s.size(), 100u);  // a curve worth downsampling
  ASSERT_TRUE(series.exact_peak);
  EXPECT_EQ(series.exact_peak->bytes, 314572800);
  EXPECT_EQ(series.exact_peak->t_ns, p.peak_heap_ns);
  for (std::optional<int64_t> image : {std::optional<int64_t>(p.image_id), std::optional<int64_t>()}) {
    Curve c = curve(rec, {.image_id = image, .max_points = 40});
    ASSERT_LE(c.points.size(), 40u);
    EXPECT_TRUE(c.exact_peak);
    EXPECT_EQ(c.peak_bytes, 314572800);
    EXPECT_EQ(c.peak_ns, p.peak_heap_ns);
    expectEnvelope(c, s, 0, s.back().t_ns + 1);  // the request starts at 0
    // The recorder's bucket maxima agree with its exact peak: the holder's buckets reach it.
    int64_t highest = 0;
    for (const SeriesPoint& b : s) highest = std::max(highest, b.max);
    EXPECT_EQ(highest, 314572800);
  }
  // Zoomed to the second phase's ramp: the points are narrower, the peak the same.
  Curve zoom = curve(rec, {.image_id = p.image_id, .t_from_ns = p.peak_heap_ns - 100000000,
                           .t_to_ns = p.peak_heap_ns + 1000000, .max_points = 20});
  EXPECT_TRUE(zoom.exact_peak);
  EXPECT_EQ(zoom.peak_bytes, 314572800);
  EXPECT_LE(zoom.interval_ns, 101000000 / 20 + 1);
  // A series read once serves the same curve at every request.
  Curve again = downsample(series, p.peak_heap_ns - 100000000, p.peak_heap_ns + 1000000, 20);
  ASSERT_EQ(again.points.size(), zoom.points.size());
  for (size_t i = 0; i < again.points.size(); ++i) {
    EXPECT_EQ(again.points[i].t_from_ns, zoom.points[i].t_from_ns);
    EXPECT_EQ(again.points[i].max, zoom.points[i].max);
    EXPECT_EQ(again.points[i].min, zoom.points[i].min);
    EXPECT_EQ(again.points[i].last, zoom.points[i].last);
  }
}

TEST(AnalyzerCurve, EverySpaceHasItsOwnSeriesAndExactPeak) {
  // samples/collector_events.c: device:0 reaches 7 MiB (1 + 2 + 4), device:1 8 MiB, pinned 256 KiB.
  std::string why;
  std::string path = memledger::testing::sampleRecording("collector_events", &why);
  if (path.empty()) GTEST_SKIP() << why;
  Recording rec = Recording::open(path);
  struct Expect {
    const char* name;
    int64_t peak;
  };
  for (Expect e : {Expect{"device:0", 7 << 20}, Expect{"device:1", 8 << 20}, Expect{"pinned", 256 << 10}}) {
    Series s = spaceSeries(rec, e.name, std::nullopt);
    ASSERT_TRUE(s.exact_peak) << e.name;
    EXPECT_EQ(s.exact_peak->bytes, e.peak) << e.name;
    int64_t highest = 0;
    for (const SeriesPoint& p : s.points) highest = std::max(highest, p.max);
    EXPECT_EQ(highest, e.peak) << e.name;  // the curve's bucket maxima reach it
    Curve c = downsample(s, 0, INT64_MAX, 10);
    EXPECT_EQ(c.peak_bytes, e.peak) << e.name;
  }
  // The heap's own series never sees device memory.
  Series heap = spaceSeries(rec, "heap", std::nullopt);
  for (const SeriesPoint& p : heap.points) EXPECT_LT(p.max, 1 << 20);
}
