// What every site held at one instant: the live set at a chosen time, and at the highest point of
// a time range (a range's own peak), from the per-site activity over time (`site_buckets`,
// whose entries carry frees since schema version 7) and the memory curve. For the GUI's trees
// and flame graph ("live at 1.2 s", the peak of a selected range); no Qt.
//
// How exact: a site's live bytes at the end of any timeline bucket are exact (its allocations
// minus its frees up to there). An instant inside a bucket is answered at that bucket's end
// (bucket-granular: at most `bucket_ns` later, said in SpaceLive). A range's highest point is
// exact in value and bucket (the curve keeps each bucket's highest); its live set is that at the
// bucket end holding the most, which is the peak's own live set whenever the curve stood at its
// peak at that bucket end (`exact`), and otherwise the closest the file can give (the value it
// misses is peak_bytes - bytes). A range holding the space's whole-run peak gets the exact live
// set the recorder kept for that instant. Files older than version 7 have no frees per bucket:
// `available` is false and nothing is applied.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer/call_tree.h"
#include "analyzer/series_set.h"

namespace memledger::analyzer {

struct LiveSite {
  int64_t image_id = 0, stack_id = 0;
  std::string kind, space;
  int64_t count = 0, bytes = 0;  // live blocks and bytes then
};

enum class LiveBasis {
  Instant,       // exactly at the instant asked for (no bucket was under way then)
  BucketEnd,     // at the end of the bucket under way at that instant (or, for a range, its best bucket end)
  WholeRunPeak,  // the recorder's live set at the space's exact peak, which lies in the range
};
const char* liveBasisName(LiveBasis basis);  // instant | bucket_end | whole_run_peak

// One space's part of a live set (peaks of different spaces never add up).
struct SpaceLive {
  std::string space;
  LiveBasis basis = LiveBasis::Instant;
  int64_t at_ns = 0;  // the instant the sites' amounts are of
  int64_t bytes = 0;  // their sum
  // A range's highest point: peak_bytes at peak_ns (the bucket's start; the exact instant for the
  // whole-run peak); exact: `bytes` is the live set at that highest point. For an instant: the
  // space's live bytes then, exact when basis is Instant.
  int64_t peak_bytes = 0, peak_ns = 0;
  bool exact = false;
};

struct LiveSet {
  bool available = false;
  std::string unavailable;                // why not, when not available
  std::optional<int64_t> at_ns;           // liveAt(): the instant asked for
  std::optional<int64_t> from_ns, to_ns;  // rangePeak(): the range
  int64_t bucket_ns = 0;                  // the granularity of BucketEnd
  std::vector<SpaceLive> spaces;          // name order
  std::vector<LiveSite> sites;            // bytes descending
  const SpaceLive* space(const std::string& name) const;
  // Asked for with `bySite` instead of `sites` (for TreeIndex::applyLive()): the live bytes of
  // each site of Recording::activitySites(), in its order (0 outside the spaces covered).
  std::vector<int64_t> by_site;
};

// What every site held at t_ns, in every space (of the processes alive then).
// `bySite`: the amounts per site in `by_site` instead of a sorted `sites` list (no strings per
// site: a range of torch_mlp's 508k sites saves about 100 ms).
LiveSet liveAt(const Recording& rec, int64_t t_ns, bool bySite = false);
LiveSet liveAt(const Recording& rec, int64_t t_ns, QueryControl& control, bool bySite = false);

// The highest point of each space's curve in [from, to] and what every site held then. `series`:
// the recording's memorySeries() when the caller has them (the GUI), else they are read.
LiveSet rangePeak(const Recording& rec, int64_t from_ns, int64_t to_ns,
                  const std::vector<NamedSeries>* series = nullptr, bool bySite = false);
LiveSet rangePeak(const Recording& rec, int64_t from_ns, int64_t to_ns, const std::vector<NamedSeries>* series,
                  QueryControl& control, bool bySite = false);

// Puts a live set into the trees' peak amount: every site of a space the set covers gets what it
// held then (0 when nothing), live sites missing from `costs` are added, sites left with nothing
// in any amount are removed. Nothing when the set is not available.
void applyLiveSet(std::vector<SiteCost>& costs, const LiveSet& live);

}  // namespace memledger::analyzer
