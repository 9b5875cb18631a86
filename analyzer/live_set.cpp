#include "analyzer/live_set.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analyzer/control.h"
#include "analyzer/site_activity.h"

namespace memledger::analyzer {

const char* liveBasisName(LiveBasis b) {
  switch (b) {
    case LiveBasis::Instant: return "instant";
    case LiveBasis::BucketEnd: return "bucket_end";
    case LiveBasis::WholeRunPeak: return "whole_run_peak";
  }
  return "";
}

const SpaceLive* LiveSet::space(const std::string& name) const {
  for (const SpaceLive& s : spaces)
    if (s.space == name) return &s;
  return nullptr;
}

namespace {

bool checkAvailable(const Recording& rec, LiveSet& out) {
  out.bucket_ns = std::max<int64_t>(1, rec.info().bucket_ns);
  if (detail::hasBucketFrees(rec.info().schema_version)) return out.available = true;
  out.unavailable = "this recording (schema " + std::to_string(rec.info().schema_version) +
                    ") keeps no frees per site over time (version 7 does): what sites held then is unknown";
  return out.available = false;
}

// The end of the bucket starting at t: the next bucket boundary, or an earlier start of the
// image's next bucket (a marker cuts a bucket).
int64_t bucketEnd(int64_t t, int64_t bucket, std::optional<int64_t> next) {
  int64_t end = (t / bucket + 1) * bucket;
  return next ? std::min(end, *next) : end;
}

// Each site's live amounts: bytes, and block counts only when a list of sites is made (a range's
// trees need the bytes alone: 8 bytes a site, where (count, bytes) and a cutoff pointer per site
// were 24, 16.8 MB for torch_mlp's 700k sites).
struct Live {
  std::vector<int64_t> bytes, counts;  // per activity site; counts empty unless asked for
  void set(size_t i, int64_t count, int64_t b) {
    bytes[i] = b;
    if (!counts.empty()) counts[i] = count;
  }
};

// Replays the activity: the live amounts of every site whose space has a cutoff, counting the
// buckets that start at or before it, of images still alive at it. `seen` (optional) hears each
// (image, space, bucket start) as entries come.
Live replay(const Recording& rec, const detail::ActivitySites& sites, const std::map<std::string, int64_t>& cutoff,
            bool counts, const std::function<void(int64_t, const std::string&, int64_t)>& seen = {}) {
  Live live;
  live.bytes.assign(sites.all().size(), 0);
  if (counts) live.counts.assign(sites.all().size(), 0);
  std::vector<const int64_t*> cutOfSpace(sites.spaces().size(), nullptr);
  for (size_t k = 0; k < sites.spaces().size(); ++k) {
    auto it = cutoff.find(sites.spaces()[k]);
    if (it != cutoff.end()) cutOfSpace[k] = &it->second;
  }
  auto cutOf = [&](size_t i) { return cutOfSpace[size_t(sites.all()[i].space_id)]; };
  // Without `seen`, buckets after the last cutoff are never looked at.
  int64_t until = INT64_MIN;
  for (const auto& [space, t] : cutoff) until = std::max(until, t);
  if (seen || cutoff.empty()) until = INT64_MAX;
  sites.replay(rec, [&](int64_t image, int64_t t, int32_t i, const detail::SiteActivity& e) {
    if (i < 0) return;
    const int64_t* cut = cutOf(size_t(i));
    if (!cut) return;
    if (seen) seen(image, sites.spaces()[size_t(sites.all()[size_t(i)].space_id)], t);
    if (t > *cut) return;
    live.bytes[size_t(i)] += e.alloc_bytes - e.freed_bytes;
    if (counts) live.counts[size_t(i)] += e.allocs - e.frees;
  }, until);
  // An image that ended by the cutoff holds nothing any more (its leftovers stay its leaks).
  for (size_t i = 0; i < live.bytes.size(); ++i)
    if (const int64_t* cut = cutOf(i); cut && sites.gone(sites.all()[i].image_id, *cut)) live.set(i, 0, 0);
  return live;
}

void collect(const detail::ActivitySites& sites, Live& live, const std::map<std::string, int64_t>& cutoff,
             LiveSet& out, bool bySite) {
  std::vector<char> covered(sites.spaces().size(), 0);
  for (size_t k = 0; k < sites.spaces().size(); ++k) covered[k] = cutoff.count(sites.spaces()[k]) ? 1 : 0;
  std::vector<int64_t> bytes(sites.spaces().size(), 0);
  for (size_t i = 0; i < live.bytes.size(); ++i) {
    const detail::ActivitySite& s = sites.all()[i];
    if (!covered[size_t(s.space_id)]) continue;
    bytes[size_t(s.space_id)] += live.bytes[i];
    if (bySite || (live.bytes[i] == 0 && live.counts[i] == 0)) continue;
    out.sites.push_back({s.image_id, s.stack_id, detail::siteKindName(s.kind), sites.spaces()[size_t(s.space_id)],
                         live.counts[i], live.bytes[i]});
  }
  for (SpaceLive& sp : out.spaces) {
    auto k = std::lower_bound(sites.spaces().begin(), sites.spaces().end(), sp.space);
    sp.bytes = k != sites.spaces().end() && *k == sp.space ? bytes[size_t(k - sites.spaces().begin())] : 0;
  }
  if (bySite) {
    for (size_t i = 0; i < live.bytes.size(); ++i)
      if (!covered[size_t(sites.all()[i].space_id)]) live.bytes[i] = 0;
    out.by_site = std::move(live.bytes);
    return;
  }
  std::sort(out.sites.begin(), out.sites.end(), [](const LiveSite& a, const LiveSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : std::tie(a.image_id, a.stack_id, a.kind) < std::tie(b.image_id, b.stack_id, b.kind);
  });
}

}  // namespace

LiveSet liveAt(const Recording& rec, int64_t t, bool bySite) {
  LiveSet out;
  out.at_ns = t;
  if (!checkAvailable(rec, out)) return out;
  const detail::ActivitySites& sites = rec.activitySites();
  // The buckets that began before t (one beginning at t holds only what came at or after it).
  std::map<std::string, int64_t> cutoff;
  for (size_t k = 0; k < sites.spaces().size(); ++k)
    if (sites.spaceActive(k)) cutoff[sites.spaces()[k]] = t - 1;
  // Per image and space: the last bucket starting before t and the first after it; a bucket
  // under way at t makes the answer that of its end.
  struct Around {
    std::optional<int64_t> last, next;
  };
  std::map<std::pair<int64_t, std::string>, Around> around;
  Live live = replay(rec, sites, cutoff, !bySite, [&](int64_t image, const std::string& space, int64_t start) {
    Around& a = around[{image, space}];
    if (start < t) a.last = std::max(a.last.value_or(start), start);
    else a.next = std::min(a.next.value_or(start), start);
  });
  for (const auto& [space, c] : cutoff) {
    SpaceLive sp;
    sp.space = space;
    sp.at_ns = t;
    out.spaces.push_back(sp);
  }
  for (const auto& [key, a] : around) {
    if (!a.last) continue;
    if (sites.gone(key.first, t - 1)) continue;
    int64_t end = bucketEnd(*a.last, out.bucket_ns, a.next);
    if (end <= t) continue;
    for (SpaceLive& sp : out.spaces)
      if (sp.space == key.second) {
        sp.basis = LiveBasis::BucketEnd;
        sp.at_ns = std::max(sp.at_ns, end);
      }
  }
  collect(sites, live, cutoff, out, bySite);
  for (SpaceLive& sp : out.spaces) {
    sp.peak_bytes = sp.bytes;
    sp.peak_ns = sp.at_ns;
    sp.exact = sp.basis == LiveBasis::Instant;
  }
  return out;
}

LiveSet liveAt(const Recording& rec, int64_t t, QueryControl& control, bool bySite) {
  return detail::controlled(control, [&] { return liveAt(rec, t, bySite); });
}

LiveSet rangePeak(const Recording& rec, int64_t from, int64_t to, const std::vector<NamedSeries>* given, bool bySite) {
  LiveSet out;
  out.from_ns = from;
  out.to_ns = to;
  if (!checkAvailable(rec, out)) return out;
  std::vector<NamedSeries> read;
  if (!given) {
    detail::Stage reading(0, 0.4);
    read = memorySeries(rec);
    given = &read;
  }
  const detail::ActivitySites& sites = rec.activitySites();
  std::map<std::string, bool> hasSites;
  for (size_t k = 0; k < sites.spaces().size(); ++k)
    if (sites.spaceActive(k)) hasSites[sites.spaces()[k]] = true;
  std::map<std::string, int64_t> cutoff;
  std::map<std::string, bool> wholeRun;
  for (const NamedSeries& ns : *given) {
    if (!hasSites.count(ns.name)) continue;  // rss, or a space without sites
    const std::vector<SeriesPoint>& pts = ns.series.points;
    SpaceLive sp;
    sp.space = ns.name;
    const std::optional<ExactPeak>& exact = ns.series.exact_peak;
    if (exact && exact->t_ns >= from && exact->t_ns <= to && exact->bytes > 0) {
      // The recorder kept the live set of this instant: the range's peak is the run's.
      sp.basis = LiveBasis::WholeRunPeak;
      sp.at_ns = sp.peak_ns = exact->t_ns;
      sp.peak_bytes = exact->bytes;
      sp.exact = true;
      wholeRun[ns.name] = true;
      out.spaces.push_back(sp);
      continue;
    }
    // The candidates: what was live when the range began (after the last bucket before it), then
    // the end of each bucket starting in it. The highest value at a bucket end wins; the curve's
    // highest point within a bucket is the range's peak.
    auto first = std::lower_bound(pts.begin(), pts.end(), from, [](const SeriesPoint& p, int64_t t) { return p.t_ns < t; });
    std::optional<size_t> best;
    bool havePeak = false;
    sp.basis = LiveBasis::BucketEnd;
    if (first != pts.begin()) {
      best = size_t(first - pts.begin()) - 1;
      sp.peak_bytes = pts[*best].value;
      sp.peak_ns = from;
      havePeak = true;
    }
    for (auto it = first; it != pts.end() && it->t_ns <= to; ++it) {
      if (!best || it->value > pts[*best].value) best = size_t(it - pts.begin());
      if (!havePeak || it->max > sp.peak_bytes) {
        sp.peak_bytes = it->max;
        sp.peak_ns = it->t_ns;
        havePeak = true;
      }
    }
    if (!best) {  // nothing happened in this space by the range's end
      sp.at_ns = from;
      sp.basis = LiveBasis::Instant;
      sp.exact = true;
      cutoff[ns.name] = -1;
      out.spaces.push_back(sp);
      continue;
    }
    const SeriesPoint& b = pts[*best];
    std::optional<int64_t> next;
    if (*best + 1 < pts.size()) next = pts[*best + 1].t_ns;
    sp.at_ns = bucketEnd(b.t_ns, out.bucket_ns, next);
    if (b.t_ns < from && sp.at_ns <= from) {  // the range began after that bucket: its start, exactly
      sp.at_ns = from;
      sp.basis = LiveBasis::Instant;
    }
    sp.peak_bytes = std::max(sp.peak_bytes, b.value);
    sp.exact = b.value == sp.peak_bytes;
    cutoff[ns.name] = b.t_ns;
    out.spaces.push_back(sp);
  }
  Live live;
  {
    detail::Stage replaying(given == &read ? 0.4 : 0, 1);
    live = replay(rec, sites, cutoff, !bySite);
  }
  // Spaces at their whole-run peak: the recorder's live set then (each site's amount at its
  // image's peak of the account, as the trees' whole-run peak).
  std::vector<char> atWholeRun(sites.spaces().size(), 0);
  for (size_t k = 0; k < sites.spaces().size(); ++k) atWholeRun[k] = wholeRun.count(sites.spaces()[k]) ? 1 : 0;
  for (size_t i = 0; i < sites.all().size(); ++i)
    if (sites.all()[i].active && atWholeRun[size_t(sites.all()[i].space_id)]) live.set(i, sites.all()[i].peak_count, sites.all()[i].peak_bytes);
  for (const auto& [space, yes] : wholeRun) cutoff[space] = 0;
  collect(sites, live, cutoff, out, bySite);
  std::sort(out.spaces.begin(), out.spaces.end(), [](const SpaceLive& a, const SpaceLive& b) { return a.space < b.space; });
  return out;
}

LiveSet rangePeak(const Recording& rec, int64_t from, int64_t to, const std::vector<NamedSeries>* series,
                  QueryControl& control, bool bySite) {
  return detail::controlled(control, [&] { return rangePeak(rec, from, to, series, bySite); });
}

void applyLiveSet(std::vector<SiteCost>& costs, const LiveSet& live) {
  if (!live.available) return;
  // Hashed (a range of torch_mlp: 500k costs, 100k live sites); the sites not in `costs` are
  // appended in (image, stack, kind) order, as before.
  struct Key {
    int64_t image, stack;
    const std::string* kind;
    bool operator==(const Key& o) const { return image == o.image && stack == o.stack && *kind == *o.kind; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.stack) * 1000003u ^ std::hash<int64_t>()(k.image) * 31u ^ std::hash<std::string>()(*k.kind);
    }
  };
  std::unordered_map<Key, const LiveSite*, KeyHash> bySite;
  bySite.reserve(live.sites.size());
  for (const LiveSite& s : live.sites) bySite[{s.image_id, s.stack_id, &s.kind}] = &s;
  std::vector<const std::string*> spaces;  // the spaces the set covers
  for (const SpaceLive& sp : live.spaces) spaces.push_back(&sp.space);
  auto covered = [&](const std::string& space) {
    for (const std::string* s : spaces)
      if (*s == space) return true;
    return false;
  };
  for (SiteCost& c : costs) {
    if (!covered(c.space)) continue;
    auto it = bySite.find({c.image_id, c.stack_id, &c.kind});
    c.cost.peak = it == bySite.end() ? 0 : it->second->bytes;
    if (it != bySite.end()) bySite.erase(it);
  }
  std::vector<const LiveSite*> rest;
  rest.reserve(bySite.size());
  for (const auto& [key, s] : bySite) rest.push_back(s);
  std::sort(rest.begin(), rest.end(), [](const LiveSite* a, const LiveSite* b) {
    return std::tie(a->image_id, a->stack_id, a->kind) < std::tie(b->image_id, b->stack_id, b->kind);
  });
  for (const LiveSite* s : rest) {
    SiteCost c;
    c.image_id = s->image_id;
    c.stack_id = s->stack_id;
    c.kind = s->kind;
    c.space = s->space;
    c.cost.peak = s->bytes;
    costs.push_back(std::move(c));
  }
  // A site that held nothing then and made nothing in the range has no place in the trees.
  std::erase_if(costs, [](const SiteCost& c) {
    return !c.cost.peak && !c.cost.leaked && !c.cost.allocated && !c.cost.count && !c.cost.temporary;
  });
}

}  // namespace memledger::analyzer
