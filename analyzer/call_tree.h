// Call trees of a recording's sites for the GUI's tree views and flame graph: top-down (outermost
// frame at the root, as `memledger export --format folded` writes stacks) and bottom-up (the
// allocating frame at the root), and a per-function caller/callee table. Frames are merged by
// symbol (function name, or "?? (module)" without one), as heaptrack and hotspot merge them.
//
// A time range [from, to] re-reads only the per-site activity (`site_buckets`) and the leaked
// blocks' rows, never the whole file: allocated bytes/counts are those made in the range, leaks
// those made in it and never freed, temporaries (version 7 files) those freed in it. The peak
// stays the whole run's here; analyzer/live_set.h gives the range's own (applyLiveSet).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer {

// The amounts every tree node carries. peak: live at the peak of the site's account in its
// process (Site::peak_bytes); temporary: blocks freed before their thread allocated again.
struct TreeCost {
  int64_t peak = 0, leaked = 0, allocated = 0, count = 0, temporary = 0;
  TreeCost& operator+=(const TreeCost& o) {
    peak += o.peak;
    leaked += o.leaked;
    allocated += o.allocated;
    count += o.count;
    temporary += o.temporary;
    return *this;
  }
};

// A frame's name in a tree (frames are merged by it): the function, or "?? (module)" / "??".
std::string treeSymbol(const Frame& frame);

enum class TreeMetric { Peak, Leaked, Allocated, Count, Temporary };
int64_t costOf(const TreeCost& cost, TreeMetric metric);
const char* treeMetricName(TreeMetric metric);  // peak | leaked | allocated | count | temporary
std::optional<TreeMetric> parseTreeMetric(const std::string& name);

// A node holds no strings or lists of its own (a big interpreter run's trees have millions of
// nodes, remade for every time range: 64 bytes a node): its symbol is an index into the tree's
// names, its children a slice of the tree's one array (node k's run from its first_child to the
// next node's), its self amounts are its total less its children's (CallTree::self).
struct CallNode {
  TreeCost total;                // its sites' amounts: those ending here and every child's
  const Frame* frame = nullptr;  // the first frame seen for it (file/line/module), owned by the recording
  int32_t symbol = -1;           // CallTree::symbol(); -1: the root
  int32_t parent = -1;
  int32_t row = 0;          // its place among its parent's children (a model's parent() in O(1))
  int32_t first_child = 0;  // into CallTree::child_ids
};

enum class TreeDirection { TopDown, BottomUp };

// Node 0 is the root ("all sites"); every other node has a parent, made before it (a parent's
// id is smaller than its children's).
struct CallTree {
  TreeDirection direction = TreeDirection::TopDown;
  std::vector<CallNode> nodes;
  // Every node's children in node order, each node's total.allocated descending, then symbol.
  std::vector<int32_t> child_ids;
  std::optional<int64_t> t_from_ns, t_to_ns;  // the range its allocated/leaked amounts cover
  std::optional<std::string> space;           // the one space its sites are of; nullopt: every space
  const std::vector<std::string>* names = nullptr;  // symbol id -> name, kept alive by storage
  std::shared_ptr<const void> storage;              // what `names` and the frames belong to

  // function, or "?? (module)" / "??"; the root's is "all sites".
  const std::string& symbol(const CallNode& node) const;
  const std::string& symbol(int32_t node) const { return symbol(nodes[size_t(node)]); }
  std::span<const int32_t> children(int32_t node) const {
    const size_t end = size_t(node) + 1 < nodes.size() ? size_t(nodes[size_t(node) + 1].first_child) : child_ids.size();
    return {child_ids.data() + nodes[size_t(node)].first_child, end - size_t(nodes[size_t(node)].first_child)};
  }
  // The sites whose stack ends here (top-down) / starts here (bottom-up): total less children.
  TreeCost self(int32_t node) const;
};

// One site's amounts, with its stack id (frames via Recording::stackFrames).
struct SiteCost {
  int64_t stack_id = 0;
  int64_t image_id = 0;
  std::string kind;
  std::string space;  // its account's name (Site::space): heap, mmap, device:0, pool:NAME, ...
  TreeCost cost;
  int64_t min_size = 0, max_size = 0;  // its smallest and largest block over the whole run
};

// Every site's amounts; with a range, allocated/count/leaked are those of allocations made in
// [from, to] (see the header comment). Sites with nothing in any amount are left out.
std::vector<SiteCost> siteCosts(const Recording& rec, std::optional<int64_t> t_from_ns = {},
                                std::optional<int64_t> t_to_ns = {});
std::vector<SiteCost> siteCosts(const Recording& rec, std::optional<int64_t> t_from_ns,
                                std::optional<int64_t> t_to_ns, QueryControl& control);

// The tree of `costs` built from scratch (analyzer/tree_index.h builds a recording's tree shapes
// once and re-costs them for each range: what the GUI does), of one space only when `space` is given: a peak is per space, and peaks
// of different spaces never add up); frames come from `rec` (which must outlive the tree).
CallTree buildCallTree(const Recording& rec, const std::vector<SiteCost>& costs, TreeDirection direction,
                       const std::optional<std::string>& space = {});

// The frames of every site of `costs` (same order), decoded once for several trees of the same
// sites (pointers into the recording's cache: valid while it lives).
using SiteFrames = std::vector<std::vector<const Frame*>>;
SiteFrames siteFrames(const Recording& rec, const std::vector<SiteCost>& costs);
CallTree buildCallTree(const std::vector<SiteCost>& costs, const SiteFrames& frames, TreeDirection direction,
                       const std::optional<std::string>& space = {});

// One row per symbol: self (the symbol allocated), inclusive (the symbol was on the stack,
// counted once per stack however often it recurs), and who called it / whom it called, with the
// inclusive cost passed along each edge.
struct SymbolCost {
  std::string symbol;
  const Frame* frame = nullptr;
  TreeCost self, inclusive;
  std::map<std::string, TreeCost> callers, callees;
};
std::vector<SymbolCost> callerCallee(const Recording& rec, const std::vector<SiteCost>& costs,
                                     const std::optional<std::string>& space = {});  // inclusive.allocated desc

std::vector<SymbolCost> callerCallee(const std::vector<SiteCost>& costs, const SiteFrames& frames,
                                     const std::optional<std::string>& space = {});

// Collapsed lines ("a;b;c 42") of every node but the root whose self amount in `metric` passes
// `keep`, sorted: collapsedStacks keeps the positive ones, a difference tree's collapsedChanges
// every one that is not 0.
std::vector<std::string> collapsedLines(const CallTree& tree, TreeMetric metric, bool (*keep)(int64_t self));
// Collapsed stacks of a tree, outermost first for top-down ("main;f;g 42"), one line per node
// with a self cost > 0 in `metric`, sorted: what tests compare and `export --format folded` means.
std::vector<std::string> collapsedStacks(const CallTree& tree, TreeMetric metric);

}  // namespace memledger::analyzer
