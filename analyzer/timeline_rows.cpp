// The rows of the memory curve, whichever way the file stores them (schema 3 packs them into
// timeline_buckets; versions 1-2 have one `timeline` row per bucket).
#include <algorithm>
#include <map>

#include "analyzer/analyzer.h"
#include "analyzer/sql.h"
#include "schemas/packed.h"

namespace memledger::analyzer::detail {

namespace {

using packed::readVarint;
using packed::unzigzag;

// Decodes one timeline_buckets row (see the schema) into `out`; stops at damage.
void decodeBuckets(int64_t image, int version, const unsigned char* p, const unsigned char* end,
                   std::vector<TimelineRow>& out) {
  TimelineRow prev{};
  prev.image_id = image;
  int64_t prevRss = 0, prevAnon = 0;
  while (p && p < end) {
    uint64_t v[6];
    for (uint64_t& x : v)
      if (!readVarint(p, end, &x)) return;
    TimelineRow r{};
    r.image_id = image;
    // Unsigned arithmetic: damaged deltas wrap instead of overflowing.
    r.t_ns = static_cast<int64_t>(uint64_t(prev.t_ns) + uint64_t(unzigzag(v[0])));
    r.heap_bytes = static_cast<int64_t>(uint64_t(prev.heap_bytes) + uint64_t(unzigzag(v[1])));
    r.heap_max = static_cast<int64_t>(uint64_t(r.heap_bytes) + uint64_t(unzigzag(v[2])));
    r.heap_min = static_cast<int64_t>(uint64_t(r.heap_bytes) - uint64_t(unzigzag(v[3])));
    r.mmap_bytes = static_cast<int64_t>(uint64_t(prev.mmap_bytes) + uint64_t(unzigzag(v[4])));
    uint64_t flags = v[5], x;
    if (flags & 1) {
      if (!readVarint(p, end, &x)) return;
      prevRss = static_cast<int64_t>(uint64_t(prevRss) + uint64_t(unzigzag(x)));
      r.rss_bytes = prevRss;
    }
    if (flags & 2) {
      if (!readVarint(p, end, &x)) return;
      prevAnon = static_cast<int64_t>(uint64_t(prevAnon) + uint64_t(unzigzag(x)));
      r.anon_bytes = prevAnon;
    }
    uint64_t counts[3];
    for (uint64_t& c : counts)
      if (!readVarint(p, end, &c)) return;
    r.allocs = static_cast<int64_t>(counts[0]);
    r.frees = static_cast<int64_t>(counts[1]);
    r.alloc_bytes = static_cast<int64_t>(counts[2]);
    if (version >= 5) {  // the other accounts that changed in the bucket
      uint64_t n;
      if (!readVarint(p, end, &n) || n > uint64_t(end - p)) return;
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t a[4];
        for (uint64_t& x : a)
          if (!readVarint(p, end, &x)) return;
        int64_t live = unzigzag(a[1]);
        r.accounts.push_back({static_cast<int64_t>(a[0]), live,
                              static_cast<int64_t>(uint64_t(live) + uint64_t(unzigzag(a[2]))),
                              static_cast<int64_t>(uint64_t(live) - uint64_t(unzigzag(a[3])))});
      }
    }
    out.push_back(r);
    prev = r;
  }
}

}  // namespace

std::vector<TimelineRow> timelineRows(const Recording& rec, const std::string& imageCond) {
  std::vector<TimelineRow> rows;
  if (rec.info().schema_version < 3) {
    std::string sql =
        "SELECT image_id, t_ns, heap_bytes, heap_max, heap_min, mmap_bytes, rss_bytes, anon_bytes, "
        "allocs, frees, alloc_bytes FROM timeline WHERE 1" + imageCond + " ORDER BY t_ns, image_id";
    Statement q(rec, sql.c_str());
    while (q.step())
      rows.push_back({q.i64(0), q.i64(1), q.i64(2), q.i64(3), q.i64(4), q.i64(5), q.optI64(6), q.optI64(7),
                      q.i64(8), q.i64(9), q.i64(10)});
    return rows;
  }
  std::string sql = "SELECT image_id, buckets FROM timeline_buckets WHERE 1" + imageCond + " ORDER BY id";
  Statement q(rec, sql.c_str());
  while (q.step()) {
    const auto* p = static_cast<const unsigned char*>(q.blob(1));
    decodeBuckets(q.i64(0), rec.info().schema_version, p, p ? p + q.bytes(1) : p, rows);
  }
  // A bucket written again replaces the earlier entry (as INSERT OR REPLACE did in version 2):
  // a stable sort keeps write order within a bucket, and the last one stays. Rows are written in
  // time order, so they are almost always sorted already: a check then spares the sort (10^6
  // buckets: the sort was half of reading them).
  auto before = [](const TimelineRow& a, const TimelineRow& b) {
    return a.t_ns != b.t_ns ? a.t_ns < b.t_ns : a.image_id < b.image_id;
  };
  if (!std::is_sorted(rows.begin(), rows.end(), before)) std::stable_sort(rows.begin(), rows.end(), before);
  size_t kept = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (kept > 0 && rows[kept - 1].t_ns == rows[i].t_ns && rows[kept - 1].image_id == rows[i].image_id)
      rows[kept - 1] = std::move(rows[i]);
    else if (kept++ != i)
      rows[kept - 1] = std::move(rows[i]);
  }
  rows.resize(kept);
  return rows;
}

}  // namespace memledger::analyzer::detail
