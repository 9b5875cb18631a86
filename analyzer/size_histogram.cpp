// Allocation sizes in power-of-two buckets (size_histogram.h). Per site, site_totals knows the
// count, bytes, smallest and largest size: a site whose smallest and largest sizes fall in one
// bucket is exact from them alone (most sites: one call site, one size). The others are split
// from their `allocations` rows when every block has one, else put at their mean size.
#include "analyzer/size_histogram.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

#include "analyzer/sql.h"

namespace memledger::analyzer {

int sizeBucketIndex(uint64_t size) { return size <= 1 ? 0 : std::bit_width(size) - 1; }

namespace {
struct SiteKey {
  int64_t image_id, stack_id;
  std::string kind;
  bool operator<(const SiteKey& o) const {
    return std::tie(image_id, stack_id, kind) < std::tie(o.image_id, o.stack_id, o.kind);
  }
};
}  // namespace

SizeHistogram sizeHistogram(const Recording& rec, const Filter& filter, size_t top_sites) {
  Filter siteFilter = filter;
  siteFilter.top.reset();
  // bucket index -> site -> amounts
  std::map<int, std::map<SiteKey, SizeBucketSite>> byBucket;
  auto add = [&](int bucket, const SiteKey& key, int64_t count, int64_t bytes, bool exact) {
    SizeBucketSite& s = byBucket[bucket][key];
    s.stack_id = key.stack_id;
    s.image_id = key.image_id;
    s.kind = key.kind;
    s.count += count;
    s.bytes += bytes;
    s.exact = s.exact && exact;
  };
  const bool allRows = rec.info().allocation_rows == "all";
  const bool timed = filter.t_from_ns || filter.t_to_ns;
  std::map<SiteKey, bool> split;  // sites to split from their allocation rows
  SizeHistogram out;
  if (!timed) {
    for (const Site& s : detail::siteRows(rec, siteFilter)) {
      if (s.alloc_count <= 0) continue;
      SiteKey key{s.image_id, s.stack_id, s.kind};
      int lo = sizeBucketIndex(uint64_t(s.min_size)), hi = sizeBucketIndex(uint64_t(s.max_size));
      if (lo == hi) {
        add(lo, key, s.alloc_count, s.alloc_bytes, true);
      } else if (allRows) {
        split[key] = true;
      } else {
        add(sizeBucketIndex(uint64_t(s.alloc_bytes / s.alloc_count)), key, s.alloc_count, s.alloc_bytes, false);
        out.estimated_count += s.alloc_count;
      }
    }
  }
  // A time range needs the blocks' own times: only the allocation rows have them (exact with
  // allocation_rows 'all'; otherwise only the blocks that have rows are seen).
  if (timed || !split.empty()) {
    std::string sql = "SELECT image_id, stack_id, kind, size, count(*), sum(size) FROM allocations WHERE t_alloc >= ? AND t_alloc <= ?" +
                      detail::imageCondition(rec, filter, "image_id") + (filter.kind ? " AND kind = ?" : "") +
                      " GROUP BY image_id, stack_id, kind, size";
    detail::Statement q(rec, sql.c_str());
    q.bind(1, filter.t_from_ns.value_or(INT64_MIN));
    q.bind(2, filter.t_to_ns.value_or(INT64_MAX));
    if (filter.kind) q.bind(3, *filter.kind);
    while (q.step()) {
      SiteKey key{q.i64(0), q.i64(1), q.text(2)};
      if (!timed && !split.count(key)) continue;
      add(sizeBucketIndex(uint64_t(q.i64(3))), key, q.i64(4), q.i64(5), timed ? allRows : true);
      if (timed && !allRows) out.estimated_count += q.i64(4);
    }
  }
  for (auto& [index, sites] : byBucket) {
    SizeBucket b;
    b.from = index == 0 ? 0 : uint64_t(1) << index;
    b.to = (uint64_t(1) << (index + 1)) - 1;
    for (auto& [key, s] : sites) {
      b.count += s.count;
      b.bytes += s.bytes;
      b.sites.push_back(std::move(s));
    }
    b.site_count = b.sites.size();
    std::sort(b.sites.begin(), b.sites.end(), [](const SizeBucketSite& x, const SizeBucketSite& y) {
      return std::tie(y.count, y.bytes, x.stack_id) < std::tie(x.count, x.bytes, y.stack_id);
    });
    if (b.sites.size() > top_sites) b.sites.resize(top_sites);
    out.count += b.count;
    out.bytes += b.bytes;
    out.buckets.push_back(std::move(b));
  }
  return out;
}

}  // namespace memledger::analyzer
