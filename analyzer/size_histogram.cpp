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

// The histogram of the sites `each` gives (each(f) calls f(const SiteSizes&) per site): a site
// whose smallest and largest sizes share a bucket goes there exactly, the others are split by
// their allocation rows in [from, to] when every block has one, else put at their mean size.
// Each bucket keeps its sums and only its `top_sites` largest sites as it goes (a PyTorch range
// has 500,000 sites: a list of them all, and one per bucket, were 40 MB at a range's peak).
template <class Each>
SizeHistogram histogramOf(const Recording& rec, const Each& each, const Filter& rowFilter,
                          std::optional<int64_t> from, std::optional<int64_t> to, size_t top_sites) {
  struct Entry {
    SiteKey key;
    int64_t count, bytes;
    bool exact;
  };
  // Largest first: count, bytes, then the key (a total order, so the cut does not depend on the
  // order the sites come in).
  auto order = [](const Entry& x, const Entry& y) {
    return std::tie(y.count, y.bytes, x.key.stack_id, x.key.image_id, x.key.kind) <
           std::tie(x.count, x.bytes, y.key.stack_id, y.key.image_id, y.key.kind);
  };
  struct Bucket {
    int64_t count = 0, bytes = 0;
    size_t site_count = 0;
    std::vector<Entry> top;  // a heap of at most top_sites, its last-ranked first
  };
  std::map<int, Bucket> byBucket;
  auto add = [&](int index, const SiteKey& key, int64_t count, int64_t bytes, bool exact) {
    Bucket& b = byBucket[index];
    b.count += count;
    b.bytes += bytes;
    ++b.site_count;
    if (top_sites == 0) return;
    Entry e{key, count, bytes, exact};
    if (b.top.size() < top_sites) {
      b.top.push_back(e);
      std::push_heap(b.top.begin(), b.top.end(), order);
    } else if (order(e, b.top.front())) {
      std::pop_heap(b.top.begin(), b.top.end(), order);
      b.top.back() = e;
      std::push_heap(b.top.begin(), b.top.end(), order);
    }
  };
  const bool allRows = rec.info().allocation_rows == "all";
  std::set<SiteKey> split;  // sites to split from their allocation rows
  SizeHistogram out;
  each([&](const SiteSizes& s) {
    if (s.count <= 0) return;
    int lo = sizeBucketIndex(uint64_t(s.min_size)), hi = sizeBucketIndex(uint64_t(s.max_size));
    if (lo == hi) {
      add(lo, s.key, s.count, s.bytes, true);
    } else if (allRows) {
      split.insert(s.key);
    } else {
      add(sizeBucketIndex(uint64_t(s.bytes / s.count)), s.key, s.count, s.bytes, false);
      out.estimated_count += s.count;
    }
  });
  if (!split.empty()) {
    // A split site's rows add up per (bucket, site) first: it is one site in each of its buckets.
    std::map<int, std::map<SiteKey, std::pair<int64_t, int64_t>>> splitByBucket;
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
      if (it == split.end()) continue;
      auto& sum = splitByBucket[sizeBucketIndex(uint64_t(q.i64(3)))][*it];
      sum.first += q.i64(4);
      sum.second += q.i64(5);
    }
    for (auto& [index, sites] : splitByBucket)
      for (auto& [key, sum] : sites) add(index, key, sum.first, sum.second, true);
  }
  for (auto& [index, bucket] : byBucket) {
    SizeBucket b;
    b.from = index == 0 ? 0 : uint64_t(1) << index;
    b.to = (uint64_t(1) << (index + 1)) - 1;
    b.count = bucket.count;
    b.bytes = bucket.bytes;
    b.site_count = bucket.site_count;
    std::sort_heap(bucket.top.begin(), bucket.top.end(), order);
    for (const Entry& e : bucket.top) {
      SizeBucketSite& site = b.sites.emplace_back();
      site.stack_id = e.key.stack_id;
      site.image_id = e.key.image_id;
      site.kind = e.key.kind;
      site.count = e.count;
      site.bytes = e.bytes;
      site.exact = e.exact;
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
  auto each = [&](auto&& f) {
    for (const SiteSizes& s : sites) f(s);
  };
  return histogramOf(rec, each, filter, filter.t_from_ns, filter.t_to_ns, top_sites);
}

SizeHistogram sizeHistogram(const Recording& rec, const std::vector<SiteCost>& sites, std::optional<int64_t> t_from_ns,
                            std::optional<int64_t> t_to_ns, size_t top_sites) {
  auto each = [&](auto&& f) {
    for (const SiteCost& c : sites)
      if (c.cost.count > 0) f(SiteSizes{{c.image_id, c.stack_id, c.kind}, c.cost.count, c.cost.allocated, c.min_size, c.max_size});
  };
  return histogramOf(rec, each, {}, t_from_ns, t_to_ns, top_sites);
}

SizeHistogram sizeHistogram(const Recording& rec, const std::vector<SiteCost>& sites, const std::vector<TreeCost>& costs,
                            std::optional<int64_t> t_from_ns, std::optional<int64_t> t_to_ns, size_t top_sites) {
  const size_t n = std::min(sites.size(), costs.size());
  auto each = [&](auto&& f) {
    for (size_t i = 0; i < n; ++i) {
      const SiteCost& c = sites[i];
      if (costs[i].count > 0) f(SiteSizes{{c.image_id, c.stack_id, c.kind}, costs[i].count, costs[i].allocated, c.min_size, c.max_size});
    }
  };
  return histogramOf(rec, each, {}, t_from_ns, t_to_ns, top_sites);
}

SizeHistogram sizeHistogram(const Recording& rec, const TreeIndex& index, const std::vector<TreeCost>& costs,
                            std::optional<int64_t> t_from_ns, std::optional<int64_t> t_to_ns, size_t top_sites) {
  const size_t n = std::min(index.sites_.size(), costs.size());
  auto each = [&](auto&& f) {
    for (size_t i = 0; i < n; ++i) {
      if (costs[i].count <= 0) continue;
      const detail::ActivitySite& s = index.row(i);
      f(SiteSizes{{s.image_id, s.stack_id, index.kinds_[index.sites_[i].kind]}, costs[i].count, costs[i].allocated,
                  s.min_size, s.max_size});
    }
  };
  return histogramOf(rec, each, {}, t_from_ns, t_to_ns, top_sites);
}

}  // namespace memledger::analyzer
