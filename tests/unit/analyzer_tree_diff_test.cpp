// B − A from each recording's own tree index (diffTrees() of two TreeIndex::Trees, the GUI's
// compare) equals B − A from one merge of both recordings' sites (the from-scratch diffTrees()):
// every node's net change in every metric, both directions, each node's change magnitude and
// caller/callee per symbol and edge, for the whole run and for ranges, per space. On real pairs:
// ci_leaky leaking against ci_leaky peaking, three_phases against demo_leaky_peaky (different
// programs: most nodes on one side only), mmap_leak against pool_arena (spaces of one side only),
// a recording against itself (nothing changed), and two runs of samples/python/deep_paths.py
// with different depths under Debian's CPython (deep interpreter stacks that share a prefix).
#include <algorithm>
#include <map>

#include "analyzer/analyzer.h"
#include "analyzer/call_tree.h"
#include "analyzer/tree_diff.h"
#include "analyzer/tree_index.h"
#include "analyzer_fixture.h"
#include "analyzer_sample_recording.h"
#include "analyzer_tree_expect.h"

using namespace memledger::analyzer;

namespace {

using memledger::testing::expectSameSymbol;
using memledger::testing::recordingOf;
using memledger::testing::sameCost;
const auto& kMetrics = memledger::testing::kTreeMetrics;

std::string costText(const TreeCost& c) {
  return std::to_string(c.peak) + "/" + std::to_string(c.leaked) + "/" + std::to_string(c.allocated) + "/" +
         std::to_string(c.count) + "/" + std::to_string(c.temporary);
}

// Every node's path ("a;b;c") with its total and change magnitude: what the two ways must agree on.
std::map<std::string, std::string> paths(const DiffTree& t) {
  std::map<std::string, std::string> out;
  std::vector<std::string> path(t.tree.nodes.size());
  for (size_t k = 0; k < t.tree.nodes.size(); ++k) {
    const CallNode& n = t.tree.nodes[k];
    if (k > 0) {
      EXPECT_LT(n.parent, int32_t(k)) << "a parent is made before its children";
      path[k] = path[size_t(n.parent)] + ";" + t.tree.symbol(n);
    }
    EXPECT_TRUE(out.emplace(path[k], costText(n.total) + " change " + costText(t.change[k])).second)
        << "one node per path: " << path[k];
  }
  return out;
}

// Each node's children are a slice at their rows, in the trees' order (allocated descending, then symbol).
void expectOrdered(const CallTree& t) {
  size_t children = 0;
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const std::span<const int32_t> kids = t.children(int32_t(k));
    children += kids.size();
    for (size_t i = 0; i < kids.size(); ++i) {
      EXPECT_EQ(t.nodes[size_t(kids[i])].parent, int32_t(k));
      EXPECT_EQ(size_t(t.nodes[size_t(kids[i])].row), i);
      if (i == 0) continue;
      const CallNode &p = t.nodes[size_t(kids[i - 1])], &q = t.nodes[size_t(kids[i])];
      EXPECT_TRUE(p.total.allocated > q.total.allocated ||
                  (p.total.allocated == q.total.allocated && t.symbol(p) < t.symbol(q)));
    }
  }
  EXPECT_EQ(children, t.nodes.empty() ? 0 : t.nodes.size() - 1);
}

void expectSameDiff(const Recording& a, const TreeIndex& ia, const Recording& b, const TreeIndex& ib,
                    std::optional<int64_t> from, std::optional<int64_t> to, const std::optional<std::string>& space) {
  SCOPED_TRACE("range " + std::to_string(from.value_or(-1)) + ".." + std::to_string(to.value_or(-1)) + " space " +
               space.value_or("(all)"));
  std::vector<SiteCost> ca = siteCosts(a, from, to), cb = siteCosts(b, from, to);
  const DiffTrees scratch = diffTrees(ca, siteFrames(a, ca), std::vector<SiteCost>(cb), siteFrames(b, cb), space);
  const DiffTrees merged = diffTrees(ia.trees(ia.costs(a, from, to), space), ib.trees(ib.costs(b, from, to), space));
  for (auto [fast, slow] : {std::pair{&merged.top_down, &scratch.top_down}, {&merged.bottom_up, &scratch.bottom_up}}) {
    EXPECT_EQ(fast->tree.direction, slow->tree.direction);
    EXPECT_EQ(fast->tree.nodes.size(), slow->tree.nodes.size());
    EXPECT_EQ(paths(*fast), paths(*slow));
    expectOrdered(fast->tree);
    for (TreeMetric m : kMetrics)
      EXPECT_EQ(collapsedChanges(fast->tree, m), collapsedChanges(slow->tree, m)) << treeMetricName(m);
  }
  ASSERT_EQ(merged.symbols.size(), scratch.symbols.size());
  std::map<std::string, const SymbolCost*> bySymbol;
  for (const SymbolCost& s : scratch.symbols) bySymbol[s.symbol] = &s;
  for (size_t i = 0; i < merged.symbols.size(); ++i) {
    const SymbolCost& s = merged.symbols[i];
    if (i > 0) {
      const SymbolCost& p = merged.symbols[i - 1];
      EXPECT_TRUE(p.inclusive.allocated > s.inclusive.allocated ||
                  (p.inclusive.allocated == s.inclusive.allocated && p.symbol < s.symbol));
    }
    ASSERT_TRUE(bySymbol.count(s.symbol)) << s.symbol;
    const SymbolCost& p = *bySymbol[s.symbol];
    expectSameSymbol(s, p);
  }
}

// The whole run and thirds of the longer run, in every space of either side and all of them.
void expectSameDiffs(const std::string& pa, const std::string& pb) {
  SCOPED_TRACE(pa + " vs " + pb);
  Recording a = Recording::open(pa), b = Recording::open(pb);
  std::shared_ptr<const TreeIndex> ia = TreeIndex::build(a), ib = TreeIndex::build(b);
  const int64_t end = std::max<int64_t>({a.info().duration_ns, b.info().duration_ns, 3});
  std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> ranges = {
      {std::nullopt, std::nullopt}, {0, end / 3}, {end / 3, 2 * end / 3}, {2 * end / 3, std::nullopt}};
  std::vector<std::optional<std::string>> spaces = {std::nullopt};
  for (const std::string& s : ia->spaces()) spaces.push_back(s);
  for (const std::string& s : ib->spaces())
    if (std::find(spaces.begin(), spaces.end(), std::optional(s)) == spaces.end()) spaces.push_back(s);
  spaces.push_back(std::string("device:9"));  // of neither: two empty trees, a root of zeros
  for (const auto& [from, to] : ranges)
    for (const auto& space : spaces) expectSameDiff(a, *ia, b, *ib, from, to, space);
}


}  // namespace

TEST(AnalyzerTreeDiffMerge, EqualsTheSitesMergeOnSamplePairs) {
  const std::pair<std::string, std::string> pairs[] = {
      {recordingOf("ci_leaky", "leak 10"), recordingOf("ci_leaky", "peak 4000000")},
      {recordingOf("three_phases"), recordingOf("demo_leaky_peaky")},
      {recordingOf("mmap_leak"), recordingOf("pool_arena")},
  };
  for (const auto& [a, b] : pairs)
    if (!a.empty() && !b.empty()) expectSameDiffs(a, b);
}

// ci_leaky leak 10 against peak 4000000, read off the merged trees: the numbers a user sees.
TEST(AnalyzerTreeDiffMerge, LeakAgainstPeakNumbers) {
  const std::string pa = recordingOf("ci_leaky", "leak 10"), pb = recordingOf("ci_leaky", "peak 4000000");
  if (pa.empty() || pb.empty()) return;
  Recording a = Recording::open(pa), b = Recording::open(pb);
  std::shared_ptr<const TreeIndex> ia = TreeIndex::build(a), ib = TreeIndex::build(b);
  const DiffTrees d = diffTrees(ia->trees(ia->costs(a, std::nullopt, std::nullopt), std::string("heap")),
                                ib->trees(ib->costs(b, std::nullopt, std::nullopt), std::string("heap")));
  EXPECT_EQ(d.top_down.tree.space, std::optional<std::string>("heap"));
  const std::vector<std::string> leaked = collapsedChanges(d.top_down.tree, TreeMetric::Leaked);
  EXPECT_TRUE(memledger::testing::hasLine(leaked, ";main;ci_leak_block -10000"));
  const std::vector<std::string> peak = collapsedChanges(d.top_down.tree, TreeMetric::Peak);
  EXPECT_TRUE(memledger::testing::hasLine(peak, ";main;ci_hold_peak 4000000"));
  int64_t leak = 0, hold = 0;
  for (int32_t c : d.bottom_up.tree.children(0)) {
    if (d.bottom_up.tree.symbol(c) == "ci_leak_block") leak = d.bottom_up.tree.nodes[size_t(c)].total.leaked;
    if (d.bottom_up.tree.symbol(c) == "ci_hold_peak") hold = d.bottom_up.tree.nodes[size_t(c)].total.peak;
  }
  EXPECT_EQ(leak, -10000);
  EXPECT_EQ(hold, 4000000);
  // The root's magnitude counts growth and shrink alike.
  EXPECT_GE(d.top_down.change[0].allocated, 4000000 + 10000);
}

TEST(AnalyzerTreeDiffMerge, ARecordingAgainstItselfChangesNothing) {
  const std::string p = recordingOf("demo_leaky_peaky");
  if (p.empty()) return;
  Recording a = Recording::open(p), b = Recording::open(p);
  std::shared_ptr<const TreeIndex> ia = TreeIndex::build(a), ib = TreeIndex::build(b);
  const TreeIndex::Trees ta = ia->trees(ia->costs(a, std::nullopt, std::nullopt));
  const DiffTrees d = diffTrees(ta, ib->trees(ib->costs(b, std::nullopt, std::nullopt)));
  EXPECT_EQ(d.top_down.tree.nodes.size(), ta.top_down.nodes.size());
  EXPECT_EQ(d.bottom_up.tree.nodes.size(), ta.bottom_up.nodes.size());
  for (const DiffTree* t : {&d.top_down, &d.bottom_up})
    for (size_t k = 0; k < t->tree.nodes.size(); ++k) {
      EXPECT_TRUE(sameCost(t->tree.nodes[k].total, {})) << t->tree.symbol(int32_t(k));
      EXPECT_TRUE(sameCost(t->change[k], {})) << t->tree.symbol(int32_t(k));
    }
  EXPECT_EQ(d.symbols.size(), ta.symbols.size());
  for (TreeMetric m : kMetrics) EXPECT_TRUE(collapsedChanges(d.top_down.tree, m).empty());
}

TEST(AnalyzerTreeDiffMerge, DeepPythonPathsEqualTheSitesMerge) {
  std::string why;
  const std::string a = memledger::testing::pythonRecording("deep_paths.py", "5", &why);
  const std::string b = a.empty() ? a : memledger::testing::pythonRecording("deep_paths.py", "7", &why);
  if (a.empty() || b.empty()) GTEST_SKIP() << why;
  expectSameDiffs(a, b);
}

// A tree no view asked for (no nodes, not even a root) on either side: the other side's, or nothing.
TEST(AnalyzerTreeDiffMerge, EmptySides) {
  TreeIndex::Trees none;
  const DiffTrees d = diffTrees(none, none);
  EXPECT_EQ(d.top_down.tree.nodes.size(), 1u);
  EXPECT_TRUE(sameCost(d.top_down.tree.nodes[0].total, {}));
  EXPECT_TRUE(d.symbols.empty());
}
