#include "analyzer/list_diff.h"

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <map>
#include <optional>

namespace memledger::analyzer {

namespace {

using Keyed = std::map<std::pair<std::string, std::string>, SiteChange>;  // (key, kind)

template <typename Site>
void addSide(Keyed& out, const std::vector<Site>& sites, bool sideB) {
  for (const Site& s : sites) {
    std::string key = siteKey(s.stack);
    auto [it, added] = out.try_emplace({key, s.kind});
    SiteChange& c = it->second;
    if (added) {
      c.key = std::move(key);
      c.kind = s.kind;
    }
    if (sideB) {
      if (!c.listed_b) c.stack = s.stack;  // B's stack when B lists it
      c.listed_b = true;
      c.count_b += s.count;
      c.bytes_b += s.bytes;
    } else {
      if (!c.listed_b && !c.listed_a) c.stack = s.stack;
      c.listed_a = true;
      c.count_a += s.count;
      c.bytes_a += s.bytes;
    }
  }
}

// The smallest amount a list holds (its cut: an unlisted site holds no more), in bytes or count.
template <typename Site>
int64_t cutOf(const std::vector<Site>& sites, bool count) {
  int64_t least = INT64_MAX;
  for (const Site& s : sites) least = std::min(least, count ? s.count : s.bytes);
  return sites.empty() ? 0 : least;
}

// The matched sites with their statuses, the unchanged and the uncertain left out, biggest change
// first. `cutA`/`cutB`: each cut list's smallest amount (see list_diff.h), in count when
// `countFirst`, else in bytes.
void finish(Keyed& keyed, ListChanges& out, bool countFirst, int64_t cutA, int64_t cutB) {
  for (auto& [k, c] : keyed) {
    if (c.listed_a && c.listed_b) {
      if (c.count_a == c.count_b && c.bytes_a == c.bytes_b) continue;
      c.status = DiffStatus::Changed;
    } else if (c.listed_b) {
      if (out.cut_a && (countFirst ? c.count_b : c.bytes_b) <= cutA) {  // A may hold as much below its cut
        ++out.uncertain;
        continue;
      }
      c.status = out.cut_a ? DiffStatus::Changed : DiffStatus::New;  // grew past A's cut, or not in A
    } else {
      if (out.cut_b && (countFirst ? c.count_a : c.bytes_a) <= cutB) {
        ++out.uncertain;
        continue;
      }
      c.status = out.cut_b ? DiffStatus::Changed : DiffStatus::Gone;
    }
    out.sites.push_back(std::move(c));
  }
  std::sort(out.sites.begin(), out.sites.end(), [countFirst](const SiteChange& x, const SiteChange& y) {
    const int64_t bx = std::llabs(x.deltaBytes()), by = std::llabs(y.deltaBytes());
    const int64_t cx = std::llabs(x.deltaCount()), cy = std::llabs(y.deltaCount());
    if (countFirst ? cx != cy : bx != by) return countFirst ? cx > cy : bx > by;
    if (countFirst ? bx != by : cx != cy) return countFirst ? bx > by : cx > cy;
    return x.key != y.key ? x.key < y.key : x.kind < y.kind;
  });
}

}  // namespace

ListChanges diffLeaks(const Leaks& a, const Leaks& b) {
  ListChanges out;
  out.count_a = a.count;
  out.bytes_a = a.bytes;
  out.count_b = b.count;
  out.bytes_b = b.bytes;
  out.sites_a = std::max(a.site_count, a.sites.size());
  out.sites_b = std::max(b.site_count, b.sites.size());
  out.cut_a = a.site_count > a.sites.size();
  out.cut_b = b.site_count > b.sites.size();
  Keyed keyed;
  addSide(keyed, a.sites, false);
  addSide(keyed, b.sites, true);
  finish(keyed, out, false, cutOf(a.sites, false), cutOf(b.sites, false));
  return out;
}

std::vector<SizeBucketChange> diffSizes(const SizeHistogram& a, const SizeHistogram& b) {
  std::map<uint64_t, std::pair<const SizeBucket*, const SizeBucket*>> byFrom;
  for (const SizeBucket& x : a.buckets) byFrom[x.from].first = &x;
  for (const SizeBucket& x : b.buckets) byFrom[x.from].second = &x;
  std::vector<SizeBucketChange> out;
  for (const auto& [from, sides] : byFrom) {
    const auto [ba, bb] = sides;
    SizeBucketChange c;
    c.from = from;
    c.to = (ba ? ba : bb)->to;
    ListChanges& l = c.sites;
    Keyed keyed;
    if (ba) {
      l.count_a = c.count_a = ba->count;
      l.bytes_a = c.bytes_a = ba->bytes;
      l.sites_a = std::max(ba->site_count, ba->sites.size());
      l.cut_a = ba->site_count > ba->sites.size();
      addSide(keyed, ba->sites, false);
    }
    if (bb) {
      l.count_b = c.count_b = bb->count;
      l.bytes_b = c.bytes_b = bb->bytes;
      l.sites_b = std::max(bb->site_count, bb->sites.size());
      l.cut_b = bb->site_count > bb->sites.size();
      addSide(keyed, bb->sites, true);
    }
    finish(keyed, l, true, ba ? cutOf(ba->sites, true) : 0, bb ? cutOf(bb->sites, true) : 0);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<HeadlineChange> compareHeadlines(const Report& a, const std::vector<NamedSeries>& seriesA, const Report& b,
                                             const std::vector<NamedSeries>& seriesB) {
  std::vector<HeadlineChange> out = {
      {"Duration", "ns", a.recording.duration_ns, b.recording.duration_ns},
      {"Processes", "count", int64_t(a.processes.size()), int64_t(b.processes.size())},
      {"Allocations", "count", a.totals.allocations, b.totals.allocations},
      {"Allocated", "bytes", a.totals.allocated_bytes, b.totals.allocated_bytes},
      {"Temporary allocations", "count", a.totals.temporary_count, b.totals.temporary_count},
      {"Leaked", "bytes", a.leaks.bytes, b.leaks.bytes},
      {"Leaked blocks", "count", a.leaks.count, b.leaks.count},
  };
  // Every series' exact peak: A's order, then those only B has.
  auto peakOf = [](const std::vector<NamedSeries>& all, const std::string& name) -> std::optional<int64_t> {
    for (const NamedSeries& s : all)
      if (s.name == name) return s.series.exact_peak ? s.series.exact_peak->bytes : 0;
    return std::nullopt;
  };
  auto add = [&](const std::string& name) {
    for (const HeadlineChange& h : out)
      if (h.name == name + " peak") return;
    const std::optional<int64_t> pa = peakOf(seriesA, name), pb = peakOf(seriesB, name);
    out.push_back({name + " peak", "bytes", pa.value_or(0), pb.value_or(0), pa.has_value(), pb.has_value()});
  };
  for (const NamedSeries& s : seriesA) add(s.name);
  for (const NamedSeries& s : seriesB) add(s.name);
  return out;
}

}  // namespace memledger::analyzer
