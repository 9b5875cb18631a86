// The charts of heaptrack_gui over memledger's per-site activity (`site_buckets`): Consumed (live
// bytes), Allocations, Allocated and Temporary over time, each a total line plus the top-N
// functions (or sites) stacked, at the resolution a chart asks for. No Qt.
//
// A chart is a grid of points over [from, to): point 0 is `from`, point k the end of the k-th of
// equal intervals; each value is the state after every bucket that started before that instant
// (bucket-granular: a bucket's allocations and frees count from its start). Consumed is what
// the sites held (allocations minus frees; the processes alive then, as the memory curve sums
// them); Allocations, Allocated and Temporary are cumulative from the recording's start (a
// range's share is the difference of two points, as heaptrack's charts read). Consumed and
// Temporary need frees per bucket (schema version 7): older files have them unavailable.
//
// The top N of a chart are the groups that matter most in the window: the highest Consumed, the
// most made in it; "other" is the rest of the total. diffCharts() gives B − A per group on one
// grid (the same relative times), groups matched by their function (or site key), the top N
// those with the largest change; values may be negative.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer {

enum class ChartKind { Consumed, Allocations, Allocated, Temporary };
inline constexpr size_t kChartKinds = 4;
const char* chartKindName(ChartKind kind);  // consumed | allocations | allocated | temporary
std::optional<ChartKind> parseChartKind(const std::string& name);
bool chartInBytes(ChartKind kind);  // consumed, allocated: bytes; the others: counts

// What the stacked series are: the allocating function (the bottom-up tree's top level), or the
// whole site (its stack as `memledger diff` matches it).
enum class ChartGroup { Function, Site };

struct ChartRequest {
  std::optional<std::string> space = "heap";  // nullopt: every space summed
  int64_t from_ns = 0;
  int64_t to_ns = std::numeric_limits<int64_t>::max();  // INT64_MAX: the recording's end
  size_t max_points = 1000;  // intervals; points are one more
  size_t top = 10;
  ChartGroup group = ChartGroup::Function;
};

struct ChartSeries {
  std::string label;            // the function ("?? (libfoo.so)"), the site, or "other"
  std::string key;              // what matches it across recordings (function name, or site key)
  const Frame* frame = nullptr;  // its innermost frame (owned by the recording), nullptr for other
  bool other = false;
  std::vector<int64_t> values;  // one per point
};

struct Chart {
  ChartKind kind = ChartKind::Consumed;
  bool available = false;
  std::string unavailable;          // why, when not available
  std::vector<int64_t> total;       // every site of the space(s), one per point
  std::vector<ChartSeries> series;  // the top N (largest first), then "other" when it is not all 0
};

struct SiteCharts {
  std::optional<std::string> space;
  int64_t from_ns = 0, to_ns = 0, interval_ns = 1;
  std::vector<int64_t> t_ns;  // each point's instant: from_ns, then each interval's end
  int64_t bucket_ns = 0;      // the recording's bucket width: nothing is finer than it
  bool diff = false;          // values are B − A
  std::array<Chart, kChartKinds> charts;
  const Chart& operator[](ChartKind k) const { return charts[size_t(k)]; }
  // The point at or before t (0 when t is before the first).
  size_t pointAt(int64_t t) const;
};

SiteCharts siteCharts(const Recording& rec, const ChartRequest& request);
SiteCharts siteCharts(const Recording& rec, const ChartRequest& request, QueryControl& control);
// B − A on one grid; to_ns INT64_MAX: the later recording's end. Frames of the series come from
// B where the group is in B, else from A.
SiteCharts diffCharts(const Recording& a, const Recording& b, const ChartRequest& request);
SiteCharts diffCharts(const Recording& a, const Recording& b, const ChartRequest& request, QueryControl& control);

}  // namespace memledger::analyzer
