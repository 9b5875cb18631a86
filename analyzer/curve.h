// Memory curves at the resolution a chart asks for. A busy hour has millions of timeline buckets
// where a chart draws a few per pixel: a curve request names a time range and a number of points,
// and each point is an interval of the range with the lowest, highest and last live bytes of the
// buckets in it, so that the chart draws the envelope and no spike falls between two points.
// The exact peak (the recorder's, to the byte and the nanosecond) stays in the point that holds it.
//
// downsample() is a pure function over a plain series, so that any address space's series can be
// served the same way; curve() is the heap series of today's timeline() fed to it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer {

// One bucket of a series: `value` live at its end, `max`/`min` the highest/lowest within it.
// Buckets are written only when something happened: between two of them the value holds.
struct SeriesPoint {
  int64_t t_ns = 0, value = 0, max = 0, min = 0;
};

// The exact highest point of a series (processes.peak_heap_bytes / peak_heap_ns for the heap).
struct ExactPeak {
  int64_t t_ns = 0;
  int64_t bytes = 0;
};

struct CurvePoint {
  int64_t t_from_ns = 0, t_to_ns = 0;  // the interval [from, to) of the request it stands for
  int64_t min = 0, max = 0, last = 0;  // over the buckets in it; last: the value at its end
  // When max was reached: its bucket's start, or the exact peak's instant (which lies past
  // t_to_ns when the peak's bucket began in this interval and no bucket began in the next).
  int64_t max_t_ns = 0;
  size_t buckets = 0;                  // source buckets folded into it (at least 1)
};

struct Curve {
  std::vector<CurvePoint> points;  // time ascending; an interval without buckets has no point
  int64_t interval_ns = 0;         // width of each point's interval
  int64_t peak_bytes = 0;          // the largest max of the points (the exact peak when it is in range)
  int64_t peak_ns = 0;
  bool exact_peak = false;         // peak_bytes/peak_ns are the recorder's exact peak
  size_t source_points = 0;        // buckets of the series inside the range
};

struct CurveRequest {
  std::optional<int64_t> image_id = {};  // one process image; nullopt: all images summed per bucket
  int64_t t_from_ns = 0;            // the range [from, to); the defaults cover the whole recording
  int64_t t_to_ns = std::numeric_limits<int64_t>::max();
  size_t max_points = 2000;
};

// At most max_points points over the buckets of `series` (t_ns ascending) with from <= t_ns < to.
// Intervals are ceil((to - from) / max_points) wide, from `from`; a range open to the end of time
// (to = INT64_MAX) ends after the last bucket. `exact`, when its instant is in the range, is put in
// the point whose interval holds it, else the one holding its bucket (max and max_t_ns), and is
// the curve's peak. O(series) after a binary search for the range.
Curve downsample(const std::vector<SeriesPoint>& series, int64_t from, int64_t to, size_t max_points,
                 std::optional<ExactPeak> exact = {});

// A series with its exact peak when one is known: read once, downsampled at every request (a
// chart that zooms and pans asks many; reading is the costly part: timeline() of a busy
// recording takes about a second per million buckets here, a downsample of them milliseconds).
struct Series {
  std::vector<SeriesPoint> points;  // t_ns ascending
  std::optional<ExactPeak> exact_peak;
};
Curve downsample(const Series& series, int64_t from, int64_t to, size_t max_points);

// The heap series of one image (or of all images summed, as timeline() sums them), with the
// exact heap peak of that image; with nullopt, the simultaneous peak over live processes
// (version 5; older files: of the only image when there is one).
Series heapSeries(const Recording& rec, std::optional<int64_t> image_id);
// Any account's series by its `spaces` name (heap, mmap, device:0, pinned, managed, pool:NAME,
// custom), summed over the processes alive then, or of one image; the exact peak is the
// recording's simultaneous one (version 5) or the image's.
Series spaceSeries(const Recording& rec, const std::string& name, std::optional<int64_t> image_id);

// The heap curve of a request: downsample(heapSeries(...)). Throws RecordingError like the other
// questions.
Curve curve(const Recording& rec, const CurveRequest& request);
Curve curve(const Recording& rec, const CurveRequest& request, QueryControl& control);

}  // namespace memledger::analyzer
