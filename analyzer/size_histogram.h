// Allocation sizes: how many blocks of which size, in power-of-two buckets, and which sites made
// them (the GUI's Sizes view).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer/call_tree.h"

namespace memledger::analyzer {

struct SizeBucketSite {
  int64_t stack_id = 0;
  int64_t image_id = 0;
  std::string kind;
  int64_t count = 0, bytes = 0;
  bool exact = true;  // false: the site's sizes span buckets and had no allocation rows (see below)
  Stack stack;        // of the top sites only
};

// Sizes in [from, to], to = 2 * from - 1 (bucket 0 also holds size 0: from 0, to 1).
struct SizeBucket {
  uint64_t from = 0, to = 0;
  int64_t count = 0, bytes = 0;
  std::vector<SizeBucketSite> sites;  // count descending, the first `top_sites`
  size_t site_count = 0;              // sites with blocks in this bucket, before the cut
};

struct SizeHistogram {
  std::vector<SizeBucket> buckets;  // size ascending, only buckets holding blocks
  int64_t count = 0, bytes = 0;     // all blocks
  // Blocks counted in a bucket by estimate: a site whose min and max size fall in different
  // buckets is split exactly from its `allocations` rows when every block has one (allocation_rows
  // 'all'); otherwise its blocks all go to the bucket of its mean size, and are counted here.
  int64_t estimated_count = 0;
};

// Every allocation of the sites passing `filter` (pid, kind; with a time range the blocks made in
// it, per site from site_buckets like the call trees' ranges).
SizeHistogram sizeHistogram(const Recording& rec, const Filter& filter = {}, size_t top_sites = 10);
// The same with the range's siteCosts(rec, filter.t_from_ns, filter.t_to_ns) already computed
// (a GUI range job has them for its trees): not read a second time.
SizeHistogram sizeHistogram(const Recording& rec, const Filter& filter, size_t top_sites,
                            const std::vector<SiteCost>& range_costs);
// Every site of `sites` with their amounts (a TreeIndex's sites with a range's costs,
// TreeIndex::siteCosts(): count and allocated of the range, sizes of the whole run), for a front
// end that asks range after range: no site row is read (for a PyTorch run's 700,000 sites that
// was 2 s a range). The same histogram as sizeHistogram(rec, {from, to}) over every kind and pid.
SizeHistogram sizeHistogram(const Recording& rec, const std::vector<SiteCost>& sites, std::optional<int64_t> t_from_ns,
                            std::optional<int64_t> t_to_ns, size_t top_sites = 10);
// The same with the amounts apart: `sites` (a TreeIndex's, with their whole-run sizes) and one
// cost per site (TreeIndex::costs() of a range); no list of the range's sites is made.
SizeHistogram sizeHistogram(const Recording& rec, const std::vector<SiteCost>& sites, const std::vector<TreeCost>& costs,
                            std::optional<int64_t> t_from_ns, std::optional<int64_t> t_to_ns, size_t top_sites = 10);

// The bucket index of a size: floor(log2(size)), 0 for sizes 0 and 1.
int sizeBucketIndex(uint64_t size);

// The same from a tree index's sites (analyzer/tree_index.h) with one cost per site: the GUI's
// range, with no list of its sites made.
class TreeIndex;
SizeHistogram sizeHistogram(const Recording& rec, const TreeIndex& index, const std::vector<TreeCost>& costs,
                            std::optional<int64_t> t_from_ns, std::optional<int64_t> t_to_ns, size_t top_sites);

}  // namespace memledger::analyzer
