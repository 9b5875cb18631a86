// Internal to the analyzer: the per-site activity over time (`site_buckets`; version 2
// `site_timeline`) read entry by entry, with each entry's site found in the site totals. The
// charts (site_chart.cpp) and the live sets (live_set.cpp) replay it.
#pragma once

#include <cstdint>
#include <climits>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer/sql.h"

namespace memledger::analyzer::detail {

// The file's sites by (image, stack, kind code): site_buckets entries name a site by stack and kind.
struct ActivitySite {
  int64_t image_id = 0, stack_id = 0;
  uint64_t kind = 0;
  std::string space;
  int32_t space_id = 0;                    // its index in ActivitySites::spaces()
  int64_t leak_count = 0, leak_bytes = 0;  // live when its image ended
  int64_t peak_count = 0, peak_bytes = 0;  // live at its image's peak of its account
};
struct ActivityKey {
  int64_t image, stack;
  uint64_t kind;
  bool operator==(const ActivityKey& o) const { return image == o.image && stack == o.stack && kind == o.kind; }
};
struct ActivityKeyHash {
  size_t operator()(const ActivityKey& k) const {
    return std::hash<int64_t>()(k.stack) * 1000003u ^ std::hash<int64_t>()(k.image) * 31u ^ k.kind;
  }
};
class ActivitySites {
 public:
  explicit ActivitySites(const Recording& rec);
  const std::vector<ActivitySite>& all() const { return sites_; }
  // The spaces of the sites, in name order.
  const std::vector<std::string>& spaces() const { return spaces_; }
  // The index of a site in all(), or -1 (a site of an entry without totals: a damaged file).
  int32_t find(int64_t image, int64_t stack, uint64_t kind) const {
    auto it = index_.find({image, stack, kind});
    return it == index_.end() ? -1 : it->second;
  }
  // Calls f(image, bucket start, site index or -1, entry) for every entry of the per-site
  // activity whose bucket starts at or before `until`, each image's buckets in time order. The
  // activity is read into memory once, with the sites (torch_mlp: 10^6 entries, 32 MB), so a
  // range, a live set or a chart replays it without decoding or a lookup per entry; a file
  // whose counts do not fit that (or version 1, which keeps none: false) is read again each
  // time. Cancellable between buckets.
  bool replay(const Recording& rec, const std::function<void(int64_t, int64_t, int32_t, const SiteActivity&)>& f,
              int64_t until = INT64_MAX) const;
  // Whether an image holds nothing any more at t: it ended at or before t, before the last
  // process ended (an exited process's memory leaves the total, as the memory curve sums them;
  // what the last ones left, their leaks, stays to the end of the axis, as the curve's last value).
  bool gone(int64_t image, int64_t t) const {
    auto it = ends_.find(image);
    return it != ends_.end() && it->second <= t && it->second < lastEnd_;
  }
  // When it is gone (INT64_MAX: never).
  int64_t goneAt(int64_t image) const {
    auto it = ends_.find(image);
    return it != ends_.end() && it->second < lastEnd_ ? it->second : INT64_MAX;
  }

 private:
  std::vector<ActivitySite> sites_;
  std::vector<std::string> spaces_;
  std::unordered_map<ActivityKey, int32_t, ActivityKeyHash> index_;
  std::unordered_map<int64_t, int64_t> ends_;  // images that ended
  int64_t lastEnd_ = 0;
  // The activity in memory: each bucket's entries are steps_[previous bucket's end, its end).
  struct Step {
    int32_t site;
    uint32_t allocs, frees, temps;
    int64_t alloc_bytes, freed_bytes;
  };
  struct Bucket {
    int64_t image, t;
    size_t end;
  };
  bool kept_ = false;
  std::vector<Bucket> buckets_;
  std::vector<Step> steps_;
};

// Calls f(image_id, bucket start, entry) for every entry, each image's buckets in time order
// (images one after another); cancellable between rows. False when the file keeps no per-site
// activity (version 1).
bool forEachActivity(const Recording& rec, const std::function<void(int64_t, int64_t, const SiteActivity&)>& f);

// The time axis' end of a recording: its duration, its processes' ends, its last bucket.
int64_t recordingEnd(const Recording& rec);

}  // namespace memledger::analyzer::detail
