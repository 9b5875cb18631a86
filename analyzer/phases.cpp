// The memory curve (timeline), markers, and phases: named by markers when the program set any,
// otherwise found on the heap curve as "a ramp, then a release".
#include <algorithm>
#include <map>
#include <unordered_map>

#include "analyzer/analyzer.h"
#include "analyzer/site_merge.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

namespace {

// The curve of a set of images (empty set: all), summed per bucket over the images alive then.
// An image without a row in a bucket did nothing then, so its last values carry forward into the
// sum until it ends: an ended process's memory leaves the total (its leftovers stay leaks).
// Accounts other than heap and mmap (version 5) are summed by name into TimelinePoint::spaces.
std::vector<TimelinePoint> curve(const Recording& rec, const std::string& imageCond) {
  struct Last {
    int64_t heap = 0, mmap = 0;
    std::optional<int64_t> rss, anon;
    std::map<int64_t, int64_t> accounts;  // account -> live
  };
  std::unordered_map<int64_t, int64_t> endOf;  // image -> end_ns, for images that ended
  {
    detail::Statement q(rec, "SELECT id, end_ns FROM processes WHERE end_ns IS NOT NULL");
    while (q.step()) endOf[q.i64(0)] = q.i64(1);
  }
  std::map<std::pair<int64_t, int64_t>, std::string> names;  // (image, account) -> name
  for (const SpacePeak& sp : spacePeaks(rec))
    if (sp.account >= 2) names[{sp.image_id, sp.account}] = sp.name;
  auto addSpace = [&](TimelinePoint& p, int64_t image, int64_t account, int64_t live, int64_t max, int64_t min) {
    auto n = names.find({image, account});
    std::string name = n != names.end() ? n->second : "account:" + std::to_string(account);
    auto it = std::find_if(p.spaces.begin(), p.spaces.end(), [&](const SpaceValue& v) { return v.name == name; });
    if (it == p.spaces.end()) it = p.spaces.insert(p.spaces.end(), SpaceValue{name, 0, 0, 0});
    it->bytes += live;
    it->max += max;
    it->min += min;
  };
  std::unordered_map<int64_t, Last> last;
  std::vector<TimelinePoint> out;
  // Rows of one bucket are accumulated, then the images that had no row are added at their last.
  std::vector<int64_t> touched;
  auto finish = [&](TimelinePoint& p) {
    for (auto it = last.begin(); it != last.end();) {
      auto& [image, l] = *it;
      if (std::find(touched.begin(), touched.end(), image) != touched.end()) {
        ++it;
        continue;
      }
      if (auto e = endOf.find(image); e != endOf.end() && e->second <= p.t_ns) {
        it = last.erase(it);  // ended before this bucket: nothing of it is live any more
        continue;
      }
      p.heap_bytes += l.heap;
      p.heap_max += l.heap;
      p.heap_min += l.heap;
      p.mmap_bytes += l.mmap;
      if (l.rss) p.rss_bytes = p.rss_bytes.value_or(0) + *l.rss;
      if (l.anon) p.anon_bytes = p.anon_bytes.value_or(0) + *l.anon;
      for (auto& [account, live] : l.accounts) addSpace(p, image, account, live, live, live);
      ++it;
    }
    touched.clear();
  };
  for (const detail::TimelineRow& r : detail::timelineRows(rec, imageCond)) {
    int64_t image = r.image_id, t = r.t_ns;
    if (out.empty() || out.back().t_ns != t) {
      if (!out.empty()) finish(out.back());
      out.push_back(TimelinePoint{});
      out.back().t_ns = t;
    }
    TimelinePoint& p = out.back();
    Last& l = last[image];
    l.heap = r.heap_bytes;
    l.mmap = r.mmap_bytes;
    // A row's own NULL sample stays NULL ("no sample yet"); only idle images carry forward.
    l.rss = r.rss_bytes;
    l.anon = r.anon_bytes;
    touched.push_back(image);
    p.heap_bytes += l.heap;
    p.heap_max += r.heap_max;
    p.heap_min += r.heap_min;
    p.mmap_bytes += l.mmap;
    if (l.rss) p.rss_bytes = p.rss_bytes.value_or(0) + *l.rss;
    if (l.anon) p.anon_bytes = p.anon_bytes.value_or(0) + *l.anon;
    p.allocs += r.allocs;
    p.frees += r.frees;
    p.alloc_bytes += r.alloc_bytes;
    for (const detail::AccountValue& a : r.accounts) l.accounts[a.account] = a.live;
    for (auto& [acc, live] : l.accounts) {
      const int64_t account = acc;  // a lambda may not capture a structured binding (clang 14)
      auto changed = std::find_if(r.accounts.begin(), r.accounts.end(),
                                  [&](const detail::AccountValue& a) { return a.account == account; });
      if (changed != r.accounts.end()) addSpace(p, image, account, live, changed->max, changed->min);
      else addSpace(p, image, account, live, live, live);
    }
  }
  if (!out.empty()) finish(out.back());
  return out;
}

struct Range {
  std::string name;
  bool marker = false;
  int64_t start = 0, end = 0;
};

// Cuts the heap curve into ramp-then-release phases. Each bucket is expanded into its low and
// high points in the order the bucket moved (a rising bucket dipped first, a falling one peaked
// first), so a bucket holding both the end of a release and the start of the next ramp still
// shows the valley. A phase ends at a valley once the curve has released at least half of the
// phase's rise above its baseline, and at least twice the noise band; hysteresis (the next ramp
// must climb a noise band above the valley) keeps jitter on a ramp or a plateau from splitting
// phases. The noise band is 5% of the global peak, at least 64 KiB (a small program's curve is
// all noise); when that still cuts the run into more than kMaxAutoPhases (a loop allocating and
// freeing per iteration), the band widens until only the most significant swings remain.
constexpr size_t kMaxAutoPhases = 20;
constexpr int64_t kMinNoiseBytes = 64 << 10;

struct Sample {
  int64_t t, v;
};

std::vector<Range> cutPhases(const std::vector<Sample>& s, int64_t noise, int64_t startNs, int64_t endNs) {
  std::vector<Range> out;
  int64_t start = startNs;
  int64_t base = s.front().v, top = s.front().v, valley = s.front().v, valleyT = s.front().t;
  bool released = false;
  for (const auto& x : s) {
    if (!released && x.v > top) {
      top = x.v;
      valley = x.v;
      valleyT = x.t;
    }
    if (!released && x.v < base) base = x.v;
    if (x.v < valley) {
      valley = x.v;
      valleyT = x.t;
    }
    int64_t rise = top - base, drop = top - valley;
    if (!released && drop >= 2 * noise && 2 * drop >= rise) released = true;
    if (released && x.v >= valley + noise) {
      out.push_back({"", false, start, valleyT});
      start = valleyT;
      base = valley;
      top = x.v;
      valley = x.v;
      valleyT = x.t;
      released = false;
    }
  }
  out.push_back({"", false, start, std::max(endNs, s.back().t)});
  return out;
}

std::vector<Range> automaticRanges(const std::vector<TimelinePoint>& tl, int64_t bucket, int64_t endNs) {
  std::vector<Sample> s;
  int64_t prevEnd = tl.empty() ? 0 : tl.front().heap_min;
  int64_t globalPeak = 0;
  for (const auto& p : tl) {
    globalPeak = std::max(globalPeak, p.heap_max);
    if (p.heap_bytes >= prevEnd) {
      s.push_back({p.t_ns, p.heap_min});
      s.push_back({p.t_ns + bucket, p.heap_max});
    } else {
      s.push_back({p.t_ns, p.heap_max});
      s.push_back({p.t_ns + bucket, p.heap_min});
    }
    s.push_back({p.t_ns + bucket, p.heap_bytes});
    prevEnd = p.heap_bytes;
  }
  if (s.empty()) return {};
  int64_t noise = std::max<int64_t>(kMinNoiseBytes, globalPeak / 20);
  std::vector<Range> out = cutPhases(s, noise, tl.front().t_ns, endNs);
  while (out.size() > kMaxAutoPhases && noise < globalPeak) {
    noise *= 2;
    out = cutPhases(s, noise, tl.front().t_ns, endNs);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].name = "phase " + std::to_string(i + 1);
  return out;
}

// One site per piece of code across processes (analyzer/site_merge.h); the cut is per stored
// site, so a merged list can be shorter than `top`.
std::vector<std::vector<SiteAmount>> mergedLists(const Recording& rec, const Filter& filter,
                                                 std::vector<std::vector<SiteAmount>> lists) {
  if (!detail::severalProcesses(rec, filter)) return lists;
  for (auto& list : lists) {
    list = detail::mergeAcrossProcesses(rec, std::move(list));
    std::stable_sort(list.begin(), list.end(), [](const SiteAmount& a, const SiteAmount& b) { return a.bytes > b.bytes; });
  }
  return lists;
}

// Top sites of every phase by bytes allocated in it. One phase is the whole run: the exact
// per-site totals of `sites` answer it. Several phases take one sequential pass over
// `site_buckets` (`site_timeline` before schema 3: each bucket's sites; phases start at bucket
// starts, markers cut buckets, so
// each bucket falls in exactly one phase and the sums are exact). A version 1 file has no
// site_timeline: the pass reads its allocation rows instead (there, only allocations that lived
// at least the fold threshold). Per entry the pass adds into a dense array: a GROUP BY per phase
// would sort every row into a temporary b-tree (~1 us a row), and 10^7 rows must take well
// under a second.
std::vector<std::vector<SiteAmount>> phaseTopSites(const Recording& rec, const std::vector<Range>& ranges,
                                                   const Filter& filter, size_t top) {
  std::vector<std::vector<SiteAmount>> out(ranges.size());
  if (ranges.empty()) return out;
  Filter f = filter;
  f.top.reset();
  f.t_from_ns.reset();
  f.t_to_ns.reset();
  // One phase: the largest sites by their exact totals, straight from SQL.
  if (ranges.size() == 1) f.top = top;
  // Phases are cut on the heap curve: their top sites are heap sites unless a kind was asked for.
  std::string heapOnly = "kind IN " + detail::heapKindsSql();
  std::vector<Site> siteList = detail::siteRows(rec, f, filter.kind ? nullptr : heapOnly.c_str());
  auto emit = [&](size_t phase, const Site& s, int64_t count, int64_t bytes) {
    SiteAmount a;
    a.stack_id = s.stack_id;
    a.kind = s.kind;
    a.pid = s.pid;
    a.count = count;
    a.bytes = bytes;
    a.stack = rec.stack(s.stack_id);
    out[phase].push_back(std::move(a));
  };
  if (ranges.size() == 1) {
    std::sort(siteList.begin(), siteList.end(), [](const Site& a, const Site& b) {
      return a.alloc_bytes != b.alloc_bytes ? a.alloc_bytes > b.alloc_bytes : a.stack_id < b.stack_id;
    });
    for (size_t i = 0; i < siteList.size() && i < top; ++i)
      if (siteList[i].alloc_bytes > 0) emit(0, siteList[i], siteList[i].alloc_count, siteList[i].alloc_bytes);
    return mergedLists(rec, filter, std::move(out));
  }

  // slot: index into siteList. A stack is one call path in one image, so it almost always has
  // one kind; only stacks with several kinds need the row's kind text to pick their slot.
  int64_t maxStack = 0;
  for (const Site& s : siteList) maxStack = std::max(maxStack, s.stack_id);
  constexpr int32_t kNone = -1, kSeveral = -2;
  std::vector<int32_t> slotOf(static_cast<size_t>(maxStack) + 1, kNone);
  for (size_t i = 0; i < siteList.size(); ++i) {
    int32_t& slot = slotOf[static_cast<size_t>(siteList[i].stack_id)];
    slot = slot == kNone ? static_cast<int32_t>(i) : kSeveral;
  }
  struct Amount {
    int64_t count = 0, bytes = 0;
  };
  // Dense arrays are fastest; many marker phases times many sites would not fit, so past
  // kDenseMax cells each phase gets a hash map of the sites it touched instead.
  constexpr size_t kDenseMax = 2000000;
  const bool dense = ranges.size() * siteList.size() <= kDenseMax;
  std::vector<std::vector<Amount>> sums(dense ? ranges.size() : 0, std::vector<Amount>(siteList.size()));
  std::vector<std::unordered_map<int32_t, Amount>> sparse(dense ? 0 : ranges.size());

  bool severalKinds = std::find(slotOf.begin(), slotOf.end(), kSeveral) != slotOf.end();
  size_t cur = 0;
  auto add = [&](int64_t t, int64_t stack, const char* kind, int64_t count, int64_t bytes) {
    if (stack < 0 || stack > maxStack) return;
    int32_t slot = slotOf[static_cast<size_t>(stack)];
    if (slot == kNone) return;  // filtered out (pid, kind)
    // Rows come roughly in time order: try the phase of the previous row first.
    if (!(t >= ranges[cur].start && (cur + 1 == ranges.size() || t < ranges[cur].end))) {
      auto it = std::upper_bound(ranges.begin(), ranges.end(), t,
                                 [](int64_t v, const Range& r) { return v < r.start; });
      if (it == ranges.begin()) return;
      cur = static_cast<size_t>(it - ranges.begin()) - 1;
      if (cur + 1 < ranges.size() && t >= ranges[cur].end) return;  // in no phase (a gap)
    }
    if (slot == kSeveral) {
      slot = kNone;
      for (size_t i = 0; i < siteList.size(); ++i)
        if (siteList[i].stack_id == stack && siteList[i].kind == kind) slot = static_cast<int32_t>(i);
      if (slot == kNone) return;
    }
    Amount& a = dense ? sums[cur][static_cast<size_t>(slot)] : sparse[cur][slot];
    a.count += count;
    a.bytes += bytes;
  };
  if (rec.info().schema_version >= 3) {
    detail::Statement q(rec, "SELECT buckets FROM site_buckets");
    const int64_t from = ranges.front().start;
    while (q.step()) {
      detail::forEachSiteBucket(q.blob(0), q.bytes(0), [&](int64_t t, const void* entries, int bytes) {
        if (t < from) return;
        detail::forEachSiteActivity(entries, bytes, rec.info().schema_version, [&](const detail::SiteActivity& e) {
          if (e.allocs) add(t, e.stack_id, detail::siteKindName(e.kind), e.allocs, e.alloc_bytes);  // not a free-only entry
        });
      });
    }
  } else if (rec.info().schema_version >= 2) {
    detail::Statement q(rec, "SELECT t_ns, sites FROM site_timeline WHERE t_ns >= ?");
    q.bind(1, ranges.front().start);
    while (q.step()) {
      int64_t t = q.i64(0);
      detail::forEachSiteActivity(q.blob(1), q.bytes(1), rec.info().schema_version, [&](const detail::SiteActivity& e) {
        add(t, e.stack_id, detail::siteKindName(e.kind), e.allocs, e.alloc_bytes);
      });
    }
  } else {
    detail::Statement q(rec, severalKinds
                                 ? "SELECT t_alloc, stack_id, size, kind FROM allocations NOT INDEXED WHERE t_alloc >= ?"
                                 : "SELECT t_alloc, stack_id, size FROM allocations NOT INDEXED WHERE t_alloc >= ?");
    q.bind(1, ranges.front().start);
    std::string kind;
    while (q.step()) {
      if (severalKinds) kind = q.text(3);
      add(q.i64(0), q.i64(1), kind.c_str(), 1, q.i64(2));
    }
  }
  for (size_t p = 0; p < ranges.size(); ++p) {
    std::vector<std::pair<size_t, Amount>> touched;
    if (dense) {
      for (size_t i = 0; i < siteList.size(); ++i)
        if (sums[p][i].count > 0) touched.emplace_back(i, sums[p][i]);
    } else {
      for (const auto& [slot, a] : sparse[p]) touched.emplace_back(static_cast<size_t>(slot), a);
    }
    size_t n = std::min(top, touched.size());
    std::partial_sort(touched.begin(), touched.begin() + static_cast<std::ptrdiff_t>(n), touched.end(),
                      [&](const auto& a, const auto& b) {
                        if (a.second.bytes != b.second.bytes) return a.second.bytes > b.second.bytes;
                        return siteList[a.first].stack_id < siteList[b.first].stack_id;
                      });
    for (size_t j = 0; j < n; ++j) emit(p, siteList[touched[j].first], touched[j].second.count, touched[j].second.bytes);
  }
  return mergedLists(rec, filter, std::move(out));
}

}  // namespace

std::vector<TimelinePoint> timeline(const Recording& rec, std::optional<int64_t> image_id) {
  std::string cond = image_id ? " AND image_id = " + std::to_string(*image_id) : std::string();
  return curve(rec, cond);
}

std::vector<Marker> markers(const Recording& rec) {
  detail::Statement q(rec, "SELECT image_id, t_ns, name FROM markers ORDER BY t_ns, rowid");
  std::vector<Marker> out;
  while (q.step()) out.push_back({q.i64(0), q.i64(1), q.text(2)});
  return out;
}

std::vector<Phase> phases(const Recording& rec, const Filter& filter) {
  std::string images = detail::imageCondition(rec, filter, "image_id");
  std::vector<TimelinePoint> tl = curve(rec, images);
  const int64_t bucket = std::max<int64_t>(1, rec.info().bucket_ns);
  int64_t endNs = rec.info().duration_ns;
  if (!tl.empty()) endNs = std::max(endNs, tl.back().t_ns + bucket);

  std::vector<Range> ranges;
  {
    std::string sql = "SELECT t_ns, name FROM markers WHERE 1" + images + " ORDER BY t_ns, rowid";
    detail::Statement q(rec, sql.c_str());
    std::vector<std::pair<int64_t, std::string>> ms;
    while (q.step()) ms.emplace_back(q.i64(0), q.text(1));
    if (!ms.empty()) {
      // Activity before the first marker is its own phase only when it is a real part of the
      // run (startup allocations of the runtime are not).
      int64_t before = 0, total = 0;
      for (const auto& p : tl) {
        total += p.alloc_bytes;
        if (p.t_ns < ms.front().first) before += p.alloc_bytes;
      }
      if (before > 0 && before * 20 > total)
        ranges.push_back({"(before first marker)", false, tl.front().t_ns, ms.front().first});
      for (size_t i = 0; i < ms.size(); ++i)
        ranges.push_back({ms[i].second, true, ms[i].first,
                          i + 1 < ms.size() ? ms[i + 1].first : std::max(endNs, ms[i].first)});
    } else {
      ranges = automaticRanges(tl, bucket, endNs);
    }
  }

  // The exact peak instant refines a phase's bucket-resolution peak time, and bounds it: over
  // several processes a bucket's sum of each one's highest value can exceed what was live at
  // any one instant. The recording's simultaneous peak where the file has it (and no pid was
  // asked for), else the peak image's own.
  int64_t exactPeak = -1, exactPeakNs = 0;
  std::optional<SpacePeak> simultaneous;
  if (!filter.pid) simultaneous = detail::simultaneousPeak(rec, "heap");
  if (simultaneous) {
    exactPeak = simultaneous->bytes;
    exactPeakNs = simultaneous->time_ns;
  } else if (auto pi = detail::peakImage(rec, filter)) {
    detail::Statement q(rec, "SELECT peak_heap_bytes, peak_heap_ns FROM processes WHERE id = ?");
    q.bind(1, *pi);
    if (q.step()) {
      exactPeak = q.i64(0);
      exactPeakNs = q.i64(1);
    }
  }

  const bool heapCountsOnly = rec.info().schema_version >= 5;
  std::vector<Phase> out;
  std::vector<std::vector<SiteAmount>> topSites =
      phaseTopSites(rec, ranges, filter, filter.top.value_or(5));
  size_t ti = 0;
  int64_t prevHeap = 0, prevMmap = 0;
  for (size_t ri = 0; ri < ranges.size(); ++ri) {
    const Range& r = ranges[ri];
    const bool last = ri + 1 == ranges.size();
    Phase ph;
    ph.name = r.name;
    ph.from_marker = r.marker;
    ph.start_ns = r.start;
    ph.end_ns = r.end;
    ph.peak_time_ns = r.start;
    while (ti < tl.size() && tl[ti].t_ns < r.start) {  // buckets before the first phase
      prevHeap = tl[ti].heap_bytes;
      prevMmap = tl[ti].mmap_bytes;
      ++ti;
    }
    bool seenPeak = false;
    for (; ti < tl.size() && (tl[ti].t_ns < r.end || last); ++ti) {
      const TimelinePoint& p = tl[ti];
      if (!seenPeak || p.heap_max > ph.peak_bytes) {
        ph.peak_bytes = p.heap_max;
        ph.peak_time_ns = p.t_ns;
        seenPeak = true;
      }
      ph.allocated_bytes += p.alloc_bytes;
      // Version 5 counts only the heap's allocations in the curve; older files every kind's.
      int64_t grown = (p.heap_bytes - prevHeap) + (heapCountsOnly ? 0 : p.mmap_bytes - prevMmap);
      ph.freed_bytes += std::max<int64_t>(0, p.alloc_bytes - grown);
      prevHeap = p.heap_bytes;
      prevMmap = p.mmap_bytes;
    }
    // A phase with no bucket of its own holds what the previous one left.
    if (!seenPeak) ph.peak_bytes = prevHeap;
    if (exactPeak >= 0 && ph.peak_bytes >= exactPeak) {
      ph.peak_bytes = exactPeak;
      if (exactPeakNs >= ph.start_ns && exactPeakNs < ph.end_ns) ph.peak_time_ns = exactPeakNs;
    }
    if (ph.peak_bytes == exactPeak && exactPeakNs >= ph.peak_time_ns &&
        exactPeakNs < ph.peak_time_ns + bucket)
      ph.peak_time_ns = exactPeakNs;

    ph.top_sites = std::move(topSites[ri]);
    out.push_back(std::move(ph));
  }

  if (filter.t_from_ns || filter.t_to_ns) {
    int64_t a = filter.t_from_ns.value_or(INT64_MIN), b = filter.t_to_ns.value_or(INT64_MAX);
    std::erase_if(out, [&](const Phase& p) { return p.end_ns < a || p.start_ns > b; });
  }
  return out;
}

}  // namespace memledger::analyzer
