#include "analyzer/site_activity.h"

#include <algorithm>

#include "analyzer/control.h"

namespace memledger::analyzer::detail {

ActivitySites::ActivitySites(const Recording& rec) {
  for (const Site& s : siteRows(rec, {})) {
    const kinds::KindInfo* k = kinds::byName(s.kind);
    if (!k) continue;
    ActivitySite a;
    a.image_id = s.image_id;
    a.stack_id = s.stack_id;
    a.kind = k->code;
    a.space = s.space;
    a.leak_count = s.leak_count;
    a.leak_bytes = s.leak_bytes;
    a.peak_count = s.peak_count;
    a.peak_bytes = s.peak_bytes;
    // A stack and kind with sites in two accounts (a pool and the heap): entries cannot tell them
    // apart; the first keeps them.
    if (index_.try_emplace({a.image_id, a.stack_id, a.kind}, int32_t(sites_.size())).second) sites_.push_back(std::move(a));
  }
  Statement q(rec, "SELECT id, end_ns FROM processes WHERE end_ns IS NOT NULL");
  while (q.step()) {
    ends_[q.i64(0)] = q.i64(1);
    lastEnd_ = std::max(lastEnd_, q.i64(1));
  }
}

bool forEachActivity(const Recording& rec, const std::function<void(int64_t, int64_t, const SiteActivity&)>& f) {
  const int version = rec.info().schema_version;
  if (version < 2) return false;
  int64_t rows = 1;
  {
    Statement n(rec, version >= 3 ? "SELECT count(*) FROM site_buckets" : "SELECT count(*) FROM site_timeline");
    if (n.step()) rows = std::max<int64_t>(1, n.i64(0));
  }
  int64_t row = 0;
  if (version >= 3) {
    Statement q(rec, "SELECT image_id, buckets FROM site_buckets ORDER BY id");
    while (q.step()) {
      const int64_t image = q.i64(0);
      forEachSiteBucket(q.blob(1), q.bytes(1), [&](int64_t t, const void* entries, int bytes) {
        forEachSiteActivity(entries, bytes, version, [&](const SiteActivity& e) { f(image, t, e); });
      });
      if ((++row & 63) == 0) progress(double(row) / double(rows));
    }
  } else {
    Statement q(rec, "SELECT image_id, t_ns, sites FROM site_timeline ORDER BY image_id, t_ns");
    while (q.step()) {
      const int64_t image = q.i64(0), t = q.i64(1);
      forEachSiteActivity(q.blob(2), q.bytes(2), version, [&](const SiteActivity& e) { f(image, t, e); });
      if ((++row & 63) == 0) progress(double(row) / double(rows));
    }
  }
  return true;
}

int64_t recordingEnd(const Recording& rec) {
  int64_t end = rec.info().duration_ns;
  Statement q(rec, "SELECT max(coalesce(end_ns, start_ns)) FROM processes");
  if (q.step() && !q.isNull(0)) end = std::max(end, q.i64(0));
  return std::max<int64_t>(end, 1);
}

}  // namespace memledger::analyzer::detail
