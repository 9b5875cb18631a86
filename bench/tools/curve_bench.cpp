// Times analyzer::curve() (analyzer/curve.h) on a recording: the heap curve of its peak image
// downsampled to N points, best of R runs, and checks that the exact peak was kept; then
// downsample() of the series read once (the whole run and a zoom around the peak), as a chart
// that zooms asks; then the downsampler alone on a synthetic series of 10^7 buckets (a busy
// hour's worth), to show its cost per bucket. Built and run by bench/curve_speed.sh.
//   curve_bench RECORDING [POINTS] [RUNS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "analyzer/analyzer.h"
#include "analyzer/curve.h"

namespace an = memledger::analyzer;
using Clock = std::chrono::steady_clock;

static double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: curve_bench RECORDING [POINTS] [RUNS]\n");
    return 2;
  }
  size_t points = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 2000;
  int runs = argc > 3 ? std::atoi(argv[3]) : 5;
  try {
    an::Recording rec = an::Recording::open(argv[1]);
    std::optional<int64_t> image = rec.info().peak_image;
    int64_t exactBytes = 0, exactNs = 0, allocs = 0;
    for (const an::Process& p : an::processes(rec))
      if (!image || p.image_id == *image) exactBytes = p.peak_heap_bytes, exactNs = p.peak_heap_ns;
    allocs = an::totals(rec).allocations;
    double best = 1e300;
    an::Curve c;
    for (int r = 0; r < runs; ++r) {
      auto t0 = Clock::now();
      c = an::curve(rec, {.image_id = image, .max_points = points});
      best = std::min(best, msSince(t0));
    }
    bool kept = c.exact_peak && c.peak_bytes == exactBytes && c.peak_ns == exactNs;
    std::printf("curve(): %lld allocations, %zu heap buckets -> %zu points in %.2f ms (best of %d; reads "
                "the timeline); peak %lld B at %lld ns %s\n",
                static_cast<long long>(allocs), c.source_points, c.points.size(), best, runs,
                static_cast<long long>(c.peak_bytes), static_cast<long long>(c.peak_ns),
                kept ? "(exact, kept)" : "(NOT the exact peak)");
    // A chart keeps the series it read and asks again at each zoom: the whole run, then the
    // tenth around the peak.
    an::Series series = an::heapSeries(rec, image);
    int64_t t0ns = series.points.empty() ? 0 : series.points.front().t_ns;
    int64_t t1ns = series.points.empty() ? 1 : series.points.back().t_ns + 1;
    for (int64_t span : {t1ns - t0ns, (t1ns - t0ns) / 10}) {
      int64_t from = span == t1ns - t0ns ? t0ns : std::max(t0ns, exactNs - span / 2);
      best = 1e300;
      an::Curve z;
      for (int r = 0; r < runs; ++r) {
        auto t0 = Clock::now();
        z = an::downsample(series, from, from + span, points);
        best = std::min(best, msSince(t0));
      }
      bool zkept = z.exact_peak && z.peak_bytes == exactBytes && z.peak_ns == exactNs;
      kept = kept && zkept;
      std::printf("downsample() of the series read once, %lld ms of the run: %zu buckets -> %zu points in %.3f ms; "
                  "peak %s\n", static_cast<long long>(span / 1000000), z.source_points, z.points.size(), best,
                  zkept ? "exact, kept" : "LOST");
    }

    // The downsampler alone: 10^7 buckets of a random walk with one spike.
    std::vector<an::SeriesPoint> s(10'000'000);
    uint64_t x = 88172645463325252ULL;
    int64_t v = 1 << 30;
    for (size_t i = 0; i < s.size(); ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      v = std::max<int64_t>(0, v + int64_t(x % 8193) - 4096);
      s[i] = {int64_t(i) * 1000000, v, v + 100, v - 100};
    }
    s[7'654'321].max = int64_t(1) << 40;
    best = 1e300;
    an::Curve d;
    for (int r = 0; r < runs; ++r) {
      auto t0 = Clock::now();
      d = an::downsample(s, 0, INT64_MAX, points, an::ExactPeak{s[7'654'321].t_ns + 5, int64_t(1) << 40});
      best = std::min(best, msSince(t0));
    }
    bool spike = d.exact_peak && d.peak_bytes == int64_t(1) << 40 && d.peak_ns == s[7'654'321].t_ns + 5;
    std::printf("synthetic: %zu buckets -> %zu points in %.2f ms (best of %d); spike %s\n", s.size(),
                d.points.size(), best, runs, spike ? "kept" : "LOST");
    return kept && spike ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
