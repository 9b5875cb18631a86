#include "analyzer/site_activity.h"

#include <algorithm>
#include <bit>
#include <string_view>

#include "analyzer/control.h"
#include "schemas/kinds.h"

namespace memledger::analyzer::detail {

namespace {
struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const {
    return std::hash<int64_t>()(p.first) * 1000003u ^ std::hash<int64_t>()(p.second);
  }
};
}  // namespace

ActivitySites::ActivitySites(const Recording& rec) {
  // The sites as siteRows() lists them (alloc_bytes descending, then stack id and kind), decoded
  // straight from the totals: no Site with its strings per site, and Python images' leaks by
  // the finalization rule (analyzer/python_leaks.cpp).
  std::unordered_map<std::pair<int64_t, int64_t>, std::string, PairHash> names;  // (image, account) -> space
  for (const SpacePeak& sp : spacePeaks(rec)) names[{sp.image_id, sp.account}] = sp.name;  // the last, as siteRows()
  const PythonSnapshot& py = rec.pythonSnapshot();
  std::vector<std::string> spaces;  // in order of appearance, then sorted below
  auto spaceOf = [&](const std::string& name) {
    auto it = std::find(spaces.begin(), spaces.end(), name);
    if (it != spaces.end()) return int32_t(it - spaces.begin());
    spaces.push_back(name);
    return int32_t(spaces.size() - 1);
  };
  // Counted first, so the table is made at its size (a vector grown by doubling held up to three
  // times it while it grew: 180 MB for a PyTorch run).
  size_t count = 0;
  forEachSite(rec, [&](const SiteEntry&) { ++count; });
  sites_.reserve(count);
  forEachSite(rec, [&](const SiteEntry& e) {
    if (sites_.size() == count) return;  // the file changed between the passes (it is read-only)
    ActivitySite& a = sites_.emplace_back();
    a.image_id = e.image_id;
    a.stack_id = e.stack_id;
    a.kind = uint8_t(std::min<uint64_t>(e.kind, 255));
    a.active = kinds::info(e.kind) != nullptr;
    auto name = names.find({e.image_id, int64_t(e.account)});
    a.space_id = spaceOf(name != names.end() ? name->second : (e.account == 1 ? "mmap" : "heap"));
    a.leak_bytes = e.leak_bytes;
    if (std::binary_search(py.images.begin(), py.images.end(), e.image_id)) {
      const PythonSnapshot::Site* it = py.find(PythonSnapshot::Key{e.image_id, e.stack_id, e.kind});
      a.leak_bytes = it ? it->bytes : 0;
    }
    a.peak_count = e.peak_count;
    a.peak_bytes = e.peak_bytes;
    a.alloc_bytes = e.alloc_bytes;
    a.alloc_count = e.alloc_count;
    a.temp_count = e.temp_count;
    a.min_size = e.min_size;
    a.max_size = e.max_size;
  });
  // Sorted by index (the file's order among full ties, as a stable sort), then moved in place
  // along the permutation's cycles: no second table.
  std::vector<uint32_t> order(sites_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = uint32_t(i);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const ActivitySite &a = sites_[x], &b = sites_[y];
    if (a.alloc_bytes != b.alloc_bytes) return a.alloc_bytes > b.alloc_bytes;
    if (a.stack_id != b.stack_id) return a.stack_id < b.stack_id;
    if (a.kind != b.kind) return std::string_view(siteKindName(a.kind)) < std::string_view(siteKindName(b.kind));
    return x < y;
  });
  for (size_t i = 0; i < order.size(); ++i) {  // sites_[j] becomes the old sites_[order[j]]
    if (order[i] == i) continue;
    const ActivitySite first = sites_[i];
    for (size_t j = i;;) {
      const size_t k = order[j];
      order[j] = uint32_t(j);
      if (k == i) {
        sites_[j] = first;
        break;
      }
      sites_[j] = sites_[k];
      j = k;
    }
  }
  order = std::vector<uint32_t>();  // `= {}` would keep the capacity
  // A stack and kind with sites in two accounts (a pool and the heap): entries cannot tell them
  // apart; the first keeps them, the others are not active.
  makeIndex();
  spaces_ = spaces;
  std::sort(spaces_.begin(), spaces_.end());
  std::vector<int32_t> sorted(spaces.size());
  for (size_t k = 0; k < spaces.size(); ++k)
    sorted[k] = int32_t(std::lower_bound(spaces_.begin(), spaces_.end(), spaces[k]) - spaces_.begin());
  space_active_.assign(spaces_.size(), 0);
  for (ActivitySite& a : sites_) {
    a.space_id = sorted[size_t(a.space_id)];
    if (a.active) space_active_[size_t(a.space_id)] = 1;
  }
  kept_ = true;
  const bool any = forEachActivity(rec, [&](int64_t image, int64_t t, const SiteActivity& e) {
    if (!kept_) return;
    constexpr int64_t kMax = UINT32_MAX;
    if (e.allocs < 0 || e.allocs > kMax || e.frees < 0 || e.frees > kMax || e.temps < 0 || e.temps > kMax) {
      kept_ = false;
      return;
    }
    if (buckets_.empty() || buckets_.back().image != image || buckets_.back().t != t) buckets_.push_back({image, t, 0});
    const int32_t site = find(image, e.stack_id, e.kind);
    constexpr int64_t kCount = UINT16_MAX, kBytes = UINT32_MAX;
    if (e.allocs <= kCount && e.frees <= kCount && e.temps <= kCount && e.alloc_bytes >= 0 && e.alloc_bytes <= kBytes &&
        e.freed_bytes >= 0 && e.freed_bytes <= kBytes) {
      steps_.push_back({site, uint16_t(e.allocs), uint16_t(e.frees), uint16_t(e.temps), 0, uint32_t(e.alloc_bytes),
                        uint32_t(e.freed_bytes)});
    } else {
      if (wide_.size() >= kBytes) {  // 4 * 10^9 wide entries: not kept (read again each time)
        kept_ = false;
        return;
      }
      steps_.push_back({site, 0, 0, 0, 1, uint32_t(wide_.size()), 0});
      wide_.push_back({uint32_t(e.allocs), uint32_t(e.frees), uint32_t(e.temps), e.alloc_bytes, e.freed_bytes});
    }
    buckets_.back().end = steps_.size();
  });
  kept_ = kept_ && any;
  if (!kept_) {
    buckets_ = std::vector<Bucket>();
    steps_ = std::vector<Step>();
    wide_ = std::vector<WideStep>();
  }
  buckets_.shrink_to_fit();
  steps_.shrink_to_fit();
  wide_.shrink_to_fit();
  if (kept_) {
    index_ = std::vector<int32_t>();  // `index_ = {}` would clear it and keep the 8 MB
    dropped_ = true;
  }
  Statement q(rec, "SELECT id, end_ns FROM processes WHERE end_ns IS NOT NULL");
  while (q.step()) {
    ends_[q.i64(0)] = q.i64(1);
    lastEnd_ = std::max(lastEnd_, q.i64(1));
  }
}

void ActivitySites::makeIndex() {
  size_t active = 0;
  for (const ActivitySite& a : sites_) active += a.active;
  size_t capacity = 1024;
  while (capacity < active * 2) capacity *= 2;
  shift_ = 64 - std::countr_zero(capacity);
  index_.assign(capacity, -1);
  for (size_t i = 0; i < sites_.size(); ++i) {
    ActivitySite& a = sites_[i];
    if (!a.active) continue;
    size_t at = slot(a.image_id, a.stack_id, a.kind);
    bool known = false;
    for (; index_[at] >= 0; at = (at + 1) & (capacity - 1)) {
      const ActivitySite& s = sites_[size_t(index_[at])];
      if (s.stack_id == a.stack_id && s.image_id == a.image_id && s.kind == a.kind) known = true;
    }
    if (known) a.active = false;
    else index_[at] = int32_t(i);
  }
}

bool ActivitySites::replay(const Recording& rec,
                           const std::function<void(int64_t, int64_t, int32_t, const SiteActivity&)>& f,
                           int64_t until) const {
  if (!kept_) {
    return forEachActivity(rec, [&](int64_t image, int64_t t, const SiteActivity& e) {
      if (t <= until) f(image, t, find(image, e.stack_id, e.kind), e);
    });
  }
  size_t at = 0;
  SiteActivity e;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bucket = buckets_[b];
    if ((b & 63) == 0) throwIfCancelled();
    if (bucket.t > until) {
      at = bucket.end;
      continue;
    }
    for (; at < bucket.end; ++at) {
      const Step& s = steps_[at];
      if (s.site >= 0) {
        e.stack_id = sites_[size_t(s.site)].stack_id;
        e.kind = sites_[size_t(s.site)].kind;
      } else {
        e.stack_id = 0;
        e.kind = 0;
      }
      if (s.wide) {
        const WideStep& w = wide_[s.alloc_bytes];
        e.allocs = w.allocs;
        e.alloc_bytes = w.alloc_bytes;
        e.frees = w.frees;
        e.freed_bytes = w.freed_bytes;
        e.temps = w.temps;
      } else {
        e.allocs = s.allocs;
        e.alloc_bytes = s.alloc_bytes;
        e.frees = s.frees;
        e.freed_bytes = s.freed_bytes;
        e.temps = s.temps;
      }
      f(bucket.image, bucket.t, s.site, e);
    }
  }
  return true;
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
