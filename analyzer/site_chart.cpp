#include "analyzer/site_chart.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "analyzer/call_tree.h"
#include "analyzer/control.h"
#include "analyzer/diff.h"
#include "analyzer/site_activity.h"

namespace memledger::analyzer {

const char* chartKindName(ChartKind k) {
  switch (k) {
    case ChartKind::Consumed: return "consumed";
    case ChartKind::Allocations: return "allocations";
    case ChartKind::Allocated: return "allocated";
    case ChartKind::Temporary: return "temporary";
  }
  return "";
}

std::optional<ChartKind> parseChartKind(const std::string& name) {
  for (ChartKind k : {ChartKind::Consumed, ChartKind::Allocations, ChartKind::Allocated, ChartKind::Temporary})
    if (name == chartKindName(k)) return k;
  return std::nullopt;
}

bool chartInBytes(ChartKind k) { return k == ChartKind::Consumed || k == ChartKind::Allocated; }

size_t SiteCharts::pointAt(int64_t t) const {
  auto it = std::upper_bound(t_ns.begin(), t_ns.end(), t);
  return it == t_ns.begin() ? 0 : size_t(it - t_ns.begin()) - 1;
}

namespace {

// The groups of one or two recordings (a diff shares them, matched by key).
struct Groups {
  std::unordered_map<std::string, int32_t> byKey;
  std::vector<std::string> keys, labels;
  std::vector<const Frame*> frames;
  int32_t of(const std::string& key, const std::string& label, const Frame* frame) {
    auto [it, isNew] = byKey.try_emplace(key, int32_t(keys.size()));
    if (isNew) {
      keys.push_back(key);
      labels.push_back(label);
      frames.push_back(frame);
    }
    return it->second;
  }
};

// A change of one group at one point: consumed bytes, allocations, allocated bytes, temporaries.
struct Delta {
  int32_t point, group;
  std::array<int64_t, kChartKinds> v;
};

struct Grid {
  int64_t from, to, width;
  size_t intervals;
  // The first point whose instant is after t: what happened at t counts from there.
  int32_t pointOf(int64_t t) const { return t < from ? 0 : int32_t((t - from) / width) + 1; }
};

// What one recording adds (sign 1) or takes away (-1) per group and point.
struct Replay {
  bool activity = false, frees = false;
};

Replay replay(const Recording& rec, const ChartRequest& req, const Grid& grid, Groups& groups, int sign,
              std::vector<Delta>& deltas) {
  Replay out;
  const detail::ActivitySites& sites = rec.activitySites();
  // Each site's group (-1: not of the space asked for).
  std::vector<int32_t> groupOf(sites.all().size(), -1);
  std::vector<const Frame*> frames;
  for (size_t i = 0; i < sites.all().size(); ++i) {
    const detail::ActivitySite& s = sites.all()[i];
    if (!s.active || (req.space && sites.spaces()[size_t(s.space_id)] != *req.space)) continue;
    if ((i & 1023) == 0) detail::throwIfCancelled();
    frames.clear();
    rec.stackFrames(s.stack_id, &frames);
    const Frame* inner = frames.empty() ? nullptr : frames.front();
    std::string label = inner ? treeSymbol(*inner) : "??";
    std::string key = label;
    if (req.group == ChartGroup::Site) {
      key.clear();
      for (const Frame* f : frames) {  // as analyzer::siteKey() spells a stack
        if (!key.empty()) key += ';';
        key += siteKeyPart(*f);
      }
      key += std::string("#") + detail::siteKindName(s.kind);
      for (size_t k = 1; k < frames.size() && k < 3; ++k) label += " \u2190 " + treeSymbol(*frames[k]);
    }
    groupOf[i] = groups.of(key, label, inner);
  }
  out.frees = detail::hasBucketFrees(rec.info().schema_version);
  // Merges the entries of one group and point as they come (an image's buckets are in time order).
  std::vector<size_t> last(groups.keys.size(), SIZE_MAX);
  auto add = [&](int32_t point, int32_t g, const std::array<int64_t, kChartKinds>& v) {
    size_t& l = last[size_t(g)];
    if (l != SIZE_MAX && deltas[l].point == point) {
      for (size_t k = 0; k < kChartKinds; ++k) deltas[l].v[k] += v[k];
      return;
    }
    l = deltas.size();
    deltas.push_back({point, g, v});
  };
  out.activity = sites.replay(rec, [&](int64_t, int64_t t, int32_t i, const detail::SiteActivity& e) {
    if (t >= grid.to) return;
    if (i < 0 || groupOf[size_t(i)] < 0) return;
    add(grid.pointOf(t), groupOf[size_t(i)],
        {sign * (e.alloc_bytes - e.freed_bytes), sign * e.allocs, sign * e.alloc_bytes, sign * e.temps});
  }, grid.to - 1);
  // A process that ended holds nothing after its end (as the memory curve sums the processes).
  for (size_t i = 0; i < sites.all().size(); ++i) {
    const detail::ActivitySite& s = sites.all()[i];
    if (groupOf[i] < 0 || !s.leak_bytes) continue;
    const int64_t gone = sites.goneAt(s.image_id);
    if (gone >= grid.to) continue;
    add(grid.pointOf(gone), groupOf[i], {-sign * s.leak_bytes, 0, 0, 0});
  }
  return out;
}

Grid makeGrid(const ChartRequest& req, int64_t end) {
  Grid g;
  g.from = std::max<int64_t>(0, req.from_ns);
  g.to = req.to_ns == std::numeric_limits<int64_t>::max() ? end : req.to_ns;
  if (g.to <= g.from) g.to = g.from + 1;
  const int64_t span = g.to - g.from, n = int64_t(std::max<size_t>(1, req.max_points));
  g.width = std::max<int64_t>(1, (span + n - 1) / n);
  g.intervals = size_t((span + g.width - 1) / g.width);
  return g;
}

// The charts from the merged changes: the top N per kind by their largest value in the window
// (for a single recording's cumulative kinds: their largest growth since `from`).
SiteCharts build(const ChartRequest& req, const Grid& grid, const Groups& groups, std::vector<Delta>& deltas,
                 const std::array<bool, kChartKinds>& available, const std::array<std::string, kChartKinds>& why,
                 bool diff) {
  SiteCharts out;
  out.space = req.space;
  out.from_ns = grid.from;
  out.to_ns = grid.to;
  out.interval_ns = grid.width;
  out.diff = diff;
  const size_t points = grid.intervals + 1;
  for (size_t k = 0; k < points; ++k) out.t_ns.push_back(std::min(grid.to, grid.from + int64_t(k) * grid.width));
  std::sort(deltas.begin(), deltas.end(), [](const Delta& a, const Delta& b) {
    return a.point != b.point ? a.point < b.point : a.group < b.group;
  });
  const size_t n = groups.keys.size();
  for (size_t c = 0; c < kChartKinds; ++c) {
    Chart& chart = out.charts[c];
    chart.kind = ChartKind(c);
    chart.available = available[c];
    chart.unavailable = why[c];
    if (!chart.available) continue;
    const bool cumulative = ChartKind(c) != ChartKind::Consumed;
    std::vector<int64_t> cur(n, 0), ref(n, 0), rank(n, 0);
    size_t d = 0;
    for (int32_t k = 0; k < int32_t(points); ++k) {
      for (; d < deltas.size() && deltas[d].point == k; ++d) {
        const Delta& x = deltas[d];
        // Merged deltas of one group and point follow each other (sorted): apply them all, then rank.
        cur[size_t(x.group)] += x.v[c];
        if (d + 1 < deltas.size() && deltas[d + 1].point == k && deltas[d + 1].group == x.group) continue;
        if (k == 0 && cumulative && !diff) ref[size_t(x.group)] = cur[size_t(x.group)];
        rank[size_t(x.group)] = std::max<int64_t>(rank[size_t(x.group)], std::llabs(cur[size_t(x.group)] - ref[size_t(x.group)]));
      }
    }
    std::vector<int32_t> order;
    for (size_t g = 0; g < n; ++g)
      if (rank[g] > 0) order.push_back(int32_t(g));
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return rank[size_t(a)] != rank[size_t(b)] ? rank[size_t(a)] > rank[size_t(b)]
                                                : groups.labels[size_t(a)] < groups.labels[size_t(b)];
    });
    if (order.size() > req.top) order.resize(req.top);
    std::vector<int32_t> slot(n, -1);
    for (size_t i = 0; i < order.size(); ++i) {
      slot[size_t(order[i])] = int32_t(i);
      ChartSeries s;
      s.label = groups.labels[size_t(order[i])];
      s.key = groups.keys[size_t(order[i])];
      s.frame = groups.frames[size_t(order[i])];
      s.values.assign(points, 0);
      chart.series.push_back(std::move(s));
    }
    chart.total.assign(points, 0);
    std::vector<int64_t> value(order.size(), 0);
    int64_t total = 0;
    d = 0;
    for (size_t k = 0; k < points; ++k) {
      for (; d < deltas.size() && deltas[d].point == int32_t(k); ++d) {
        total += deltas[d].v[c];
        if (int32_t s = slot[size_t(deltas[d].group)]; s >= 0) value[size_t(s)] += deltas[d].v[c];
      }
      chart.total[k] = total;
      for (size_t s = 0; s < order.size(); ++s) chart.series[s].values[k] = value[s];
    }
    ChartSeries other;
    other.label = "other";
    other.key = "\x01other";
    other.other = true;
    other.values = chart.total;
    bool any = false;
    for (size_t k = 0; k < points; ++k) {
      for (size_t s = 0; s < order.size(); ++s) other.values[k] -= chart.series[s].values[k];
      any = any || other.values[k] != 0;
    }
    if (any) chart.series.push_back(std::move(other));
  }
  return out;
}

std::array<std::string, kChartKinds> reasons(const Replay& r, int version) {
  std::array<std::string, kChartKinds> why;
  const std::string v = std::to_string(version);
  for (size_t c = 0; c < kChartKinds; ++c) {
    if (!r.activity) why[c] = "this recording (schema " + v + ") keeps no per-site activity over time";
    else if ((ChartKind(c) == ChartKind::Consumed || ChartKind(c) == ChartKind::Temporary) && !r.frees)
      why[c] = "this recording (schema " + v + ") keeps no frees per site over time (version 7 does)";
  }
  return why;
}

}  // namespace

SiteCharts siteCharts(const Recording& rec, const ChartRequest& req) {
  const Grid grid = makeGrid(req, detail::recordingEnd(rec));
  Groups groups;
  std::vector<Delta> deltas;
  Replay r = replay(rec, req, grid, groups, 1, deltas);
  std::array<std::string, kChartKinds> why = reasons(r, rec.info().schema_version);
  std::array<bool, kChartKinds> available;
  for (size_t c = 0; c < kChartKinds; ++c) available[c] = why[c].empty();
  SiteCharts out = build(req, grid, groups, deltas, available, why, false);
  out.bucket_ns = rec.info().bucket_ns;
  return out;
}

SiteCharts siteCharts(const Recording& rec, const ChartRequest& req, QueryControl& control) {
  return detail::controlled(control, [&] { return siteCharts(rec, req); });
}

SiteCharts diffCharts(const Recording& a, const Recording& b, const ChartRequest& req) {
  const Grid grid = makeGrid(req, std::max(detail::recordingEnd(a), detail::recordingEnd(b)));
  Groups groups;
  std::vector<Delta> deltas;
  Replay rb, ra;
  {
    detail::Stage after(0, 0.5);
    rb = replay(b, req, grid, groups, 1, deltas);  // B first: its frames name the groups
  }
  {
    detail::Stage before(0.5, 1);
    ra = replay(a, req, grid, groups, -1, deltas);
  }
  std::array<std::string, kChartKinds> whyA = reasons(ra, a.info().schema_version),
                                       whyB = reasons(rb, b.info().schema_version), why;
  std::array<bool, kChartKinds> available;
  for (size_t c = 0; c < kChartKinds; ++c) {
    why[c] = !whyA[c].empty() ? "A: " + whyA[c] : !whyB[c].empty() ? "B: " + whyB[c] : "";
    available[c] = why[c].empty();
  }
  SiteCharts out = build(req, grid, groups, deltas, available, why, true);
  out.bucket_ns = std::max(a.info().bucket_ns, b.info().bucket_ns);
  return out;
}

SiteCharts diffCharts(const Recording& a, const Recording& b, const ChartRequest& req, QueryControl& control) {
  return detail::controlled(control, [&] { return diffCharts(a, b, req); });
}

}  // namespace memledger::analyzer
