// The charts, live sets and difference trees over real recordings (analyzer/site_chart.h,
// analyzer/live_set.h, analyzer/tree_diff.h): samples/three_phases.c ramps 100, 300 and 50 MiB
// from ramp() and frees each phase before the next; demo_leaky_peaky.c holds 64 x 1 MiB in
// build_index, leaks 3 x 256 B (load_config) and 20 x 1 KiB (fill_cache); ci_leaky.c leaks
// 10 x 1000 B (ci_leak_block) or holds a peak (ci_hold_peak).
#include <algorithm>

#include "analyzer/analyzer.h"
#include "analyzer/call_tree.h"
#include "analyzer/live_set.h"
#include "analyzer/series_set.h"
#include "analyzer/site_chart.h"
#include "analyzer/tree_diff.h"
#include "analyzer_fixture.h"
#include "analyzer_sample_recording.h"

using namespace memledger::analyzer;

namespace {
constexpr int64_t kMiB = 1 << 20;

const ChartSeries* seriesOf(const Chart& chart, const std::string& label) {
  for (const ChartSeries& s : chart.series)
    if (s.label == label) return &s;
  return nullptr;
}
// A series' last value; INT64_MIN when the chart has no such series (the expectation then fails).
int64_t lastOf(const Chart& chart, const std::string& label) {
  const ChartSeries* s = seriesOf(chart, label);
  return s && !s->values.empty() ? s->values.back() : INT64_MIN;
}
int64_t maxOf(const std::vector<int64_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
int64_t minOf(const std::vector<int64_t>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

const LiveSite* liveOf(const Recording& rec, const LiveSet& live, const std::string& function) {
  for (const LiveSite& s : live.sites) {
    const Stack& st = rec.stack(s.stack_id);
    if (!st.empty() && st.front().function == function) return &s;
  }
  return nullptr;
}

// The lines of collapsed stacks ending with `suffix` (the C runtime's frames above main differ).
using memledger::testing::hasLine;

using memledger::testing::recordingOf;
}  // namespace

// Every chart of three_phases: ramp() made 450 blocks, 450 MiB; it held 300 MiB at most and
// nothing at the end; the Consumed total is the heap curve at every point.
TEST(AnalyzerSiteChart, ThreePhasesWholeRun) {
  std::string path = recordingOf("three_phases");
  if (path.empty()) return;
  Recording rec = Recording::open(path);
  ChartRequest req;
  req.max_points = 100000;  // finer than the buckets: every bucket end is a point
  SiteCharts charts = siteCharts(rec, req);
  ASSERT_EQ(charts.t_ns.size(), charts[ChartKind::Consumed].total.size());
  for (ChartKind k : {ChartKind::Consumed, ChartKind::Allocations, ChartKind::Allocated, ChartKind::Temporary})
    EXPECT_TRUE(charts[k].available) << chartKindName(k) << ": " << charts[k].unavailable;
  const ChartSeries* allocs = seriesOf(charts[ChartKind::Allocations], "ramp");
  const ChartSeries* bytes = seriesOf(charts[ChartKind::Allocated], "ramp");
  const ChartSeries* live = seriesOf(charts[ChartKind::Consumed], "ramp");
  ASSERT_TRUE(allocs && bytes && live);
  EXPECT_EQ(charts[ChartKind::Allocations].series.front().label, "ramp");  // the most allocations
  EXPECT_EQ(allocs->values.back(), 450);
  EXPECT_EQ(bytes->values.back(), 471859200);
  EXPECT_EQ(maxOf(live->values), 314572800);  // the peak: 300 blocks held over the 5 ms pause
  EXPECT_EQ(live->values.back(), 0);
  EXPECT_EQ(charts[ChartKind::Consumed].series.front().label, "ramp");
  // Of ramp's frees only each phase's last block is a temporary: release() frees it last, and
  // nothing was allocated between its malloc and its free (the pause allocates nothing).
  ASSERT_TRUE(seriesOf(charts[ChartKind::Temporary], "ramp"));
  EXPECT_EQ(lastOf(charts[ChartKind::Temporary], "ramp"), 3);

  // The Consumed total at each point is the heap curve's value after the last bucket before it.
  std::vector<NamedSeries> series = memorySeries(rec);
  const std::vector<SeriesPoint>& heap = series[0].series.points;
  size_t checked = 0;
  for (size_t k = 0; k < charts.t_ns.size(); ++k) {
    auto it = std::lower_bound(heap.begin(), heap.end(), charts.t_ns[k],
                               [](const SeriesPoint& p, int64_t t) { return p.t_ns < t; });
    int64_t curve = it == heap.begin() ? 0 : std::prev(it)->value;
    if (charts[ChartKind::Consumed].total[k] != curve) {
      ADD_FAILURE() << "point " << k << " at " << charts.t_ns[k] << ": chart " << charts[ChartKind::Consumed].total[k]
                    << ", curve " << curve;
      break;
    }
    ++checked;
  }
  EXPECT_EQ(checked, charts.t_ns.size());

  // Fewer points than buckets: the same totals at the points kept, at most max_points + 1.
  req.max_points = 50;
  SiteCharts coarse = siteCharts(rec, req);
  EXPECT_LE(coarse.t_ns.size(), 51u);
  EXPECT_EQ(lastOf(coarse[ChartKind::Allocations], "ramp"), 450);
  // Top 0: only "other", which is the total.
  req.top = 0;
  SiteCharts none = siteCharts(rec, req);
  ASSERT_EQ(none[ChartKind::Allocated].series.size(), 1u);
  EXPECT_TRUE(none[ChartKind::Allocated].series[0].other);
  EXPECT_EQ(none[ChartKind::Allocated].series[0].values, none[ChartKind::Allocated].total);
}

// A window of phase 2: its 300 allocations are the difference of two points.
TEST(AnalyzerSiteChart, WindowOfOnePhase) {
  std::string path = recordingOf("three_phases");
  if (path.empty()) return;
  Recording rec = Recording::open(path);
  std::vector<Phase> ph = phases(rec);
  ASSERT_EQ(ph.size(), 3u);
  ChartRequest req;
  req.from_ns = ph[1].start_ns;
  req.to_ns = ph[1].end_ns;
  req.max_points = 200;
  SiteCharts charts = siteCharts(rec, req);
  EXPECT_EQ(charts.t_ns.front(), ph[1].start_ns);
  EXPECT_EQ(charts.t_ns.back(), ph[1].end_ns);
  const ChartSeries* allocs = seriesOf(charts[ChartKind::Allocations], "ramp");
  ASSERT_TRUE(allocs);
  EXPECT_EQ(allocs->values.front(), 100);  // phase 1's, made before the window
  EXPECT_EQ(allocs->values.back() - allocs->values.front(), 300);
  ASSERT_TRUE(seriesOf(charts[ChartKind::Consumed], "ramp"));
  EXPECT_EQ(maxOf(seriesOf(charts[ChartKind::Consumed], "ramp")->values), 314572800);
}

// demo_leaky_peaky: build_index held up to 64 MiB and nothing at the end; the leaks stay.
TEST(AnalyzerSiteChart, DemoConsumedByFunction) {
  std::string path = recordingOf("demo_leaky_peaky");
  if (path.empty()) return;
  Recording rec = Recording::open(path);
  ChartRequest req;
  req.max_points = 100000;
  SiteCharts charts = siteCharts(rec, req);
  const Chart& consumed = charts[ChartKind::Consumed];
  ASSERT_TRUE(seriesOf(consumed, "build_index") && seriesOf(consumed, "fill_cache") && seriesOf(consumed, "load_config"));
  // build_index frees its blocks right after allocating them (no pause): at bucket ends it held
  // at most all 64; with load_config's 768 B that is the heap curve's highest bucket end.
  const int64_t index = maxOf(seriesOf(consumed, "build_index")->values);
  EXPECT_LE(index, 64 * kMiB);
  EXPECT_EQ(index % kMiB, 0);
  int64_t highest = 0;
  const std::vector<NamedSeries> series = memorySeries(rec);
  for (const SeriesPoint& p : series[0].series.points) highest = std::max(highest, p.value);
  EXPECT_EQ(index + 768, highest);
  EXPECT_EQ(lastOf(consumed, "build_index"), 0);
  EXPECT_EQ(lastOf(consumed, "fill_cache"), 20480);
  EXPECT_EQ(lastOf(consumed, "load_config"), 768);
  EXPECT_EQ(lastOf(charts[ChartKind::Allocations], "build_index"), 64);
  // By site: the same amounts, each site on its own.
  req.group = ChartGroup::Site;
  SiteCharts bySite = siteCharts(rec, req);
  bool found = false;
  for (const ChartSeries& s : bySite[ChartKind::Consumed].series)
    if (s.label.rfind("fill_cache \u2190 main", 0) == 0) {
      found = true;
      EXPECT_EQ(s.values.back(), 20480);
    }
  EXPECT_TRUE(found);
}

// The peak inside a range: phase 1's 100 MiB and phase 3's 50 MiB were held at bucket ends (the
// 5 ms pause), so their live sets are exact; phase 2 holds the run's own peak.
TEST(AnalyzerLiveSet, RangePeakOfEachPhase) {
  std::string path = recordingOf("three_phases");
  if (path.empty()) return;
  Recording rec = Recording::open(path);
  std::vector<Phase> ph = phases(rec);
  ASSERT_EQ(ph.size(), 3u);
  const int64_t expect[] = {100 * kMiB, 300 * kMiB, 50 * kMiB};
  for (size_t i = 0; i < 3; ++i) {
    LiveSet live = rangePeak(rec, ph[i].start_ns, ph[i].end_ns - 1);
    ASSERT_TRUE(live.available) << live.unavailable;
    const SpaceLive* heap = live.space("heap");
    ASSERT_TRUE(heap);
    EXPECT_EQ(heap->peak_bytes, expect[i]) << "phase " << i;
    EXPECT_TRUE(heap->exact) << "phase " << i;
    EXPECT_EQ(heap->basis, i == 1 ? LiveBasis::WholeRunPeak : LiveBasis::BucketEnd);
    const LiveSite* ramp = liveOf(rec, live, "ramp");
    ASSERT_TRUE(ramp) << "phase " << i;
    EXPECT_EQ(ramp->bytes, expect[i]);
    EXPECT_EQ(ramp->count, expect[i] / kMiB);
    EXPECT_GE(heap->at_ns, ph[i].start_ns);
    EXPECT_LE(heap->at_ns, ph[i].end_ns);
    // What the trees show: ramp's peak in the range, nothing else of the program.
    std::vector<SiteCost> costs = siteCosts(rec, ph[i].start_ns, ph[i].end_ns - 1);
    applyLiveSet(costs, live);
    CallTree tree = buildCallTree(rec, costs, TreeDirection::TopDown, std::string("heap"));
    EXPECT_TRUE(hasLine(collapsedStacks(tree, TreeMetric::Peak), ";main;phase;ramp " + std::to_string(expect[i])));
    // The range's temporaries: the phase's last block (the run has 3).
    EXPECT_TRUE(hasLine(collapsedStacks(tree, TreeMetric::Temporary), ";main;phase;ramp 1"));
  }
  // The live set at phase 1's peak instant, asked as a time: the same 100 blocks.
  LiveSet first = rangePeak(rec, ph[0].start_ns, ph[0].end_ns - 1);
  LiveSet at = liveAt(rec, first.space("heap")->at_ns);
  ASSERT_TRUE(liveOf(rec, at, "ramp"));
  EXPECT_EQ(liveOf(rec, at, "ramp")->bytes, 100 * kMiB);
  EXPECT_EQ(at.space("heap")->basis, LiveBasis::Instant);
}

// The live set at a chosen time: at the heap's exact peak ramp holds its 300 blocks (the answer
// is that of the peak's bucket end, which is still in the pause); after the run only the leaks.
TEST(AnalyzerLiveSet, LiveAtChosenTimes) {
  std::string path = recordingOf("three_phases");
  if (path.empty()) return;
  Recording rec = Recording::open(path);
  Peak p = peak(rec);
  ASSERT_EQ(p.bytes, 300 * kMiB);
  LiveSet live = liveAt(rec, p.time_ns + 1);
  ASSERT_TRUE(live.available);
  const LiveSite* ramp = liveOf(rec, live, "ramp");
  ASSERT_TRUE(ramp);
  EXPECT_EQ(ramp->bytes, 300 * kMiB);
  EXPECT_EQ(ramp->count, 300);
  const SpaceLive* heap = live.space("heap");
  ASSERT_TRUE(heap);
  EXPECT_EQ(heap->bytes, 300 * kMiB);
  EXPECT_LE(heap->at_ns - (p.time_ns + 1), rec.info().bucket_ns);
  // Before anything: nothing live.
  LiveSet before = liveAt(rec, 0);
  EXPECT_EQ(before.sites.size(), 0u);

  std::string demo = recordingOf("demo_leaky_peaky");
  if (demo.empty()) return;
  Recording d = Recording::open(demo);
  std::vector<Phase> ph = phases(d);
  ASSERT_EQ(ph.size(), 3u);  // load, index, serve
  // At the end of "index": build_index freed its 64 MiB, load_config's 768 B stay.
  LiveSet index = liveAt(d, ph[2].start_ns);
  EXPECT_EQ(liveOf(d, index, "build_index"), nullptr);
  ASSERT_TRUE(liveOf(d, index, "load_config"));
  EXPECT_EQ(liveOf(d, index, "load_config")->bytes, 768);
  EXPECT_EQ(liveOf(d, index, "load_config")->count, 3);
  // At the end: the leaks.
  LiveSet end = liveAt(d, d.info().duration_ns + 1);
  ASSERT_TRUE(liveOf(d, end, "fill_cache"));
  EXPECT_EQ(liveOf(d, end, "fill_cache")->bytes, 20480);
  EXPECT_EQ(liveOf(d, end, "load_config")->bytes, 768);
  // In the trees: the peak column becomes the live set (collapsed stacks "main;f 42").
  std::vector<SiteCost> costs = siteCosts(d);
  applyLiveSet(costs, end);
  CallTree tree = buildCallTree(d, costs, TreeDirection::TopDown, std::string("heap"));
  std::vector<std::string> lines = collapsedStacks(tree, TreeMetric::Peak);
  EXPECT_TRUE(hasLine(lines, ";main;fill_cache 20480"));
  EXPECT_TRUE(hasLine(lines, ";main;load_config 768"));
  EXPECT_FALSE(hasLine(lines, ";main;build_index 67108864"));
}

// ci_leaky leak 10 (A) against ci_leaky peak 4000000 (B): B − A per tree node and per chart series.
TEST(AnalyzerTreeDiff, LeakAgainstPeak) {
  std::string pa = recordingOf("ci_leaky", "leak 10"), pb = recordingOf("ci_leaky", "peak 4000000");
  if (pa.empty() || pb.empty()) return;
  Recording a = Recording::open(pa), b = Recording::open(pb);
  std::vector<SiteCost> ca = siteCosts(a), cb = siteCosts(b);
  SiteFrames fa = siteFrames(a, ca), fb = siteFrames(b, cb);
  // All three at once over one merge of the two recordings' frames (the GUI's B − A).
  DiffTrees all = diffTrees(ca, SiteFrames(fa), std::vector<SiteCost>(cb), SiteFrames(fb), std::string("heap"));
  const DiffTree& down = all.top_down;
  std::vector<std::string> leaked = collapsedChanges(down.tree, TreeMetric::Leaked);
  EXPECT_TRUE(hasLine(leaked, ";main;ci_leak_block -10000"));
  EXPECT_TRUE(hasLine(collapsedChanges(down.tree, TreeMetric::Count), ";main;ci_leak_block -10"));
  EXPECT_TRUE(hasLine(collapsedChanges(down.tree, TreeMetric::Count), ";main;ci_hold_peak 1"));
  EXPECT_TRUE(hasLine(collapsedChanges(down.tree, TreeMetric::Peak), ";main;ci_hold_peak 4000000"));
  EXPECT_TRUE(hasLine(collapsedChanges(down.tree, TreeMetric::Allocated), ";main;ci_hold_peak 4000000"));
  EXPECT_TRUE(hasLine(collapsedChanges(down.tree, TreeMetric::Allocated), ";main;ci_leak_block -10000"));
  // The root's net change is B's total minus A's; its magnitude counts growth and shrink alike.
  EXPECT_EQ(down.tree.nodes[0].total.leaked, b.info().complete ? leaks(b).bytes - leaks(a).bytes : 0);
  EXPECT_GE(down.change[0].allocated, 4000000 + 10000);
  EXPECT_EQ(down.change[0].allocated - std::llabs(down.tree.nodes[0].total.allocated) >= 2 * 10000, true);
  // Bottom-up: the allocating functions at the top, each with its own change.
  const DiffTree& up = all.bottom_up;
  int64_t leak = 0, hold = 0;
  for (int32_t c : up.tree.children(0)) {
    if (up.tree.symbol(c) == "ci_leak_block") leak = up.tree.nodes[size_t(c)].total.leaked;
    if (up.tree.symbol(c) == "ci_hold_peak") hold = up.tree.nodes[size_t(c)].total.peak;
  }
  EXPECT_EQ(leak, -10000);
  EXPECT_EQ(hold, 4000000);
  auto main = std::find_if(all.symbols.begin(), all.symbols.end(), [](const SymbolCost& s) { return s.symbol == "main"; });
  ASSERT_NE(main, all.symbols.end());
  EXPECT_EQ(main->callees.at("ci_leak_block").count, -10);
  EXPECT_EQ(main->callees.at("ci_hold_peak").allocated, 4000000);

  // The charts of the difference: allocated +4000000 from ci_hold_peak, -10000 from ci_leak_block
  // by the end; A's leaks held to the end: -10000 consumed.
  ChartRequest req;
  req.max_points = 500;
  SiteCharts charts = diffCharts(a, b, req);
  EXPECT_TRUE(charts.diff);
  const ChartSeries* hold4m = seriesOf(charts[ChartKind::Allocated], "ci_hold_peak");
  const ChartSeries* leak10 = seriesOf(charts[ChartKind::Allocated], "ci_leak_block");
  ASSERT_TRUE(hold4m && leak10);
  EXPECT_EQ(hold4m->values.back(), 4000000);
  EXPECT_EQ(leak10->values.back(), -10000);
  EXPECT_EQ(charts[ChartKind::Allocated].series.front().label, "ci_hold_peak");  // the largest change first
  EXPECT_EQ(lastOf(charts[ChartKind::Allocations], "ci_leak_block"), -10);
  const ChartSeries* consumed = seriesOf(charts[ChartKind::Consumed], "ci_leak_block");
  ASSERT_TRUE(consumed);
  EXPECT_EQ(consumed->values.back(), -10000);
  EXPECT_EQ(minOf(consumed->values), -10000);
}

// A version 6 file (the last without frees per bucket): its 4-varint entries still read, the
// allocations chart and a range's allocations from them; Consumed, Temporary and live sets are
// not available.
TEST(AnalyzerSiteChart, VersionSixReadsWithoutFrees) {
  memledger::testing::RecordingBuilder b("chart-v6.db");
  b.versionSix();
  b.process({});
  int64_t stack = b.stack(1, {{"six_alloc", "a.c", 1}});
  b.site({.stack = stack, .alloc_count = 5, .alloc_bytes = 500, .peak_count = 5, .peak_bytes = 500});
  b.siteActivity(1, 1000000, stack, 2, 200);
  b.siteActivity(1, 5000000, stack, 3, 300);
  Recording rec = Recording::open(b.finish());
  EXPECT_EQ(rec.info().schema_version, 6);
  ChartRequest req;
  req.to_ns = 10000000;
  req.max_points = 10;
  SiteCharts charts = siteCharts(rec, req);
  ASSERT_TRUE(charts[ChartKind::Allocations].available);
  EXPECT_EQ(charts[ChartKind::Allocations].total, (std::vector<int64_t>{0, 0, 2, 2, 2, 2, 5, 5, 5, 5, 5}));
  EXPECT_EQ(lastOf(charts[ChartKind::Allocated], "six_alloc"), 500);
  EXPECT_FALSE(charts[ChartKind::Consumed].available);
  EXPECT_NE(charts[ChartKind::Consumed].unavailable.find("schema 6"), std::string::npos);
  EXPECT_FALSE(charts[ChartKind::Temporary].available);
  EXPECT_FALSE(rangePeak(rec, 0, 3000000).available);
  std::vector<SiteCost> costs = siteCosts(rec, 0, 3000000);
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_EQ(costs[0].cost.count, 2);
  EXPECT_EQ(costs[0].cost.peak, 500);  // whole-run: the file cannot say more
}

// A file without frees per bucket (schema 6 and older): Consumed and Temporary are unavailable,
// Allocations stay; live sets are not available and change nothing.
TEST(AnalyzerSiteChart, OlderFilesHaveNoConsumed) {
  memledger::testing::RecordingBuilder b("chart-v3.db");
  b.process({});
  b.versionThree();
  int64_t stack = b.stack(1, {{"old_alloc", "a.c", 1}});
  b.site({.stack = stack, .alloc_count = 2, .alloc_bytes = 200, .peak_count = 2, .peak_bytes = 200});
  b.siteActivity(1, 1000, stack, 2, 200);
  std::string path = b.finish();
  Recording rec = Recording::open(path);
  SiteCharts charts = siteCharts(rec, ChartRequest{});
  EXPECT_FALSE(charts[ChartKind::Consumed].available);
  EXPECT_NE(charts[ChartKind::Consumed].unavailable.find("schema 3"), std::string::npos);
  EXPECT_FALSE(charts[ChartKind::Temporary].available);
  ASSERT_TRUE(charts[ChartKind::Allocations].available);
  EXPECT_EQ(charts[ChartKind::Allocations].total.back(), 2);
  LiveSet live = liveAt(rec, 5000);
  EXPECT_FALSE(live.available);
  std::vector<SiteCost> costs = siteCosts(rec);
  std::vector<SiteCost> before = costs;
  applyLiveSet(costs, live);
  EXPECT_EQ(costs.size(), before.size());
  EXPECT_EQ(costs[0].cost.peak, before[0].cost.peak);
}
