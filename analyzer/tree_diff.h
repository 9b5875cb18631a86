// The call trees of a comparison: B − A per tree node, for the GUI's trees, caller/callee and
// flame graph when a second recording is open. Both recordings' sites go into one tree, A's
// amounts negated, so frames merge by symbol exactly as in a single tree (two lines of one
// function are one frame) and every node's costs are B's minus A's: positive is growth, negative
// shrink. A node's change magnitude (the sum of the absolute net changes at and below it) is what
// a difference flame graph makes its width, so growth beside an equal shrink stays visible.
#pragma once

#include <string>
#include <vector>

#include "analyzer/call_tree.h"
#include "analyzer/tree_index.h"

namespace memledger::analyzer {

struct DiffTree {
  CallTree tree;                // costs B − A
  std::vector<TreeCost> change;  // per node: sum of |self| over it and its descendants
};

// B − A's trees of both directions and caller/callee, over one merge of the two recordings'
// sites whose frames are moved into it, not copied (a PyTorch run's 700,000 sites of ~55 frames
// are 300 MB of frame pointers a recording; merging them for each of the three was 2 GB).
struct DiffTrees {
  DiffTree top_down, bottom_up;
  std::vector<SymbolCost> symbols;
};
DiffTrees diffTrees(const std::vector<SiteCost>& a, SiteFrames&& framesA, std::vector<SiteCost>&& b, SiteFrames&& framesB,
                    const std::optional<std::string>& space = {});
// The same B − A from each recording's own trees (TreeIndex::trees() of the same range and
// space, A's on A's index, B's on B's): the two trees merged node by node, a node's children
// matched by symbol, and caller/callee per symbol and edge; what the sites' merge above gives, up
// to node order (parents still before children) and which side's frame a node shows (B's where
// both have it). Neither recording's frames are listed per site: a PyTorch run's 700,000 sites of
// ~55 frames each made 400 MB of frame pointers a recording (2.2 GB to compare two runs). The
// trees keep both sides' storage (their names and frames) alive. Sides without bottom-up trees
// (TreeIndex::trees() without them) give none.
DiffTrees diffTrees(const TreeIndex::Trees& a, const TreeIndex::Trees& b);

// Per node, the sum of the absolute self costs at and below it (each field on its own).
std::vector<TreeCost> changeMagnitudes(const CallTree& tree);

// Collapsed stacks of a difference tree: one line per node whose self cost in `metric` is not 0,
// signed ("main;ci_leak_block -10000"), sorted; what tests compare.
std::vector<std::string> collapsedChanges(const CallTree& tree, TreeMetric metric);

}  // namespace memledger::analyzer
