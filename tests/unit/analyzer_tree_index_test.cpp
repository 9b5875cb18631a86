// TreeIndex (analyzer/tree_index.h): the trees, caller/callee and size histogram of a time range,
// re-costed on the whole run's tree shapes, equal what is built from scratch for that range, and
// what a plain fold of each site's stack gives. On real recordings: three_phases (100, 300 and
// 50 MiB from ramp() in three phases), demo_leaky_peaky, mmap_leak (heap and mmap spaces),
// pool_arena (two pools), and
// samples/python/deep_paths.py under Debian's CPython (128 distinct Python paths ~40 frames deep).
#include <algorithm>
#include <filesystem>
#include <map>

#include "analyzer/analyzer.h"
#include "analyzer/call_tree.h"
#include "analyzer/live_set.h"
#include "analyzer/size_histogram.h"
#include "analyzer/sql.h"
#include "analyzer/tree_index.h"
#include "analyzer_fixture.h"
#include "analyzer_sample_recording.h"
#include "analyzer_tree_expect.h"

using namespace memledger::analyzer;

namespace {

using memledger::testing::expectSameSymbol;
using memledger::testing::sameCost;
const auto& kMetrics = memledger::testing::kTreeMetrics;

// The collapsed stacks of `costs` by folding each site's frames directly (no tree at all).
std::vector<std::string> folded(const Recording& rec, const std::vector<SiteCost>& costs, TreeDirection direction,
                                const std::optional<std::string>& space, TreeMetric metric) {
  std::map<std::string, int64_t> sums;
  std::vector<const Frame*> frames;
  for (const SiteCost& c : costs) {
    if (space && c.space != *space) continue;
    rec.stackFrames(c.stack_id, &frames);
    if (direction == TreeDirection::TopDown) std::reverse(frames.begin(), frames.end());
    std::string path;
    for (const Frame* f : frames) path += (path.empty() ? "" : ";") + treeSymbol(*f);
    sums[path] += costOf(c.cost, metric);
  }
  std::vector<std::string> out;
  for (const auto& [path, v] : sums)
    if (!path.empty() && v > 0) out.push_back(path + " " + std::to_string(v));
  std::sort(out.begin(), out.end());
  return out;
}

// callerCallee() as its definition reads: per stack, the innermost frame's symbol gets self, every
// symbol on it inclusive once, every caller->callee pair on it once.
std::map<std::string, SymbolCost> plainCallerCallee(const Recording& rec, const std::vector<SiteCost>& costs,
                                                    const std::optional<std::string>& space) {
  std::map<std::string, SymbolCost> out;
  std::vector<const Frame*> frames;
  for (const SiteCost& c : costs) {
    if (space && c.space != *space) continue;
    rec.stackFrames(c.stack_id, &frames);
    std::vector<std::string> names;
    for (const Frame* f : frames) names.push_back(treeSymbol(*f));
    std::set<std::string> seen;
    std::set<std::pair<std::string, std::string>> edges;
    for (size_t i = 0; i < names.size(); ++i) {
      SymbolCost& s = out[names[i]];
      s.symbol = names[i];
      if (i == 0) s.self += c.cost;
      if (seen.insert(names[i]).second) s.inclusive += c.cost;
      if (i + 1 < names.size() && edges.insert({names[i + 1], names[i]}).second) {
        s.callers[names[i + 1]] += c.cost;
        out[names[i + 1]].callees[names[i]] += c.cost;
      }
    }
  }
  return out;
}

// Every node's total covers its children's (its self, the rest, is never negative in a tree of
// one recording); each node but the root is the child of exactly one node, in its parent's slice
// at its row; children are ordered.
void expectConsistent(const CallTree& t) {
  std::vector<int> seen(t.nodes.size(), 0);
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const std::span<const int32_t> kids = t.children(int32_t(k));
    for (size_t i = 0; i < kids.size(); ++i) {
      const CallNode& child = t.nodes[size_t(kids[i])];
      ++seen[size_t(kids[i])];
      EXPECT_EQ(child.parent, int32_t(k));
      EXPECT_EQ(size_t(child.row), i);
    }
    const TreeCost self = t.self(int32_t(k));
    EXPECT_TRUE(self.peak >= 0 && self.leaked >= 0 && self.allocated >= 0 && self.count >= 0 && self.temporary >= 0)
        << t.symbol(int32_t(k));
    for (size_t i = 1; i < kids.size(); ++i)
      EXPECT_GE(t.nodes[size_t(kids[i - 1])].total.allocated, t.nodes[size_t(kids[i])].total.allocated);
  }
  for (size_t k = 0; k < t.nodes.size(); ++k) EXPECT_EQ(seen[k], k == 0 ? 0 : 1) << k;
  EXPECT_EQ(t.child_ids.size(), t.nodes.empty() ? 0 : t.nodes.size() - 1);
}

// Everything a range gives, re-costed on `index`, against a build from scratch and the plain folds.
void expectSameAsScratch(const Recording& rec, const TreeIndex& index, std::optional<int64_t> from,
                         std::optional<int64_t> to, const std::optional<std::string>& space) {
  SCOPED_TRACE("range " + std::to_string(from.value_or(-1)) + ".." + std::to_string(to.value_or(-1)) + " space " +
               space.value_or("(all)"));
  const std::vector<SiteCost> scratch = siteCosts(rec, from, to);
  const std::vector<TreeCost> costs = index.costs(rec, from, to);
  const std::vector<SiteCost> indexed = index.siteCosts(costs);
  ASSERT_EQ(indexed.size(), scratch.size());
  for (size_t i = 0; i < scratch.size(); ++i) {
    EXPECT_EQ(indexed[i].stack_id, scratch[i].stack_id);
    EXPECT_EQ(indexed[i].kind, scratch[i].kind);
    EXPECT_TRUE(sameCost(indexed[i].cost, scratch[i].cost)) << "site " << scratch[i].stack_id;
  }
  const SiteFrames frames = siteFrames(rec, scratch);
  TreeIndex::Trees trees = index.trees(costs, space);
  for (TreeDirection d : {TreeDirection::TopDown, TreeDirection::BottomUp}) {
    const CallTree& fast = d == TreeDirection::TopDown ? trees.top_down : trees.bottom_up;
    const CallTree slow = buildCallTree(scratch, frames, d, space);
    EXPECT_EQ(fast.nodes.size(), slow.nodes.size());
    EXPECT_TRUE(sameCost(fast.nodes[0].total, slow.nodes[0].total));
    expectConsistent(fast);
    for (TreeMetric m : kMetrics) {
      std::vector<std::string> lines = collapsedStacks(fast, m);
      EXPECT_EQ(lines, collapsedStacks(slow, m)) << treeMetricName(m);
      EXPECT_EQ(lines, folded(rec, scratch, d, space, m)) << treeMetricName(m);
    }
  }
  std::map<std::string, SymbolCost> plain = plainCallerCallee(rec, scratch, space);
  ASSERT_EQ(trees.symbols.size(), plain.size());
  for (size_t i = 0; i < trees.symbols.size(); ++i) {
    const SymbolCost& s = trees.symbols[i];
    if (i > 0) {
      EXPECT_GE(trees.symbols[i - 1].inclusive.allocated, s.inclusive.allocated);
    }
    const SymbolCost& p = plain.at(s.symbol);
    expectSameSymbol(s, p);
  }
  // The Sizes view's histogram from the same site list, against one that reads the sites again.
  SizeHistogram fromSites = sizeHistogram(rec, indexed, from, to, 5);
  SizeHistogram read = sizeHistogram(rec, Filter{.t_from_ns = from, .t_to_ns = to}, 5);
  EXPECT_EQ(fromSites.count, read.count);
  EXPECT_EQ(fromSites.bytes, read.bytes);
  EXPECT_EQ(fromSites.estimated_count, read.estimated_count);
  ASSERT_EQ(fromSites.buckets.size(), read.buckets.size());
  // ... and from the index's sites with the range's costs apart (the GUI's way): the same.
  SizeHistogram fromCosts = sizeHistogram(rec, index.sites(), costs, from, to, 5);
  EXPECT_EQ(fromCosts.count, read.count);
  EXPECT_EQ(fromCosts.bytes, read.bytes);
  ASSERT_EQ(fromCosts.buckets.size(), read.buckets.size());
  for (size_t b = 0; b < read.buckets.size(); ++b) {
    EXPECT_EQ(fromCosts.buckets[b].site_count, read.buckets[b].site_count);
    ASSERT_EQ(fromCosts.buckets[b].sites.size(), read.buckets[b].sites.size());
    for (size_t k = 0; k < read.buckets[b].sites.size(); ++k)
      EXPECT_EQ(fromCosts.buckets[b].sites[k].stack_id, read.buckets[b].sites[k].stack_id);
  }
  for (size_t b = 0; b < read.buckets.size(); ++b) {
    EXPECT_EQ(fromSites.buckets[b].from, read.buckets[b].from);
    EXPECT_EQ(fromSites.buckets[b].count, read.buckets[b].count);
    EXPECT_EQ(fromSites.buckets[b].bytes, read.buckets[b].bytes);
    EXPECT_EQ(fromSites.buckets[b].site_count, read.buckets[b].site_count);
    ASSERT_EQ(fromSites.buckets[b].sites.size(), read.buckets[b].sites.size());
    for (size_t k = 0; k < read.buckets[b].sites.size(); ++k)
      EXPECT_EQ(fromSites.buckets[b].sites[k].stack_id, read.buckets[b].sites[k].stack_id);
  }
}

// The whole run, its first, middle and last thirds and a sliver, in every space and all of them.
void expectRangesSameAsScratch(const Recording& rec) {
  std::shared_ptr<const TreeIndex> index = TreeIndex::build(rec);
  const int64_t end = std::max<int64_t>(rec.info().duration_ns, 3);
  std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> ranges = {
      {std::nullopt, std::nullopt}, {0, end / 3}, {end / 3, 2 * end / 3}, {2 * end / 3, std::nullopt},
      {end / 2, end / 2 + end / 50}};
  std::vector<std::optional<std::string>> spaces = {std::nullopt};
  for (const std::string& s : index->spaces()) spaces.push_back(s);
  for (const auto& [from, to] : ranges)
    for (const auto& space : spaces) expectSameAsScratch(rec, *index, from, to, space);
}

}  // namespace

TEST(AnalyzerTreeIndex, RangesEqualTreesFromScratchOnSamples) {
  // pool_arena: the sites of two pools ("custom", "tensors") beside the heap's.
  for (const char* sample : {"three_phases", "demo_leaky_peaky", "mmap_leak", "pool_arena"}) {
    SCOPED_TRACE(sample);
    std::string why;
    std::string path = memledger::testing::sampleRecording(sample, &why);
    if (path.empty()) GTEST_SKIP() << why;
    Recording rec = Recording::open(path);
    expectRangesSameAsScratch(rec);
  }
}

TEST(AnalyzerTreeIndex, ThreePhasesMiddlePhaseReCosted) {
  std::string why;
  std::string path = memledger::testing::sampleRecording("three_phases", &why);
  if (path.empty()) GTEST_SKIP() << why;
  Recording rec = Recording::open(path);
  std::shared_ptr<const TreeIndex> index = TreeIndex::build(rec);
  std::vector<Phase> ph = phases(rec);
  ASSERT_EQ(ph.size(), 3u);
  // Phase 2 alone: its 300 blocks of 1 MiB from ramp(), nothing of phases 1 and 3.
  CallTree mid = index->tree(index->costs(rec, ph[1].start_ns, ph[1].end_ns - 1), TreeDirection::TopDown, "heap");
  std::vector<std::string> lines = collapsedStacks(mid, TreeMetric::Allocated);
  const std::string want = ";main;phase;ramp 314572800";
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.size() > want.size() && l.compare(l.size() - want.size(), want.size(), want) == 0;
  })) << ::testing::PrintToString(lines);
  EXPECT_EQ(mid.nodes[0].total.count, 300);
  EXPECT_EQ(mid.nodes[0].total.leaked, 0);
  // The whole run again from the same index: 450 blocks, 450 MiB.
  CallTree all = index->tree(index->costs(rec, std::nullopt, std::nullopt), TreeDirection::TopDown, "heap");
  EXPECT_EQ(all.nodes[0].total.allocated, totals(rec).allocated_bytes);
  // Costs not one per site are refused.
  EXPECT_THROW(index->tree({}, TreeDirection::TopDown), std::invalid_argument);
  QueryControl cancelled;
  cancelled.cancel();
  EXPECT_THROW(TreeIndex::build(rec, cancelled), Cancelled);
}

// The GUI's ranges put the range's own peak or a live-at instant (analyzer/live_set.h) into the
// range's site list before the trees: mapped back onto the index, the trees equal those built from
// scratch from that list. Ranges: each phase, and from each site's first allocation to the end.
// demo_leaky_peaky's range from the last site's (printf's buffer) holds fill_cache's and
// load_config's leaked blocks, bigger sites the live set adds after the range's own, out of the
// index's order (sites by amount).
TEST(AnalyzerTreeIndex, LiveSetsReCostedEqualTreesFromScratch) {
  size_t outOfOrder = 0;
  for (const char* sample : {"three_phases", "demo_leaky_peaky"}) {
    SCOPED_TRACE(sample);
    std::string why;
    std::string path = memledger::testing::sampleRecording(sample, &why);
    if (path.empty()) GTEST_SKIP() << why;
    Recording rec = Recording::open(path);
    std::shared_ptr<const TreeIndex> index = TreeIndex::build(rec);
    auto position = [&](const SiteCost& c) {
      const std::vector<SiteCost>& all = index->sites();
      return std::find_if(all.begin(), all.end(), [&](const SiteCost& s) {
               return s.stack_id == c.stack_id && s.image_id == c.image_id && s.kind == c.kind;
             }) - all.begin();
    };
    std::vector<Phase> ranges = phases(rec);
    ASSERT_EQ(ranges.size(), 3u);
    const int64_t end = ranges.back().end_ns;
    {
      detail::Statement q(rec, "SELECT stack_id, min(t_alloc) FROM allocations GROUP BY stack_id");
      while (q.step()) {
        Phase from;
        from.name = "from stack " + std::to_string(q.i64(0));
        from.start_ns = q.i64(1);
        from.end_ns = end + 1;
        ranges.push_back(from);
      }
    }
    for (const Phase& p : ranges) {
      for (bool at : {false, true}) {
        LiveSet live = at ? liveAt(rec, (p.start_ns + p.end_ns) / 2) : rangePeak(rec, p.start_ns, p.end_ns - 1);
        ASSERT_TRUE(live.available) << live.unavailable;
        std::vector<SiteCost> list = index->siteCosts(index->costs(rec, p.start_ns, p.end_ns - 1));
        applyLiveSet(list, live);
        for (size_t i = 1; i < list.size(); ++i)
          if (position(list[i]) < position(list[i - 1])) ++outOfOrder;
        std::optional<std::vector<TreeCost>> mapped = index->costsOf(list);
        ASSERT_TRUE(mapped.has_value()) << p.name;
        const SiteFrames frames = siteFrames(rec, list);
        for (TreeDirection d : {TreeDirection::TopDown, TreeDirection::BottomUp})
          for (TreeMetric m : kMetrics)
            EXPECT_EQ(collapsedStacks(index->tree(*mapped, d, "heap"), m),
                      collapsedStacks(buildCallTree(list, frames, d, std::string("heap")), m))
                << p.name << (at ? " live at its middle " : " its peak ") << treeMetricName(m);
        // The same applied on the index's costs (applyLive(), what the GUI does): the same costs.
        LiveSet bySite = at ? liveAt(rec, (p.start_ns + p.end_ns) / 2, true) : rangePeak(rec, p.start_ns, p.end_ns - 1, nullptr, true);
        EXPECT_TRUE(bySite.sites.empty());
        ASSERT_EQ(bySite.spaces.size(), live.spaces.size());
        for (size_t k = 0; k < live.spaces.size(); ++k) EXPECT_EQ(bySite.spaces[k].bytes, live.spaces[k].bytes);
        std::vector<TreeCost> direct = index->costs(rec, p.start_ns, p.end_ns - 1);
        ASSERT_TRUE(index->applyLive(rec, direct, bySite)) << p.name;
        for (size_t i = 0; i < direct.size(); ++i) {
          const TreeCost &x = direct[i], &y = (*mapped)[i];
          EXPECT_TRUE(x.peak == y.peak && x.leaked == y.leaked && x.allocated == y.allocated && x.count == y.count &&
                      x.temporary == y.temporary)
              << p.name << " site " << i;
        }
      }
    }
    // A site the index does not have: none.
    std::vector<SiteCost> foreign = index->siteCosts(index->costs(rec, std::nullopt, std::nullopt));
    foreign.push_back(foreign.front());
    foreign.back().stack_id = -42;
    EXPECT_FALSE(index->costsOf(foreign).has_value());
  }
  EXPECT_GT(outOfOrder, 0u) << "a live set added a site out of the index's order";
}

TEST(AnalyzerTreeIndex, DeepPythonPathsEqualTreesFromScratch) {
  std::string why;
  std::string path = memledger::testing::pythonRecording("deep_paths.py", "7", &why);
  if (path.empty()) GTEST_SKIP() << why;
  Recording rec = Recording::open(path);
  std::shared_ptr<const TreeIndex> index = TreeIndex::build(rec);
  // 128 paths, each its own `leaf` node in the top-down tree of the heap, under 24 `pad` frames.
  CallTree down = index->tree(index->costs(rec, std::nullopt, std::nullopt), TreeDirection::TopDown, "heap");
  size_t leaves = 0, deepest = 0;
  for (const CallNode& n : down.nodes) {
    if (down.symbol(n) != "leaf") continue;
    ++leaves;
    size_t depth = 0;
    for (int32_t p = n.parent; p > 0; p = down.nodes[size_t(p)].parent) ++depth;
    deepest = std::max(deepest, depth);
  }
  EXPECT_EQ(leaves, 128u);
  EXPECT_GE(deepest, 24u + 7u);
  expectRangesSameAsScratch(rec);
}

// A tree that was never made (a GUI range's tree no view asked for) has no nodes, not even a root:
// its collapsed stacks are none, not a read past the end.
TEST(AnalyzerTreeIndex, EmptyTreeHasNoCollapsedStacks) {
  CallTree empty;
  for (TreeMetric m : kMetrics) EXPECT_TRUE(collapsedStacks(empty, m).empty());
}
