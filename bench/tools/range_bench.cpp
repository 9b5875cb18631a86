// Times what the GUI computes for a time range of a recording on its tree index, step by step, in
// the process's CPU time (the trees use a second thread; gui/document_jobs.cpp's computeRange() for A alone, the steps run
// one after another here): the range's leaks, the costs, the range's peak, the live set applied,
// the trees, the Sizes histogram. The middle 10% and 50% of the run, R times each (after one
// unmeasured round); prints the best of each step. `--leaks` prints the 50% range's leak list
// instead (one line a site: what tests compare before and after a change of the leaks).
//   range_bench RECORDING [RUNS] [--leaks]
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <string>

#include "analyzer/analyzer.h"
#include "analyzer/live_set.h"
#include "analyzer/series_set.h"
#include "analyzer/size_histogram.h"
#include "analyzer/tree_index.h"

namespace an = memledger::analyzer;

static double cpuMs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: range_bench RECORDING [RUNS] [--leaks]\n");
    return 2;
  }
  const int runs = argc > 2 && std::strcmp(argv[2], "--leaks") ? std::atoi(argv[2]) : 3;
  bool leaksOnly = false;
  for (int i = 2; i < argc; ++i) leaksOnly = leaksOnly || !std::strcmp(argv[i], "--leaks");
  an::Recording rec = an::Recording::open(argv[1]);
  const std::vector<an::NamedSeries> series = an::memorySeries(rec);
  int64_t end = rec.info().duration_ns;
  for (const auto& s : series)
    if (!s.series.points.empty()) end = std::max(end, s.series.points.back().t_ns);
  an::prepareRanges(rec);
  if (leaksOnly) {
    an::Filter f;
    f.t_from_ns = end / 4;
    f.t_to_ns = end * 3 / 4;
    f.top = 1000;
    const an::Leaks l = an::leaks(rec, f);
    std::printf("count %lld bytes %lld sites %zu pool %lld %lld %zu python %lld left %lld %lld\n",
                (long long)l.count, (long long)l.bytes, l.site_count, (long long)l.pool_count,
                (long long)l.pool_bytes, l.pool_site_count, (long long)l.python_processes,
                (long long)l.finalization_left_count, (long long)l.finalization_left_bytes);
    for (const auto& k : l.kinds) std::printf("kind %lld %lld\n", (long long)k.count, (long long)k.bytes);
    for (const an::SiteAmount& s : l.sites) {
      std::printf("%lld %s %lld %lld %lld %d %s %s frames %zu", (long long)s.stack_id, s.kind.c_str(),
                  (long long)s.image_id, (long long)s.count, (long long)s.bytes, int(s.python_owned), s.origin.c_str(),
                  s.origin_reason.c_str(), s.stack.size());
      for (const auto& k : s.leak_kinds) std::printf(" %lld/%lld", (long long)k.count, (long long)k.bytes);
      std::printf("\n");
    }
    return 0;
  }
  double t0 = cpuMs();
  auto index = an::TreeIndex::build(rec);
  std::printf("index %.0f ms CPU, %zu sites, %zu / %zu nodes\n", cpuMs() - t0, index->siteCount(),
              index->nodeCount(an::TreeDirection::TopDown), index->nodeCount(an::TreeDirection::BottomUp));
  for (int pct : {10, 50}) {
    const int64_t from = end / 2 - end * pct / 200, to = end / 2 + end * pct / 200;
    double best[7];
    for (double& b : best) b = 1e18;
    for (int r = 0; r <= runs; ++r) {
      double t[8];
      an::Filter f;
      f.t_from_ns = from;
      f.t_to_ns = to;
      f.top = 1000;
      t[0] = cpuMs();
      an::Leaks leaks = an::leaks(rec, f);
      t[1] = cpuMs();
      std::vector<an::TreeCost> costs = index->costs(rec, from, to);
      t[2] = cpuMs();
      an::LiveSet live = an::rangePeak(rec, from, to, &series, true);
      t[3] = cpuMs();
      index->applyLive(rec, costs, live);
      t[4] = cpuMs();
      an::TreeIndex::Trees trees = index->trees(costs, std::string("heap"));
      t[5] = cpuMs();
      an::SizeHistogram sizes = an::sizeHistogram(rec, *index, costs, from, to, 10);
      t[6] = cpuMs();
      { an::TreeIndex::Trees gone = std::move(trees); }
      t[7] = cpuMs();
      if (r == 0) continue;  // the first round faults the memory in
      for (int k = 0; k < 7; ++k) best[k] = std::min(best[k], t[k + 1] - t[k]);
    }
    double sum = 0;
    for (double b : best) sum += b;
    std::printf("range %d%%: leaks %.1f costs %.1f peak %.1f applyLive %.1f trees %.1f sizes %.1f free %.1f; "
                "sum %.1f ms CPU (best of %d)\n",
                pct, best[0], best[1], best[2], best[3], best[4], best[5], best[6], sum, runs);
  }
  const struct mallinfo2 mi = mallinfo2();
  std::printf("heap in use %.1f MiB, arena %.1f MiB\n", mi.uordblks / 1048576.0, mi.arena / 1048576.0);
  return 0;
}
