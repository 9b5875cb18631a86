// Internal to the analyzer: the per-site activity over time (`site_buckets`; version 2
// `site_timeline`) read entry by entry, with each entry's site found in the site totals. The
// charts (site_chart.cpp) and the live sets (live_set.cpp) replay it.
#pragma once

#include <cstdint>
#include <climits>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer/sql.h"

namespace memledger::analyzer::detail {

// The file's sites, every one of them: the one table of sites the activity (site_buckets entries
// name a site by stack and kind) and the tree index (analyzer/tree_index.h: the sites with any
// amount) share. 88 bytes (a PyTorch run has 700,000): its space by index, no name of its own.
// In siteRows()' order: alloc_bytes descending, stack id, kind name, the file's order.
struct ActivitySite {
  int64_t image_id = 0, stack_id = 0;
  int64_t leak_bytes = 0;                  // live when its image ended (a Python image: at finalization)
  int64_t peak_count = 0, peak_bytes = 0;  // live at its image's peak of its account
  int64_t alloc_bytes = 0, alloc_count = 0, temp_count = 0;
  int64_t min_size = 0, max_size = 0;
  int32_t space_id = 0;                    // its space: ActivitySites::spaces()[space_id]
  uint8_t kind = 0;                        // its kind's code (schemas/kinds.h); 255 for codes beyond
  // An activity site: of a kind of schemas/kinds.h, and the first of its (image, stack, kind) (a
  // stack and kind with sites in two accounts, a pool and the heap: entries cannot tell them
  // apart). find() and replay() name only these; the others hold no activity.
  bool active = false;
};
class ActivitySites {
 public:
  explicit ActivitySites(const Recording& rec);
  const std::vector<ActivitySite>& all() const { return sites_; }
  // The spaces of the sites, in name order; active(k): whether an activity site is of space k.
  const std::vector<std::string>& spaces() const { return spaces_; }
  bool spaceActive(size_t k) const { return space_active_[k] != 0; }
  // The index of the activity site of a key in all(), or -1 (a site of an entry without totals:
  // a damaged file).
  int32_t find(int64_t image, int64_t stack, uint64_t kind) const {
    if (dropped_) std::call_once(reindex_, [this] { const_cast<ActivitySites*>(this)->makeIndex(); });
    if (index_.empty()) return -1;
    for (size_t at = slot(image, stack, kind);; at = (at + 1) & (index_.size() - 1)) {
      const int32_t i = index_[at];
      if (i < 0) return -1;
      const ActivitySite& s = sites_[size_t(i)];
      if (s.stack_id == stack && s.image_id == image && s.kind == kind) return i;
    }
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
  std::vector<char> space_active_;
  // The sites by (image, stack, kind): open addressing over indices into sites_ (-1 empty), at
  // most half full; 4 bytes a slot where a hash map's node took 48. Once the activity is kept in
  // memory (each entry with its site) nothing looks a site up: it is dropped (torch_mlp: 8 MB),
  // and made again if find() is asked.
  std::vector<int32_t> index_;
  bool dropped_ = false;
  mutable std::once_flag reindex_;
  void makeIndex();  // and marks the sites of a key after its first not active
  size_t slot(int64_t image, int64_t stack, uint64_t kind) const {
    const uint64_t h = uint64_t(stack) * 1000003u ^ uint64_t(image) * 31u ^ kind;
    return size_t((h * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  int shift_ = 64;
  std::unordered_map<int64_t, int64_t> ends_;  // images that ended
  int64_t lastEnd_ = 0;
  // The activity in memory: each bucket's entries are steps_[previous bucket's end, its end).
  // 20 bytes an entry (torch_mlp: 10^6 entries, 31.4 -> 19.6 MB): counts of 16 bits and amounts
  // of 32, as one site's are in one bucket; an entry whose values do not fit is kept whole in
  // wide_, its step marked `wide` with the index in alloc_bytes.
  struct Step {
    int32_t site;
    uint16_t allocs, frees, temps, wide;
    uint32_t alloc_bytes, freed_bytes;
  };
  struct WideStep {
    uint32_t allocs, frees, temps;
    int64_t alloc_bytes, freed_bytes;
  };
  std::vector<WideStep> wide_;
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
