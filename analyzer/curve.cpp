// Curves downsampled to a requested resolution (analyzer/curve.h).
#include "analyzer/curve.h"

#include <algorithm>

#include "analyzer/control.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

Curve downsample(const std::vector<SeriesPoint>& series, int64_t from, int64_t to, size_t max_points,
                 std::optional<ExactPeak> exact) {
  Curve out;
  auto first = std::lower_bound(series.begin(), series.end(), from,
                                [](const SeriesPoint& p, int64_t t) { return p.t_ns < t; });
  auto last = std::lower_bound(first, series.end(), to,
                               [](const SeriesPoint& p, int64_t t) { return p.t_ns < t; });
  if (max_points == 0 || from >= to || first == last) return out;
  out.source_points = static_cast<size_t>(last - first);
  // Open to the end of time: the range ends after the last bucket, so the points spread over
  // the data rather than over the next three hundred years.
  if (to == std::numeric_limits<int64_t>::max()) to = std::prev(last)->t_ns + 1;
  // Unsigned: the width of [INT64_MIN, INT64_MAX) does not overflow.
  uint64_t span = uint64_t(to) - uint64_t(from);
  uint64_t width = span / max_points + (span % max_points != 0);
  out.interval_ns = static_cast<int64_t>(std::min<uint64_t>(width, uint64_t(INT64_MAX)));
  out.points.reserve(std::min(max_points, out.source_points));

  size_t index = SIZE_MAX;  // of the interval the last point covers
  for (auto it = first; it != last; ++it) {
    if ((it - first) % 65536 == 0) detail::progress(double(it - first) / double(out.source_points));
    size_t i = static_cast<size_t>((uint64_t(it->t_ns) - uint64_t(from)) / width);
    if (i != index || out.points.empty()) {
      index = i;
      CurvePoint p;
      p.t_from_ns = static_cast<int64_t>(uint64_t(from) + i * width);
      p.t_to_ns = static_cast<int64_t>(std::min(uint64_t(to), uint64_t(p.t_from_ns) + width));
      p.min = it->min;
      p.max = it->max;
      p.max_t_ns = it->t_ns;
      out.points.push_back(p);
    }
    CurvePoint& p = out.points.back();
    p.min = std::min(p.min, it->min);
    if (it->max > p.max) {
      p.max = it->max;
      p.max_t_ns = it->t_ns;
    }
    p.last = it->value;
    ++p.buckets;
  }

  auto best = std::max_element(out.points.begin(), out.points.end(),
                               [](const CurvePoint& a, const CurvePoint& b) { return a.max < b.max; });
  out.peak_bytes = best->max;
  out.peak_ns = best->max_t_ns;
  if (exact && exact->t_ns >= from && exact->t_ns < to) {
    // The last point from before the peak instant: its interval holds the instant, or (when no
    // bucket began in the instant's interval) the bucket the peak was reached in.
    auto holder = std::upper_bound(out.points.begin(), out.points.end(), exact->t_ns,
                                   [](int64_t t, const CurvePoint& p) { return t < p.t_from_ns; });
    if (holder != out.points.begin()) {
      CurvePoint& p = *std::prev(holder);
      p.max = exact->bytes;
      p.max_t_ns = exact->t_ns;
      out.peak_bytes = exact->bytes;
      out.peak_ns = exact->t_ns;
      out.exact_peak = true;
    }
  }
  return out;
}

Curve downsample(const Series& series, int64_t from, int64_t to, size_t max_points) {
  return downsample(series.points, from, to, max_points, series.exact_peak);
}

namespace detail {

// A space's exact peak: of one image, or (nullopt) the recording's simultaneous one over the
// processes alive at once (`spaces` image 0, version 5); older files know it only for a
// recording of one process.
std::optional<ExactPeak> spacePeak(const Recording& rec, const std::string& name, std::optional<int64_t> image_id) {
  std::optional<ExactPeak> out;
  for (const SpacePeak& s : spacePeaks(rec))
    if (s.name == name && s.image_id == image_id.value_or(0) && s.bytes > 0) out = ExactPeak{s.time_ns, s.bytes};
  if (out || image_id || name != "heap") return out;
  detail::Statement q(rec, "SELECT peak_heap_ns, peak_heap_bytes FROM processes WHERE (SELECT count(*) FROM processes) = 1");
  if (!q.step() || q.i64(1) <= 0) return std::nullopt;
  return ExactPeak{q.i64(0), q.i64(1)};
}

}  // namespace detail

Series heapSeries(const Recording& rec, std::optional<int64_t> image_id) { return spaceSeries(rec, "heap", image_id); }

Series spaceSeries(const Recording& rec, const std::string& name, std::optional<int64_t> image_id) {
  Series out;
  std::vector<TimelinePoint> tl = timeline(rec, image_id);
  out.points.reserve(tl.size());
  for (const TimelinePoint& t : tl) {
    if (name == "heap") {
      out.points.push_back({t.t_ns, t.heap_bytes, t.heap_max, t.heap_min});
    } else if (name == "mmap") {
      out.points.push_back({t.t_ns, t.mmap_bytes, t.mmap_bytes, t.mmap_bytes});
    } else {
      SeriesPoint p{t.t_ns, 0, 0, 0};
      for (const SpaceValue& v : t.spaces)
        if (v.name == name) p = {t.t_ns, v.bytes, v.max, v.min};
      out.points.push_back(p);
    }
  }
  out.exact_peak = detail::spacePeak(rec, name, image_id);
  return out;
}

Curve curve(const Recording& rec, const CurveRequest& request) {
  Series series;
  {
    detail::Stage reading(0, 0.8);
    series = heapSeries(rec, request.image_id);
  }
  detail::Stage folding(0.8, 1);
  return downsample(series, request.t_from_ns, request.t_to_ns, request.max_points);
}

Curve curve(const Recording& rec, const CurveRequest& request, QueryControl& control) {
  return detail::controlled(control, [&] { return curve(rec, request); });
}

}  // namespace memledger::analyzer
