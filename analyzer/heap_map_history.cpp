// A region's history (heap_map.h): its rows read once, its events in time order, its layout after
// any number of events, its free space over time, and whether a layout is exact.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "analyzer/control.h"
#include "analyzer/curve.h"
#include "analyzer/heap_map.h"
#include "analyzer/heap_map_spaces.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

double MapLayout::freeRatio() const {
  const uint64_t span = span_to - span_from;
  return span ? 1.0 - double(std::min(live_bytes, span)) / double(span) : 0.0;
}

double MapLayout::internalShare() const {
  return freeBytes() ? double(slack_bytes) / double(freeBytes()) : 0.0;
}

double MapLayout::externalFragmentation() const {
  return hole_bytes ? 1.0 - double(largest_hole) / double(hole_bytes) : 0.0;
}

namespace {

uint64_t slackLimitOf(const std::string& space) {
  if (space == "heap") return 32;
  if (space == "mmap") return 4096;
  return 0;
}

// The free space of a region as blocks come and go, one event at a time (for the series): the
// live blocks in address order, the holes' sizes, the sums. Each event changes only the gaps
// beside its block, so the whole history costs O(events log blocks).
class FreeSpace {
 public:
  explicit FreeSpace(const HeapHistory& h) : h_(h), bounded_(h.region.reserved) {
    if (bounded_) addGap(h_.region.from, h_.region.to, true);
  }
  void insert(uint32_t b) {
    auto next = live_.lower_bound(b);
    std::optional<uint32_t> pred, succ;
    if (next != live_.end()) succ = *next;
    if (next != live_.begin()) pred = *std::prev(next);
    gapAround(pred, succ, false);
    gapAround(pred, b, true);
    gapAround(b, succ, true);
    live_.insert(next, b);
    liveBytes_ += h_.blocks[b].size;
  }
  void erase(uint32_t b) {
    auto at = live_.find(b);
    if (at == live_.end()) return;
    std::optional<uint32_t> pred, succ;
    if (std::next(at) != live_.end()) succ = *std::next(at);
    if (at != live_.begin()) pred = *std::prev(at);
    live_.erase(at);
    gapAround(pred, b, false);
    gapAround(b, succ, false);
    gapAround(pred, succ, true);
    liveBytes_ -= h_.blocks[b].size;
  }
  MapPoint point(int64_t t) const {
    MapPoint p;
    p.t_ns = t;
    p.live_bytes = liveBytes_;
    p.hole_bytes = holeBytes_;
    p.slack_bytes = slackBytes_;
    p.largest_hole = holes_.empty() ? 0 : *holes_.rbegin();
    p.holes = static_cast<int64_t>(holes_.size());
    if (bounded_) p.span = h_.region.to - h_.region.from;
    else if (!live_.empty()) {
      const MapBlock& first = h_.blocks[*live_.begin()];
      const MapBlock& last = h_.blocks[*live_.rbegin()];
      p.span = last.address + last.size - first.address;
    }
    return p;
  }

 private:
  // The gap between two neighbours (a missing one is the reserved range's edge, or nothing).
  void gapAround(std::optional<uint32_t> a, std::optional<uint32_t> b, bool add) {
    if ((!a || !b) && !bounded_) return;
    uint64_t from = a ? h_.blocks[*a].address + h_.blocks[*a].size : h_.region.from;
    uint64_t to = b ? h_.blocks[*b].address : h_.region.to;
    if (add) addGap(from, to, !a || !b);
    else removeGap(from, to, !a || !b);
  }
  void addGap(uint64_t from, uint64_t to, bool edge) {
    if (to <= from) return;
    const uint64_t g = to - from;
    if (g < h_.slack_limit && !edge) slackBytes_ += g;
    else holes_.insert(g), holeBytes_ += g;
  }
  void removeGap(uint64_t from, uint64_t to, bool edge) {
    if (to <= from) return;
    const uint64_t g = to - from;
    if (g < h_.slack_limit && !edge) slackBytes_ -= g;
    else if (auto it = holes_.find(g); it != holes_.end()) holes_.erase(it), holeBytes_ -= g;
  }
  const HeapHistory& h_;
  bool bounded_;
  std::set<uint32_t> live_;  // block indices: address order
  std::multiset<uint64_t> holes_;
  uint64_t liveBytes_ = 0, holeBytes_ = 0, slackBytes_ = 0;
};

}  // namespace

HeapHistory heapHistory(const Recording& rec, const MapRegion& region) {
  HeapHistory h;
  h.region = region;
  const RecordingInfo& info = rec.info();
  h.allocation_rows = info.allocation_rows;
  h.fold_threshold_ns = info.fold_threshold_ns;
  h.slack_limit = slackLimitOf(region.space);
  h.complete_ = info.complete;
  h.bucket_ns_ = info.bucket_ns;
  {
    detail::Statement p(rec, "SELECT start_ns, end_ns FROM processes WHERE id = ?");
    p.bind(1, region.image_id);
    if (p.step()) {
      h.image_start_ns = p.i64(0);
      h.image_end_ns = p.optI64(1);
    }
  }

  // The region's rows, and (when not every block has one) the whole space's rows live over time.
  detail::RowSpaces spaces(rec);
  const bool wholeSpace = !h.everyBlock();
  std::vector<std::pair<int64_t, int64_t>> spaceDeltas;  // (t, +size / -size)
  std::unordered_map<std::string, uint16_t> opIndex;
  detail::Statement q(rec, wholeSpace ? "SELECT id, kind, op, stack_id, address, size, t_alloc, t_free FROM allocations "
                                        "WHERE image_id = ?"
                                      : "SELECT id, kind, op, stack_id, address, size, t_alloc, t_free FROM allocations "
                                        "WHERE image_id = ? AND address >= ? AND address < ?");
  q.bind(1, region.image_id);
  if (!wholeSpace) q.bind(2, static_cast<int64_t>(region.from)).bind(3, static_cast<int64_t>(region.to));
  int64_t seen = 0;
  while (q.step()) {
    if ((++seen & 0xffff) == 0) detail::throwIfCancelled();
    if (spaces.of(region.image_id, q.i64(3), q.text(1)) != region.space) continue;
    MapBlock b;
    b.row_id = q.i64(0);
    b.stack_id = q.i64(3);
    b.address = static_cast<uint64_t>(q.i64(4));
    b.size = static_cast<uint64_t>(q.i64(5));
    b.t_alloc = q.i64(6);
    b.t_free = q.optI64(7);
    if (wholeSpace) {
      spaceDeltas.emplace_back(b.t_alloc, static_cast<int64_t>(b.size));
      if (b.t_free) spaceDeltas.emplace_back(*b.t_free, -static_cast<int64_t>(b.size));
      if (b.address < region.from || b.address >= region.to) continue;
    }
    auto [op, isNew] = opIndex.try_emplace(q.text(2), static_cast<uint16_t>(h.ops.size()));
    if (isNew) h.ops.push_back(op->first);
    b.op = op->second;
    h.blocks.push_back(b);
  }
  detail::progress(0.5);
  std::sort(h.blocks.begin(), h.blocks.end(), [](const MapBlock& a, const MapBlock& b) {
    return std::tie(a.address, a.t_alloc, a.row_id) < std::tie(b.address, b.t_alloc, b.row_id);
  });

  // Events in time order. At one instant frees come first (realloc frees the old block as it
  // makes the new one, perhaps at the same address), except a block's own free after its own
  // allocation (a block that lived 0 ns).
  struct Keyed {
    int64_t t;
    int order;  // 0 free, 1 allocation, 2 the free of a block allocated at the same instant
    uint32_t block;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(h.blocks.size() * 2);
  for (uint32_t i = 0; i < h.blocks.size(); ++i) {
    const MapBlock& b = h.blocks[i];
    keyed.push_back({b.t_alloc, 1, i});
    if (b.t_free) keyed.push_back({*b.t_free, *b.t_free == b.t_alloc ? 2 : 0, i});
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.t, a.order, a.block) < std::tie(b.t, b.order, b.block);
  });
  detail::throwIfCancelled();
  h.events.reserve(keyed.size());
  for (const Keyed& k : keyed) {
    MapBlock& b = h.blocks[k.block];
    const bool alloc = k.order == 1;
    (alloc ? b.alloc_event : b.free_event) = static_cast<uint32_t>(h.events.size());
    h.events.push_back({k.t, k.block, alloc});
  }
  for (MapBlock& b : h.blocks)
    if (!b.t_free) b.free_event = static_cast<uint32_t>(h.events.size());

  // The series: the last state of each of at most 4096 intervals of the region's life.
  if (!h.events.empty()) {
    FreeSpace space(h);
    const int64_t t0 = h.events.front().t_ns, t1 = h.events.back().t_ns;
    const int64_t width = std::max<int64_t>(1, (t1 - t0) / 4096 + 1);
    int64_t slot = -1;
    uint64_t worstScattered = 0, peakLive = 0;
    int64_t peakNs = t0;
    h.worstNs_ = t1;
    for (size_t i = 0; i < h.events.size(); ++i) {
      if ((i & 0xffff) == 0) {
        detail::throwIfCancelled();
        detail::progress(0.5 + 0.4 * double(i) / double(h.events.size()));
      }
      const MapEvent& e = h.events[i];
      if (e.alloc) space.insert(e.block);
      else space.erase(e.block);
      const bool lastAtInstant = i + 1 == h.events.size() || h.events[i + 1].t_ns != e.t_ns;
      if (!lastAtInstant) continue;
      const MapPoint p = space.point(e.t_ns);
      const int64_t s = (e.t_ns - t0) / width;
      if (s == slot) h.series.back() = p;
      else h.series.push_back(p), slot = s;
      // The instant shown first, from every state (not the sampled series): the last with the
      // most free bytes outside the largest hole, else the last peak of live bytes.
      const uint64_t scattered = p.hole_bytes - p.largest_hole;
      if (p.live_bytes > 0 && scattered >= worstScattered) worstScattered = scattered, h.worstNs_ = e.t_ns;
      if (p.live_bytes >= peakLive) peakLive = p.live_bytes, peakNs = e.t_ns;
    }
    if (worstScattered == 0) h.worstNs_ = peakNs;
  }

  if (wholeSpace) {
    std::sort(spaceDeltas.begin(), spaceDeltas.end());
    int64_t live = 0;
    for (const auto& [t, d] : spaceDeltas) {
      live += d;
      if (!h.rowT_.empty() && h.rowT_.back() == t) h.rowLive_.back() = live;
      else h.rowT_.push_back(t), h.rowLive_.push_back(live);
    }
    // The space's memory curve in this process: exact per bucket (its value at the end, its
    // highest and lowest within).
    // Before version 5 only the heap and mmap have curves.
    h.curveKnown_ = info.schema_version >= 5 || region.space == "heap" || region.space == "mmap";
    Series curve = spaceSeries(rec, region.space, region.image_id);
    h.curveHasExtremes_ = region.space != "mmap";  // the mmap curve keeps each bucket's end only
    for (const SeriesPoint& p : curve.points) {
      h.curveT_.push_back(p.t_ns);
      h.curveValue_.push_back(p.value);
      h.curveMax_.push_back(p.max);
      h.curveMin_.push_back(p.min);
    }
  }
  return h;
}

HeapHistory heapHistory(const Recording& rec, const MapRegion& region, QueryControl& control) {
  return detail::controlled(control, [&] { return heapHistory(rec, region); });
}

int64_t HeapHistory::defaultInstant() const {
  if (!everyBlock() && image_end_ns) return *image_end_ns;
  if (events.empty()) return image_end_ns.value_or(image_start_ns);
  return worstNs_;
}

size_t HeapHistory::eventsUpTo(int64_t t_ns) const {
  return static_cast<size_t>(std::upper_bound(events.begin(), events.end(), t_ns,
                                              [](int64_t t, const MapEvent& e) { return t < e.t_ns; }) -
                             events.begin());
}

MapLayout HeapHistory::layoutAfter(size_t applied) const {
  applied = std::min(applied, events.size());
  return layout(applied, applied ? events[applied - 1].t_ns : image_start_ns);
}

MapLayout HeapHistory::layoutAt(int64_t t_ns) const { return layout(eventsUpTo(t_ns), t_ns); }

MapLayout HeapHistory::layout(size_t applied, int64_t t_ns) const {
  MapLayout out;
  out.applied = applied;
  out.t_ns = t_ns;
  const bool bounded = region.reserved;
  std::unordered_map<int64_t, MapSite> sites;
  std::optional<uint64_t> end;  // the previous live block's end (or the reserved range's start)
  if (bounded) end = region.from;
  auto gap = [&](uint64_t from, uint64_t to, bool edge) {
    if (to <= from) return;
    const uint64_t g = to - from;
    if (g < slack_limit && !edge) {
      out.slack_bytes += g;
      return;
    }
    out.holes.push_back({from, g});
    out.hole_bytes += g;
    out.largest_hole = std::max(out.largest_hole, g);
  };
  for (uint32_t i = 0; i < blocks.size(); ++i) {
    const MapBlock& b = blocks[i];
    if (b.alloc_event >= applied || b.free_event < applied) continue;
    if (out.live.empty()) out.span_from = b.address;
    if (end) gap(*end, b.address, bounded && out.live.empty());
    out.live.push_back(i);
    out.live_bytes += b.size;
    end = b.address + b.size;
    MapSite& s = sites[b.stack_id];
    s.stack_id = b.stack_id;
    ++s.count;
    s.bytes += b.size;
  }
  if (bounded) {
    gap(end.value_or(region.from), region.to, true);
    out.span_from = region.from;
    out.span_to = region.to;
  } else if (!out.live.empty()) {
    out.span_to = *end;
  }
  out.sites.reserve(sites.size());
  for (const auto& [id, s] : sites) out.sites.push_back(s);
  std::sort(out.sites.begin(), out.sites.end(), [](const MapSite& a, const MapSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
  });
  settleExactness(out);
  return out;
}

void HeapHistory::settleExactness(MapLayout& layout) const {
  const int64_t t = layout.t_ns;
  if (everyBlock() || (complete_ && image_end_ns && t >= *image_end_ns)) {
    layout.exact = true;
    layout.rowless_min = layout.rowless_max = 0;
    return;
  }
  if (!curveKnown_) return;
  // Bytes of the space's rows live at t.
  auto row = std::upper_bound(rowT_.begin(), rowT_.end(), t);
  const int64_t rows = row == rowT_.begin() ? 0 : rowLive_[size_t(row - rowT_.begin()) - 1];
  // The curve's bucket holding t: its value holds from the bucket's end to the next bucket.
  auto at = std::upper_bound(curveT_.begin(), curveT_.end(), t);
  int64_t lo = 0, hi = 0;
  if (at != curveT_.begin()) {
    const size_t i = size_t(at - curveT_.begin()) - 1;
    int64_t bucketEnd = curveT_[i] + std::max<int64_t>(1, bucket_ns_);
    if (i + 1 < curveT_.size()) bucketEnd = std::min(bucketEnd, curveT_[i + 1]);
    if (t >= bucketEnd) {
      lo = hi = curveValue_[i];
    } else if (curveHasExtremes_) {
      lo = curveMin_[i];
      hi = curveMax_[i];
    } else {
      return;  // inside a busy bucket of a curve without extremes: unknown
    }
  }
  layout.rowless_min = std::max<int64_t>(0, lo - rows);
  layout.rowless_max = std::max<int64_t>(0, hi - rows);
  layout.exact = *layout.rowless_max == 0;
}

std::optional<uint32_t> HeapHistory::blockAt(const MapLayout& layout, uint64_t from, uint64_t to) const {
  if (to <= from) to = from + 1;
  // The first live block ending after `from`: blocks do not overlap, so ends ascend with starts.
  auto it = std::partition_point(layout.live.begin(), layout.live.end(), [&](uint32_t i) {
    return blocks[i].address + blocks[i].size <= from;
  });
  std::optional<uint32_t> best;
  uint64_t bestCover = 0;
  for (; it != layout.live.end() && blocks[*it].address < to; ++it) {
    const MapBlock& b = blocks[*it];
    const uint64_t cover = std::min(to, b.address + b.size) - std::max(from, b.address);
    if (cover > bestCover) best = *it, bestCover = cover;
  }
  return best;
}

}  // namespace memledger::analyzer
