#include "analyzer/series_set.h"

#include <algorithm>
#include <map>

#include "analyzer/control.h"

namespace memledger::analyzer {

std::vector<NamedSeries> memorySeries(const Recording& rec) {
  std::vector<TimelinePoint> tl;
  {
    detail::Stage reading(0, 0.9);
    tl = timeline(rec, std::nullopt);
  }
  NamedSeries heap{"heap", {}}, mmap{"mmap", {}}, rss{"rss", {}};
  std::map<std::string, Series> others;
  for (const TimelinePoint& t : tl)
    for (const SpaceValue& v : t.spaces) others.try_emplace(v.name);
  bool anyRss = false;
  heap.series.points.reserve(tl.size());
  mmap.series.points.reserve(tl.size());
  for (const TimelinePoint& t : tl) {
    heap.series.points.push_back({t.t_ns, t.heap_bytes, t.heap_max, t.heap_min});
    mmap.series.points.push_back({t.t_ns, t.mmap_bytes, t.mmap_bytes, t.mmap_bytes});
    if (t.rss_bytes) {
      anyRss = true;
      rss.series.points.push_back({t.t_ns, *t.rss_bytes, *t.rss_bytes, *t.rss_bytes});
    }
    // A space without a value in this bucket: zero, as spaceSeries() has it.
    for (auto& [name, s] : others) {
      SeriesPoint p{t.t_ns, 0, 0, 0};
      for (const SpaceValue& v : t.spaces)
        if (v.name == name) p = {t.t_ns, v.bytes, v.max, v.min};
      s.points.push_back(p);
    }
  }
  heap.series.exact_peak = detail::spacePeak(rec, "heap", std::nullopt);
  mmap.series.exact_peak = detail::spacePeak(rec, "mmap", std::nullopt);
  // RSS is sampled: its highest sample is its peak (summed over the processes sampled then).
  if (anyRss) {
    auto top = std::max_element(rss.series.points.begin(), rss.series.points.end(),
                                [](const SeriesPoint& a, const SeriesPoint& b) { return a.value < b.value; });
    rss.series.exact_peak = ExactPeak{top->t_ns, top->value};
  }
  std::vector<NamedSeries> out;
  out.push_back(std::move(heap));
  out.push_back(std::move(mmap));
  if (anyRss) out.push_back(std::move(rss));
  for (auto& [name, s] : others) {
    s.exact_peak = detail::spacePeak(rec, name, std::nullopt);
    out.push_back(NamedSeries{name, std::move(s)});
  }
  return out;
}

std::vector<NamedSeries> memorySeries(const Recording& rec, QueryControl& control) {
  return detail::controlled(control, [&] { return memorySeries(rec); });
}

}  // namespace memledger::analyzer
