// Fragmentation of the host heap: how much of the resident heap memory holds no live block, over
// time and at the peak, and the layout (blocks and holes) of an address range at one instant.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "analyzer/analyzer.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

Fragmentation fragmentation(const Recording& rec, const Filter& filter) {
  Fragmentation out;
  auto image = detail::peakImage(rec, filter);
  if (!image) return out;
  // anon_bytes is resident anonymous memory from /proc: the heap's pages plus our recorded
  // anonymous mmaps. What is left after removing the mmaps is what the allocator holds.
  std::vector<TimelinePoint> tl = timeline(rec, *image);
  int64_t peakHeap = 0, peakT = 0;
  for (const auto& p : tl)
    if (p.heap_bytes > peakHeap) {
      peakHeap = p.heap_bytes;
      peakT = p.t_ns;
    }
  const int64_t from = filter.t_from_ns.value_or(INT64_MIN), to = filter.t_to_ns.value_or(INT64_MAX);
  const bool timeFiltered = filter.t_from_ns || filter.t_to_ns;
  auto inRange = [&](int64_t t) { return !timeFiltered || (t >= from && t <= to); };
  std::optional<int64_t> lastSampleNs, lastLiveNs;
  for (const auto& p : tl) {
    if (!p.anon_bytes) continue;
    int64_t resident = *p.anon_bytes - p.mmap_bytes;
    if (resident <= 0) continue;
    if (inRange(p.t_ns)) lastSampleNs = p.t_ns;
    if (p.heap_bytes <= 0) {
      // Nothing live: 1 - 0 / resident is 100% of nothing, not fragmentation.
      if (inRange(p.t_ns)) ++out.nothing_live_samples;
      continue;
    }
    if (inRange(p.t_ns)) lastLiveNs = p.t_ns;
    double ratio = 1.0 - static_cast<double>(p.heap_bytes) / static_cast<double>(resident);
    out.series.push_back({p.t_ns, std::clamp(ratio, 0.0, 1.0), p.heap_bytes, resident});
  }
  // The first empty sample after the last live one, when the samples end with nothing live.
  if (out.nothing_live_samples > 0 && lastSampleNs && (!lastLiveNs || *lastLiveNs < *lastSampleNs)) {
    for (const auto& p : tl) {
      if (!p.anon_bytes || *p.anon_bytes - p.mmap_bytes <= 0 || !inRange(p.t_ns)) continue;
      if (lastLiveNs && p.t_ns <= *lastLiveNs) continue;
      out.nothing_live_from_ns = p.t_ns;
      break;
    }
  }
  if (out.series.empty()) return out;

  // RSS is sampled while the heap curve is exact, so one sample at the peak instant may lag the
  // heap by a sampling period. Every sample taken while the heap stood within 5% of its peak
  // describes the peak; the highest of them is the one least distorted by the lag.
  const FragmentationPoint* best = nullptr;
  for (const auto& f : out.series)
    if (f.heap_bytes * 100 >= peakHeap * 95 && (!best || f.ratio > best->ratio)) best = &f;
  if (!best) {
    for (const auto& f : out.series)
      if (!best || std::llabs(f.t_ns - peakT) < std::llabs(best->t_ns - peakT)) best = &f;
  }
  out.peak_ratio = best->ratio;
  out.peak_resident_bytes = best->resident_bytes;
  out.peak_heap_bytes = best->heap_bytes;
  if (timeFiltered) std::erase_if(out.series, [&](const FragmentationPoint& f) { return !inRange(f.t_ns); });
  return out;
}

HeapLayout heapLayout(const Recording& rec, int64_t image_id, uint64_t from, uint64_t to, int64_t t_ns) {
  HeapLayout out;
  out.from = from;
  out.to = to;
  out.t_ns = t_ns;
  out.complete = rec.info().allocation_rows == "all";
  if (!out.complete) {
    // After the image ended, what was live is exactly its leaks, and every leak has a row.
    detail::Statement q(rec, "SELECT end_ns FROM processes WHERE id = ?");
    q.bind(1, image_id);
    if (q.step() && q.optI64(0) && t_ns >= *q.optI64(0) && rec.info().complete) out.complete = true;
  }
  if (to <= from) return out;
  // Addresses are stored as SQLite integers (signed 64-bit): user-space addresses fit.
  detail::Statement q(rec,
                      "SELECT address, size, stack_id FROM allocations WHERE image_id = ? "
                      "AND address >= ? AND address < ? AND t_alloc <= ? "
                      "AND (t_free IS NULL OR t_free > ?) ORDER BY address");
  q.bind(1, image_id)
      .bind(2, static_cast<int64_t>(from))
      .bind(3, static_cast<int64_t>(to))
      .bind(4, t_ns)
      .bind(5, t_ns);
  uint64_t cursor = from;
  auto hole = [&](uint64_t a, uint64_t b) {
    if (b <= a) return;
    out.holes.push_back({a, b - a});
    out.free_bytes += b - a;
    out.largest_hole = std::max(out.largest_hole, b - a);
  };
  while (q.step()) {
    LayoutBlock b{static_cast<uint64_t>(q.i64(0)), static_cast<uint64_t>(q.i64(1)), q.i64(2)};
    hole(cursor, b.address);
    uint64_t end = std::min(to, b.address + b.size);
    cursor = std::max(cursor, end);
    out.live_bytes += end - b.address;
    out.blocks.push_back(b);
  }
  hole(cursor, to);
  out.external_fragmentation =
      out.free_bytes ? 1.0 - static_cast<double>(out.largest_hole) / static_cast<double>(out.free_bytes) : 0.0;
  return out;
}

}  // namespace memledger::analyzer
