// Allocation sizes in power-of-two buckets (size_histogram.h). Per site, site_totals knows the
// count, bytes, smallest and largest size: a site whose smallest and largest sizes fall in one
// bucket is exact from them alone (most sites: one call site, one size). The others are split
// from their `allocations` rows when every block has one, else put at their mean size.
#include "analyzer/size_histogram.h"

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "analyzer/call_tree.h"
#include "analyzer/sql.h"
#include "analyzer/tree_index.h"

namespace memledger::analyzer {

int sizeBucketIndex(uint64_t size) { return size <= 1 ? 0 : std::bit_width(size) - 1; }

namespace {
// The kind is a view of a string that outlives the histogram's making (the caller's site list,
// a set of keys): a PyTorch range has 300,000 sites to place.
struct SiteKey {
  int64_t image_id, stack_id;
  std::string_view kind;
  bool operator<(const SiteKey& o) const {
    return std::tie(image_id, stack_id, kind) < std::tie(o.image_id, o.stack_id, o.kind);
  }
};
}  // namespace

SizeHistogram sizeHistogram(const Recording& rec, const Filter& filter, size_t top_sites) {
  if (filter.t_from_ns || filter.t_to_ns) return sizeHistogram(rec, filter, top_sites, siteCosts(rec, filter.t_from_ns, filter.t_to_ns));
  return sizeHistogram(rec, filter, top_sites, {});
}

namespace {
// One site's blocks to place: its amounts (of the range or the whole run) and its whole-run sizes.
struct SiteSizes {
  SiteKey key;
  int64_t count, bytes, min_size, max_size;
};

// The histogram of `sites`: a site whose smallest and largest sizes share a bucket goes there
// exactly, the others are split by their allocation rows in [from, to] when every block has
// one, else put at their mean size.
SizeHistogram histogramOf(const Recording& rec, const std::vector<SiteSizes>& sites, const Filter& rowFilter,
                          std::optional<int64_t> from, std::optional<int64_t> to, size_t top_sites) {
  // bucket index -> its sites. A site not split lands in one bucket once: a plain list; a split
  // site's rows add up per (bucket, site) in a map (a PyTorch run has 500,000 sites: a map of
  // them all was most of a range's histogram).
  // Entries point at their site's key; only each bucket's top sites become SizeBucketSites.
  struct Entry {
    const SiteKey* key;
    int64_t count, bytes;
    bool exact;
  };
  std::map<int, std::vector<Entry>> byBucket;
  std::map<int, std::map<SiteKey, Entry>> splitByBucket;
  auto add = [&](int bucket, const SiteKey& key, int64_t count, int64_t bytes, bool exact) {
    byBucket[bucket].push_back({&key, count, bytes, exact});
  };
  auto addSplit = [&](int bucket, const SiteKey& key, int64_t count, int64_t bytes) {
    auto [it, isNew] = splitByBucket[bucket].try_emplace(key, Entry{nullptr, 0, 0, true});
    if (isNew) it->second.key = &it->first;
    it->second.count += count;
    it->second.bytes += bytes;
  };
  const bool allRows = rec.info().allocation_rows == "all";
  std::set<SiteKey> split;  // sites to split from their allocation rows
  SizeHistogram out;
  for (const SiteSizes& s : sites) {
    if (s.count <= 0) continue;
    int lo = sizeBucketIndex(uint64_t(s.min_size)), hi = sizeBucketIndex(uint64_t(s.max_size));
    if (lo == hi) {
      add(lo, s.key, s.count, s.bytes, true);
    } else if (allRows) {
      split.insert(s.key);
    } else {
      add(sizeBucketIndex(uint64_t(s.bytes / s.count)), s.key, s.count, s.bytes, false);
      out.estimated_count += s.count;
    }
  }
  if (!split.empty()) {
    std::string sql = "SELECT image_id, stack_id, kind, size, count(*), sum(size) FROM allocations WHERE t_alloc >= ? AND t_alloc <= ?" +
                      detail::imageCondition(rec, rowFilter, "image_id") + (rowFilter.kind ? " AND kind = ?" : "") +
                      " GROUP BY image_id, stack_id, kind, size";
    detail::Statement q(rec, sql.c_str());
    q.bind(1, from.value_or(INT64_MIN));
    q.bind(2, to.value_or(INT64_MAX));
    if (rowFilter.kind) q.bind(3, *rowFilter.kind);
    while (q.step()) {
      const std::string kind = q.text(2);
      auto it = split.find(SiteKey{q.i64(0), q.i64(1), kind});
      if (it != split.end()) addSplit(sizeBucketIndex(uint64_t(q.i64(3))), *it, q.i64(4), q.i64(5));
    }
  }
  for (auto& [index, sites] : splitByBucket)
    for (auto& [key, s] : sites) byBucket[index].push_back(s);
  for (auto& [index, bucketSites] : byBucket) {
    SizeBucket b;
    b.from = index == 0 ? 0 : uint64_t(1) << index;
    b.to = (uint64_t(1) << (index + 1)) - 1;
    for (const Entry& s : bucketSites) {
      b.count += s.count;
      b.bytes += s.bytes;
    }
    b.site_count = bucketSites.size();
    auto order = [](const Entry& x, const Entry& y) {
      return std::tie(y.count, y.bytes, x.key->stack_id, x.key->image_id, x.key->kind) <
             std::tie(x.count, x.bytes, y.key->stack_id, y.key->image_id, y.key->kind);
    };
    const size_t keep = std::min(top_sites, bucketSites.size());
    std::partial_sort(bucketSites.begin(), bucketSites.begin() + std::ptrdiff_t(keep), bucketSites.end(), order);
    for (size_t k = 0; k < keep; ++k) {
      SizeBucketSite& site = b.sites.emplace_back();
      site.stack_id = bucketSites[k].key->stack_id;
      site.image_id = bucketSites[k].key->image_id;
      site.kind = bucketSites[k].key->kind;
      site.count = bucketSites[k].count;
      site.bytes = bucketSites[k].bytes;
      site.exact = bucketSites[k].exact;
    }
    for (auto& s : b.sites) s.stack = rec.stack(s.stack_id);
    out.count += b.count;
    out.bytes += b.bytes;
    out.buckets.push_back(std::move(b));
  }
  return out;
}
}  // namespace

SizeHistogram sizeHistogram(const Recording& rec, const Filter& filter, size_t top_sites,
                            const std::vector<SiteCost>& range_costs) {
  const bool timed = filter.t_from_ns || filter.t_to_ns;
  // With a time range, each site's count and bytes made in it (site_buckets: exact per site);
  // its smallest and largest sizes are the whole run's.
  std::map<SiteKey, std::pair<int64_t, int64_t>> inRange;
  if (timed)
    for (const SiteCost& c : range_costs)
      if (c.cost.count > 0) inRange[{c.image_id, c.stack_id, c.kind}] = {c.cost.count, c.cost.allocated};
  Filter siteFilter = filter;
  siteFilter.top.reset();
  siteFilter.t_from_ns.reset();
  siteFilter.t_to_ns.reset();
  std::vector<SiteSizes> sites;
  const std::vector<Site> rows = detail::siteRows(rec, siteFilter);  // the keys' kinds
  for (const Site& s : rows) {
    SiteKey key{s.image_id, s.stack_id, s.kind};
    int64_t count = s.alloc_count, bytes = s.alloc_bytes;
    if (timed) {
      auto it = inRange.find(key);
      if (it == inRange.end()) continue;
      std::tie(count, bytes) = it->second;
    }
    sites.push_back({std::move(key), count, bytes, s.min_size, s.max_size});
  }
  return histogramOf(rec, sites, filter, filter.t_from_ns, filter.t_to_ns, top_sites);
}

SizeHistogram sizeHistogram(const Recording& rec, const std::vector<SiteCost>& sites, std::optional<int64_t> t_from_ns,
                            std::optional<int64_t> t_to_ns, size_t top_sites) {
  std::vector<SiteSizes> list;
  list.reserve(sites.size());
  for (const SiteCost& c : sites)
    if (c.cost.count > 0) list.push_back({{c.image_id, c.stack_id, c.kind}, c.cost.count, c.cost.allocated, c.min_size, c.max_size});
  return histogramOf(rec, list, {}, t_from_ns, t_to_ns, top_sites);
}

SizeHistogram sizeHistogram(const Recording& rec, const std::vector<SiteCost>& sites, const std::vector<TreeCost>& costs,
                            std::optional<int64_t> t_from_ns, std::optional<int64_t> t_to_ns, size_t top_sites) {
  std::vector<SiteSizes> list;
  const size_t n = std::min(sites.size(), costs.size());
  list.reserve(size_t(std::count_if(costs.begin(), costs.begin() + std::ptrdiff_t(n), [](const TreeCost& c) { return c.count > 0; })));
  for (size_t i = 0; i < n; ++i) {
    const SiteCost& c = sites[i];
    if (costs[i].count > 0) list.push_back({{c.image_id, c.stack_id, c.kind}, costs[i].count, costs[i].allocated, c.min_size, c.max_size});
  }
  return histogramOf(rec, list, {}, t_from_ns, t_to_ns, top_sites);
}

SizeHistogram sizeHistogram(const Recording& rec, const TreeIndex& index, const std::vector<TreeCost>& costs,
                            std::optional<int64_t> t_from_ns, std::optional<int64_t> t_to_ns, size_t top_sites) {
  const size_t n = std::min(index.sites_.size(), costs.size());
  std::vector<SiteSizes> list;
  list.reserve(size_t(std::count_if(costs.begin(), costs.begin() + std::ptrdiff_t(n), [](const TreeCost& c) { return c.count > 0; })));
  for (size_t i = 0; i < n; ++i) {
    const TreeIndex::Site& s = index.sites_[i];
    if (costs[i].count > 0)
      list.push_back({{s.image_id, s.stack_id, index.kinds_[s.kind]}, costs[i].count, costs[i].allocated, s.min_size, s.max_size});
  }
  return histogramOf(rec, list, {}, t_from_ns, t_to_ns, top_sites);
}

}  // namespace memledger::analyzer
