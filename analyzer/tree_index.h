// The call trees of one recording, shaped once and re-costed for every question.
//
// A big interpreter run has 10^5 to 10^6 sites of 60-80 frames: its top-down and bottom-up trees
// have about a million nodes each. Building them means a hash lookup per frame of every site
// (seconds); a time range changes none of their shape, only each site's amounts. So the index
// reads every site's frames once and keeps, per direction, the tree of all sites (every space)
// and the node each site ends at; a question then adds each site's amounts at its node and sums
// them up the tree in one pass over the nodes (children are made after their parents), and
// keeps the nodes some site of the asked space with a nonzero amount reaches. Caller/callee
// comes from the same top-down sums: a function's inclusive cost is the sum over the nodes that
// are its outermost occurrence on their path (once per stack, as callerCallee() counts), an
// edge's likewise. The answers are those of buildCallTree() and callerCallee() on the same
// amounts, up to node order and which of a function's frames a node shows
// (tests/unit/analyzer_tree_index_test.cpp compares them on real recordings).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/call_tree.h"
#include "analyzer/live_set.h"
#include "analyzer/site_activity.h"

namespace memledger::analyzer {

struct SizeHistogram;

class TreeIndex : public std::enable_shared_from_this<TreeIndex> {
 public:
  // Every site of `rec` (siteCosts() of the whole run) and both trees' shapes. Frames point into
  // the recording's cache: the recording must outlive the index and every tree made from it.
  static std::shared_ptr<const TreeIndex> build(const Recording& rec);
  static std::shared_ptr<const TreeIndex> build(const Recording& rec, QueryControl& control);
  // Given sites with their frames (same order): what buildCallTree() builds from scratch.
  static std::shared_ptr<const TreeIndex> build(std::vector<SiteCost> sites, const SiteFrames& frames);

  // The sites, with their whole-run amounts; every vector of costs below is in this order. Kept
  // compact (8 bytes a site, a row of the recording's table of sites, analyzer/site_activity.h,
  // which the per-site activity uses too: a PyTorch run has 700,000), so a site is made on
  // request and sites() is a copy of them all.
  size_t siteCount() const { return sites_.size(); }
  SiteCost site(size_t i) const;
  std::vector<SiteCost> sites() const;
  std::vector<std::string> spaces() const;  // the sites' spaces, sorted
  // The spaces of the sites with anything in `costs` (one per site), sorted.
  std::vector<std::string> spaces(const std::vector<TreeCost>& costs) const;
  size_t nodeCount(TreeDirection direction) const;

  // Each site's amounts for allocations made in [from, to] (nullopt/nullopt: the whole run), as
  // siteCosts() counts them: allocated and count from the per-site activity, leaked from the
  // leaked blocks' rows, temporary freed in it (version 7; older files: whole-run), peak
  // whole-run (analyzer/live_set.h gives a range's). Zeros stay: one entry per site. `rec` is the
  // recording the index was built from (its activity and leaked rows are kept after the first).
  std::vector<TreeCost> costs(const Recording& rec, std::optional<int64_t> from, std::optional<int64_t> to) const;
  std::vector<TreeCost> costs(const Recording& rec, std::optional<int64_t> from, std::optional<int64_t> to,
                              QueryControl& control) const;
  // The sites with anything in `costs`, as siteCosts() lists them for the same range.
  std::vector<SiteCost> siteCosts(const std::vector<TreeCost>& costs) const;
  // Back: one cost per site from a list of the index's sites (siteCosts() of a range, with
  // analyzer/live_set.h's applyLiveSet() applied: sites missing are zero); nullopt when the list
  // holds a site the index does not have.
  std::optional<std::vector<TreeCost>> costsOf(const std::vector<SiteCost>& sites) const;

  // applyLiveSet() on one cost per site, from a live set asked for `bySite` (analyzer/live_set.h)
  // of the same recording: every site of a space the set covers gets what it held then (0 when
  // nothing). False (costs unchanged) when a site held something the index does not have.
  bool applyLive(const Recording& rec, std::vector<TreeCost>& costs, const LiveSet& live) const;

  // The tree of `costs` (one per site), of one space or (nullopt) every space; throws
  // std::invalid_argument when `costs` is not one per site. The tree keeps the index alive.
  CallTree tree(const std::vector<TreeCost>& costs, TreeDirection direction,
                const std::optional<std::string>& space = {}) const;
  // callerCallee() of `costs`: inclusive.allocated descending, then symbol.
  std::vector<SymbolCost> callerCallee(const std::vector<TreeCost>& costs,
                                       const std::optional<std::string>& space = {}) const;
  // All three at once (one pass of top-down sums serves the top-down tree and caller/callee);
  // without `bottomUp` the bottom-up tree is not made (no nodes).
  struct Trees {
    CallTree top_down, bottom_up;
    std::vector<SymbolCost> symbols;
  };
  Trees trees(const std::vector<TreeCost>& costs, const std::optional<std::string>& space = {},
              bool bottomUp = true) const;

  TreeIndex(const TreeIndex&) = delete;
  TreeIndex& operator=(const TreeIndex&) = delete;
  ~TreeIndex();

 private:
  TreeIndex() = default;
  struct Builder;
  struct Shape {
    std::vector<int32_t> parent;       // per node; the root (node 0) has -1
    std::vector<int32_t> symbol;       // per node; the root has -1
    std::vector<const Frame*> frame;   // per node: the first frame seen for it
    std::vector<int32_t> site_end;     // per site: the node its stack ends at
  };
  int32_t spaceId(const std::optional<std::string>& space) const;  // -1 every space, -2 none of the sites'
  void check(const std::vector<TreeCost>& costs) const;
  // The tree of `costs` on `shape`: the nodes some site of `space` with a nonzero amount reaches,
  // with their sums; `id` gets each shape node's node in the tree (-1: not reached).
  CallTree emitTree(const Shape& shape, const std::vector<TreeCost>& costs, TreeDirection direction,
                    const std::optional<std::string>& space, std::vector<int32_t>& id) const;
  // Caller/callee from a top-down tree of this index and its `id`.
  std::vector<SymbolCost> symbols(const CallTree& down, const std::vector<int32_t>& id) const;

  struct Site {
    int32_t row;    // its row in *table_: ids, whole-run amounts, sizes
    uint16_t kind;  // index into kinds_
    uint8_t code;   // the kind's code (255: not one of schemas/kinds.h)
  };
  void setSites(std::vector<SiteCost> sites);
  bool readSites(const Recording& rec);  // false: a file without packed totals (setSites() then)
  std::vector<Site> sites_;
  // The rows: the recording's table of sites (Recording::activitySites()), or own_ for an index
  // of given sites or of an older file (space and kind of a row there unused).
  const std::vector<detail::ActivitySite>* table_ = nullptr;
  std::vector<detail::ActivitySite> own_;
  const detail::ActivitySite& row(size_t i) const { return (*table_)[size_t(sites_[i].row)]; }
  TreeCost cost(size_t i) const {
    const detail::ActivitySite& r = row(i);
    return {r.peak_bytes, r.leak_bytes, r.alloc_bytes, r.alloc_count, r.temp_count};
  }
  std::vector<int32_t> site_space_;  // each site's space (index into spaces_)
  std::vector<std::string> spaces_, kinds_;
  friend SizeHistogram sizeHistogram(const Recording&, const TreeIndex&, const std::vector<TreeCost>&,
                                     std::optional<int64_t>, std::optional<int64_t>, size_t);
  std::vector<std::string> names_;         // symbol id -> name
  std::vector<const Frame*> first_frame_;  // symbol id -> the first frame seen for it
  Shape down_;
  // The bottom-up shape of an index of a recording is made when first asked for (most questions
  // are top-down: a PyTorch run's bottom-up shape has 730,000 nodes, a third of the build's time
  // and 14 MB, with a 16 MB map while it is made): the sites' stacks are walked again, each frame
  // taking the symbol it got in the build. An index of given sites makes it at once.
  struct UpSource;  // the recording and each frame's symbol (tree_index.cpp)
  const Shape& up() const;
  mutable std::unique_ptr<UpSource> up_source_;
  mutable std::once_flag up_once_;
  mutable Shape up_;
  // Top-down nodes that are the outermost occurrence of their symbol / of their caller->callee
  // edge on their path (the other nodes: -1), and the edges' symbols.
  std::vector<int32_t> first_symbol_, first_edge_;
  std::vector<std::pair<int32_t, int32_t>> edges_;  // edge id -> (caller, callee) symbol ids
  // The sites sorted by (stack id, kind code), for the per-site activity: slotOf() is the last site
  // of a key (as siteCosts()), -1 none. An index a site, not a hash map's node.
  std::vector<int32_t> by_slot_;
  int32_t slotOf(int64_t stack, uint64_t kind) const;
  void sortBySlot();  // by_slot_ of the sites
  // The site of each of the recording's activity sites (Recording::activitySites()), made at the
  // first range: a range then adds the kept activity with no lookup per entry.
  // The sites by (image, stack, kind code), for costsOf(); made when first needed.
  // byKey(): the last site of the key, -1 none.
  mutable std::once_flag by_key_once_;
  mutable std::vector<int32_t> by_key_;
  int32_t byKey(int64_t image, int64_t stack, uint64_t kind) const;
  mutable std::once_flag activity_once_;
  mutable std::vector<int32_t> activity_slot_;  // by (stack, kind), as costs() adds activity
  mutable std::vector<int32_t> activity_site_;  // the same site, by (image, stack, kind); -1 none
  void mapActivity(const Recording& rec) const;
  // The leaked blocks' rows (allocation time, site, size), by time; read at the first range.
  struct Leaked {
    int64_t t;
    int32_t site;
    int64_t size;
  };
  mutable std::once_flag leaked_once_;
  mutable std::vector<Leaked> leaked_;
  void readLeaked(const Recording& rec) const;
  void sortByKey() const;
};

}  // namespace memledger::analyzer
