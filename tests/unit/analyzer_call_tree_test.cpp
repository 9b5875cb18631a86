// Call trees, caller/callee and every memory series of a real recording (analyzer/call_tree.h,
// analyzer/series_set.h): samples/three_phases.c allocates 100, 300 and 50 MiB from ramp(), one
// phase after another; demo_leaky_peaky.c holds 64 x 1 MiB in build_index at the peak.
#include <algorithm>

#include "analyzer/analyzer.h"
#include "analyzer/call_tree.h"
#include "analyzer/series_set.h"
#include "analyzer_fixture.h"
#include "analyzer_sample_recording.h"

using namespace memledger::analyzer;

namespace {
using memledger::testing::hasLine;
}  // namespace

TEST(AnalyzerCallTree, TopDownBottomUpAndRanges) {
  std::string why;
  std::string path = memledger::testing::sampleRecording("three_phases", &why);
  if (path.empty()) GTEST_SKIP() << why;
  Recording rec = Recording::open(path);
  std::vector<SiteCost> all = siteCosts(rec);
  CallTree down = buildCallTree(rec, all, TreeDirection::TopDown);
  EXPECT_TRUE(hasLine(collapsedStacks(down, TreeMetric::Allocated), ";main;phase;ramp 471859200"));
  EXPECT_TRUE(hasLine(collapsedStacks(down, TreeMetric::Count), ";main;phase;ramp 450"));
  EXPECT_EQ(down.nodes[0].total.allocated, totals(rec).allocated_bytes);
  CallTree up = buildCallTree(rec, all, TreeDirection::BottomUp);
  // Bottom-up: ramp at the top, called by phase, called by main.
  ASSERT_FALSE(up.children(0).empty());
  const int32_t ramp = up.children(0)[0];
  EXPECT_EQ(up.symbol(ramp), "ramp");
  EXPECT_EQ(up.nodes[size_t(ramp)].total.allocated, 471859200);
  ASSERT_FALSE(up.children(ramp).empty());
  EXPECT_EQ(up.symbol(up.children(ramp)[0]), "phase");

  // Phase 2 alone: its 300 blocks, nothing of phases 1 and 3.
  std::vector<Phase> ph = phases(rec);
  ASSERT_EQ(ph.size(), 3u);
  QueryControl control;
  double lastProgress = 0;
  control.progress = [&](double f) { lastProgress = f; };
  std::vector<SiteCost> mid = siteCosts(rec, ph[1].start_ns, ph[1].end_ns - 1, control);
  EXPECT_EQ(lastProgress, 1.0);
  CallTree midTree = buildCallTree(rec, mid, TreeDirection::TopDown);
  EXPECT_TRUE(hasLine(collapsedStacks(midTree, TreeMetric::Allocated), ";main;phase;ramp 314572800"));
  EXPECT_EQ(midTree.nodes[0].total.count, 300);
  EXPECT_EQ(midTree.nodes[0].total.leaked, 0);

  std::vector<SymbolCost> symbols = callerCallee(rec, all);
  auto phase = std::find_if(symbols.begin(), symbols.end(), [](const SymbolCost& s) { return s.symbol == "phase"; });
  ASSERT_NE(phase, symbols.end());
  EXPECT_EQ(phase->self.allocated, 0);
  EXPECT_EQ(phase->inclusive.allocated, 471859200);
  EXPECT_EQ(phase->callers.at("main").allocated, 471859200);
  EXPECT_EQ(phase->callees.at("ramp").count, 450);

  QueryControl cancelled;
  cancelled.cancel();
  EXPECT_THROW(siteCosts(rec, {}, {}, cancelled), Cancelled);
}

TEST(AnalyzerCallTree, MemorySeriesCarryExactPeaks) {
  std::string why;
  std::string path = memledger::testing::sampleRecording("demo_leaky_peaky", &why);
  if (path.empty()) GTEST_SKIP() << why;
  Recording rec = Recording::open(path);
  std::vector<NamedSeries> series = memorySeries(rec);
  ASSERT_GE(series.size(), 2u);
  EXPECT_EQ(series[0].name, "heap");
  EXPECT_EQ(series[1].name, "mmap");
  ASSERT_TRUE(series[0].series.exact_peak);
  Peak p = peak(rec);
  EXPECT_EQ(series[0].series.exact_peak->bytes, p.bytes);
  EXPECT_EQ(series[0].series.exact_peak->t_ns, p.time_ns);
  // The same heap series as curve.h serves one by one.
  Series heap = heapSeries(rec, std::nullopt);
  ASSERT_EQ(heap.points.size(), series[0].series.points.size());
  for (size_t i = 0; i < heap.points.size(); ++i) EXPECT_EQ(heap.points[i].max, series[0].series.points[i].max);
  auto rss = std::find_if(series.begin(), series.end(), [](const NamedSeries& s) { return s.name == "rss"; });
  if (rss != series.end()) {
    ASSERT_TRUE(rss->series.exact_peak);
    EXPECT_GT(rss->series.exact_peak->bytes, 0);
  }
}

TEST(AnalyzerCallTree, OneSpaceAtATime) {
  // samples/mmap_leak.c: map_regions leaks 98304 bytes of mmap; printf's buffer 4096 of heap.
  std::string why;
  std::string path = memledger::testing::sampleRecording("mmap_leak", &why);
  if (path.empty()) GTEST_SKIP() << why;
  Recording rec = Recording::open(path);
  std::vector<SiteCost> all = siteCosts(rec);
  CallTree mmap = buildCallTree(rec, all, TreeDirection::TopDown, std::string("mmap"));
  EXPECT_EQ(collapsedStacks(mmap, TreeMetric::Leaked).size(), 1u);
  EXPECT_TRUE(hasLine(collapsedStacks(mmap, TreeMetric::Leaked), ";main;map_regions 98304"));
  EXPECT_EQ(mmap.nodes[0].total.peak, 196608);  // 3 x 64 KiB live at the mmap peak
  CallTree heap = buildCallTree(rec, all, TreeDirection::TopDown, std::string("heap"));
  EXPECT_FALSE(hasLine(collapsedStacks(heap, TreeMetric::Leaked), ";main;map_regions 98304"));
  CallTree both = buildCallTree(rec, all, TreeDirection::TopDown);
  EXPECT_EQ(both.nodes[0].total.leaked, heap.nodes[0].total.leaked + mmap.nodes[0].total.leaked);
  std::vector<SymbolCost> symbols = callerCallee(rec, all, std::string("mmap"));
  ASSERT_FALSE(symbols.empty());
  EXPECT_EQ(symbols.front().inclusive.leaked, 98304);
}
