#include "analyzer/tree_diff.h"

#include "analyzer/control.h"
#include "analyzer/tree_index.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string_view>
#include <unordered_map>
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

namespace {
TreeCost minus(TreeCost x, const TreeCost& y) {
  x += negated(y);
  return x;
}

// The merged trees' symbols: one id per name over both sides, each side's ids mapped on first use.
class MergedNames {
 public:
  MergedNames(const TreeIndex::Trees& a, const TreeIndex::Trees& b) : holder_(std::make_shared<Holder>()) {
    holder_->sides = {a.top_down.storage, b.top_down.storage, a.bottom_up.storage, b.bottom_up.storage};
    for (const CallTree* t : {&a.top_down, &b.top_down, &a.bottom_up, &b.bottom_up})
      if (t->names && !maps_.count(t->names)) maps_.emplace(t->names, std::vector<int32_t>(t->names->size(), -1));
  }
  int32_t of(const CallTree& tree, int32_t symbol) {
    int32_t& mapped = maps_.at(tree.names)[size_t(symbol)];
    if (mapped < 0) {
      const std::string& name = (*tree.names)[size_t(symbol)];
      auto [it, added] = ids_.try_emplace(name, int32_t(holder_->names.size()));
      if (added) holder_->names.push_back(name);
      mapped = it->second;
    }
    return mapped;
  }
  size_t bound() const {  // more than any id of()
    size_t n = 0;
    for (const auto& [names, map] : maps_) n += map.size();
    return n;
  }
  void attach(CallTree& tree) const {
    tree.names = &holder_->names;
    tree.storage = holder_;
  }

 private:
  struct Holder {
    std::vector<std::shared_ptr<const void>> sides;  // the frames point into them, and the names below
    std::vector<std::string> names;
  };
  std::shared_ptr<Holder> holder_;
  std::unordered_map<const std::vector<std::string>*, std::vector<int32_t>> maps_;
  std::unordered_map<std::string_view, int32_t> ids_;  // views into the sides' names (kept alive)
};

// B's tree less A's, breadth first (a parent before its children), each node's children sorted
// as TreeIndex sorts them (allocated descending, then symbol).
CallTree mergeTree(const CallTree& a, const CallTree& b, MergedNames& names) {
  CallTree out;
  out.direction = b.direction;
  out.space = b.space;
  out.t_from_ns = b.t_from_ns;
  out.t_to_ns = b.t_to_ns;
  names.attach(out);
  struct Pair {
    int32_t a = -1, b = -1;
  };
  std::vector<Pair> pairs{{a.nodes.empty() ? -1 : 0, b.nodes.empty() ? -1 : 0}};
  CallNode root;
  root.total = minus(b.nodes.empty() ? TreeCost{} : b.nodes[0].total, a.nodes.empty() ? TreeCost{} : a.nodes[0].total);
  root.frame = !b.nodes.empty() && b.nodes[0].frame ? b.nodes[0].frame : a.nodes.empty() ? nullptr : a.nodes[0].frame;
  out.nodes.push_back(root);
  out.nodes.reserve(std::max(a.nodes.size(), b.nodes.size()));
  std::vector<int32_t> slot(names.bound(), -1);  // merged symbol -> its node among the current node's children
  for (size_t k = 0; k < out.nodes.size(); ++k) {
    if ((k & 65535) == 0) detail::throwIfCancelled();
    const Pair pair = pairs[k];
    const size_t begin = out.nodes.size();
    out.nodes[k].first_child = int32_t(out.child_ids.size());
    auto add = [&](const CallTree& side, int32_t child, bool isB) {
      const CallNode& n = side.nodes[size_t(child)];
      const int32_t symbol = names.of(side, n.symbol);
      if (int32_t& at = slot[size_t(symbol)]; at >= 0) {  // on both sides: B's first, A's subtracted
        out.nodes[size_t(at)].total += negated(n.total);
        pairs[size_t(at)].a = child;
        return;
      }
      CallNode node;
      node.total = isB ? n.total : negated(n.total);
      node.frame = n.frame;
      node.symbol = symbol;
      node.parent = int32_t(k);
      slot[size_t(symbol)] = int32_t(out.nodes.size());
      out.nodes.push_back(node);
      pairs.push_back(isB ? Pair{-1, child} : Pair{child, -1});
    };
    if (pair.b >= 0)
      for (int32_t c : b.children(pair.b)) add(b, c, true);
    if (pair.a >= 0)
      for (int32_t c : a.children(pair.a)) add(a, c, false);
    for (size_t c = begin; c < out.nodes.size(); ++c) {
      slot[size_t(out.nodes[c].symbol)] = -1;
      out.child_ids.push_back(int32_t(c));
    }
    auto first = out.child_ids.begin() + out.nodes[k].first_child;
    std::sort(first, out.child_ids.end(), [&](int32_t x, int32_t y) {
      const CallNode &p = out.nodes[size_t(x)], &q = out.nodes[size_t(y)];
      return p.total.allocated != q.total.allocated ? p.total.allocated > q.total.allocated
                                                    : out.symbol(p) < out.symbol(q);
    });
    for (auto it = first; it != out.child_ids.end(); ++it) out.nodes[size_t(*it)].row = int32_t(it - first);
  }
  return out;
}

// B's caller/callee less A's, per symbol and per edge; sorted as TreeIndex::callerCallee().
std::vector<SymbolCost> mergeSymbols(const std::vector<SymbolCost>& a, const std::vector<SymbolCost>& b) {
  std::vector<SymbolCost> out;
  out.reserve(a.size() + b.size());  // never moved: the map's views point into the names
  out.assign(b.begin(), b.end());
  std::unordered_map<std::string_view, size_t> at;
  for (size_t i = 0; i < out.size(); ++i) at.emplace(out[i].symbol, i);
  for (const SymbolCost& s : a) {
    auto it = at.find(s.symbol);
    if (it == at.end()) {
      SymbolCost c;
      c.symbol = s.symbol;
      c.frame = s.frame;
      out.push_back(std::move(c));
      it = at.emplace(out.back().symbol, out.size() - 1).first;
    }
    SymbolCost& m = out[it->second];
    m.self += negated(s.self);
    m.inclusive += negated(s.inclusive);
    for (const auto& [name, cost] : s.callers) m.callers[name] += negated(cost);
    for (const auto& [name, cost] : s.callees) m.callees[name] += negated(cost);
  }
  std::sort(out.begin(), out.end(), [](const SymbolCost& x, const SymbolCost& y) {
    return x.inclusive.allocated != y.inclusive.allocated ? x.inclusive.allocated > y.inclusive.allocated
                                                          : x.symbol < y.symbol;
  });
  return out;
}
}  // namespace

DiffTrees diffTrees(const TreeIndex::Trees& a, const TreeIndex::Trees& b) {
  MergedNames names(a, b);
  DiffTrees out;
  out.top_down.tree = mergeTree(a.top_down, b.top_down, names);
  out.top_down.change = changeMagnitudes(out.top_down.tree);
  if (!a.bottom_up.nodes.empty() || !b.bottom_up.nodes.empty()) {  // not made: not made either
    out.bottom_up.tree = mergeTree(a.bottom_up, b.bottom_up, names);
    out.bottom_up.change = changeMagnitudes(out.bottom_up.tree);
  }
  out.symbols = mergeSymbols(a.symbols, b.symbols);
  return out;
}

std::vector<std::string> collapsedChanges(const CallTree& tree, TreeMetric metric) {
  return collapsedLines(tree, metric, [](int64_t self) { return self != 0; });
}

}  // namespace memledger::analyzer
