#include "analyzer/tree_diff.h"

#include "analyzer/tree_index.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <utility>

namespace memledger::analyzer {

namespace {
TreeCost negated(const TreeCost& t) { return {-t.peak, -t.leaked, -t.allocated, -t.count, -t.temporary}; }

TreeCost absolute(const TreeCost& c) {
  return {std::llabs(c.peak), std::llabs(c.leaked), std::llabs(c.allocated), std::llabs(c.count), std::llabs(c.temporary)};
}
}  // namespace

std::vector<TreeCost> changeMagnitudes(const CallTree& tree) {
  std::vector<TreeCost> out(tree.nodes.size());
  // A node is always made after its parent: children have the larger ids.
  for (size_t n = tree.nodes.size(); n-- > 0;) {
    out[n] += absolute(tree.self(int32_t(n)));
    if (tree.nodes[n].parent >= 0) out[size_t(tree.nodes[n].parent)] += out[n];
  }
  return out;
}

DiffTrees diffTrees(const std::vector<SiteCost>& a, SiteFrames&& framesA, std::vector<SiteCost>&& b, SiteFrames&& framesB,
                    const std::optional<std::string>& space) {
  std::vector<SiteCost> costs = std::move(b);
  costs.reserve(costs.size() + a.size());
  for (const SiteCost& c : a) {
    costs.push_back(c);
    costs.back().cost = negated(c.cost);
  }
  SiteFrames frames = std::move(framesB);
  frames.insert(frames.end(), std::make_move_iterator(framesA.begin()), std::make_move_iterator(framesA.end()));
  framesA.clear();
  // One index of the merged sites answers all three (buildCallTree() would make one for each).
  std::vector<TreeCost> amounts;
  amounts.reserve(costs.size());
  for (const SiteCost& c : costs) amounts.push_back(c.cost);
  std::shared_ptr<const TreeIndex> index = TreeIndex::build(std::move(costs), frames);
  SiteFrames().swap(frames);
  TreeIndex::Trees trees = index->trees(amounts, space);
  DiffTrees out;
  out.top_down.tree = std::move(trees.top_down);
  out.top_down.change = changeMagnitudes(out.top_down.tree);
  out.bottom_up.tree = std::move(trees.bottom_up);
  out.bottom_up.change = changeMagnitudes(out.bottom_up.tree);
  out.symbols = std::move(trees.symbols);
  return out;
}

std::vector<std::string> collapsedChanges(const CallTree& tree, TreeMetric metric) {
  return collapsedLines(tree, metric, [](int64_t self) { return self != 0; });
}

}  // namespace memledger::analyzer
