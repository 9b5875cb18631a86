// The fragmentation map: where the blocks of an address range lay at one instant, the free space
// between them, and how that changed event by event (the GUI's Fragmentation view, docs/gui.md).
//
// Everything comes from `allocations` rows, so what a map can show depends on which blocks have
// one (meta allocation_rows, schemas/memledger.sql):
//   all         (`record --no-fold`)      every block: every layout is exact
//   long_lived  (`record --fold-ms N`)    blocks that lived at least N ms: a block freed sooner is
//                                         missing, its place looks free
//   leaks       (the default)             only blocks live at the end of their process: exact at
//                                         the end, mid-run the freed blocks are missing
// A layout says whether it is exact: always with every row; at or after its process's end; and
// otherwise when the space's memory curve (exact per timeline bucket) shows that every byte live
// at that instant belongs to a block with a row. When it cannot say so, it gives the bytes live
// without a row (a range, from the curve's lowest and highest value in the bucket).
//
// Regions: the recording has no map of the process's address space, so a region is what the rows
// tell: per process and space, the blocks whose addresses lie within 1 MiB of each other are one
// region (glibc's main heap, one of its mmapped arenas or chunks, a run of device allocations),
// except a pool whose program told memledger_pool_create its base and size: its region is that
// reserved range, and the free space at its ends counts as free (it is the pool's). cuMemCreate
// (vmm) rows are handles of physical memory, not addresses, and are left out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer {

// Blocks of one space closer than this are one region.
inline constexpr uint64_t kMapJoinGap = uint64_t(1) << 20;

struct MapRegion {
  int64_t image_id = 0, pid = 0;
  std::string space;          // heap | mmap | device:N | pinned | managed | pool:NAME | custom
  uint64_t from = 0, to = 0;  // [from, to)
  bool reserved = false;      // [from, to) is a pool's reserved range; else the span of its rows' blocks
  int64_t rows = 0;           // blocks with a row in it
  uint64_t bytes = 0;         // their sizes summed
  int64_t first_ns = 0, last_ns = 0;  // its first allocation and its last allocation or free
};

// Every region of every process: by process, then space (heap, mmap, pools, devices, pinned,
// managed), then address.
std::vector<MapRegion> mapRegions(const Recording& rec);
std::vector<MapRegion> mapRegions(const Recording& rec, QueryControl& control);
// "heap 0x55d4c0a2f2a0-0x55d4dc6e1000 (443.0 MiB, 300,000 blocks)"
std::string regionText(const MapRegion& region);

struct MapBlock {
  uint64_t address = 0, size = 0;
  int64_t stack_id = 0;
  int64_t row_id = 0;  // allocations.id
  int64_t t_alloc = 0;
  std::optional<int64_t> t_free;  // nullopt: live when its process ended
  uint16_t op = 0;                // index into HeapHistory::ops ("malloc", "realloc", "cuMemAlloc")
  uint32_t alloc_event = 0;       // its events' positions in HeapHistory::events; a block never
  uint32_t free_event = 0;        // freed has free_event == events.size()
};

struct MapEvent {
  int64_t t_ns = 0;
  uint32_t block = 0;  // index into HeapHistory::blocks
  bool alloc = true;
};

struct MapGap {
  uint64_t address = 0, size = 0;
};

struct MapSite {
  int64_t stack_id = 0;
  int64_t count = 0;
  uint64_t bytes = 0;
};

// The region at one instant.
struct MapLayout {
  size_t applied = 0;  // events applied: the state after events [0, applied)
  int64_t t_ns = 0;
  std::vector<uint32_t> live;  // live blocks (indices into HeapHistory::blocks), address ascending
  // Free space between two live blocks (and, in a reserved region, before the first and after
  // the last), at least HeapHistory::slack_limit bytes: holes. Smaller gaps between two blocks
  // are the allocator's rounding and headers (slack_bytes), free but of no use to anyone.
  std::vector<MapGap> holes;
  uint64_t live_bytes = 0, hole_bytes = 0, slack_bytes = 0, largest_hole = 0;
  // The span the free space is measured in: the reserved range, or from the first live block's
  // start to the last one's end (0, 0: nothing live in an unreserved region).
  uint64_t span_from = 0, span_to = 0;
  std::vector<MapSite> sites;  // live bytes per site, bytes descending
  // Exact: every block live at t_ns has a row. Otherwise the bytes of the space (of the whole
  // space in this process, not only this region) live at t_ns without a row, at least and at
  // most; nullopt when the curve cannot tell (inside a busy bucket of a curve without extremes).
  bool exact = false;
  std::optional<int64_t> rowless_min, rowless_max;

  uint64_t freeBytes() const { return hole_bytes + slack_bytes; }
  // Free bytes as a share of the span: 1 - live / span (0 when nothing is live).
  double freeRatio() const;
  // The share of the free bytes that are slack ("internal"): PyTorch's "X free (Y% internal)".
  double internalShare() const;
  // 1 - largest hole / hole bytes: 0 when the free space is one piece, near 1 when it is crumbs.
  double externalFragmentation() const;
};

// The region over time, from its rows (the last state of each of at most 4096 intervals).
struct MapPoint {
  int64_t t_ns = 0;
  uint64_t live_bytes = 0, hole_bytes = 0, slack_bytes = 0, largest_hole = 0;
  uint64_t span = 0;
  int64_t holes = 0;
  double freeRatio() const { return span ? 1.0 - double(live_bytes) / double(span) : 0.0; }
};

// The rows of one region, read once; layouts at any instant or event from memory.
class HeapHistory {
 public:
  MapRegion region;
  std::string allocation_rows;  // all | long_lived | leaks
  int64_t fold_threshold_ns = 0;
  int64_t image_start_ns = 0;
  std::optional<int64_t> image_end_ns;  // nullopt: the process had not ended (recorder killed)
  // Gaps between two live blocks smaller than this are rounding and headers, not holes: 32 in the
  // host heap (glibc's 8-byte chunk header and 16-byte rounding leave 8 to 23 bytes between two
  // neighbours; a freed chunk is at least 32), a page in mmap, 0 elsewhere (a device's rounding
  // is the driver's and not known).
  uint64_t slack_limit = 0;
  std::vector<std::string> ops;  // MapBlock::op names
  std::vector<MapBlock> blocks;  // address ascending
  std::vector<MapEvent> events;  // time ascending; at one instant frees come before allocations
  std::vector<MapPoint> series;

  // Events at or before t_ns.
  size_t eventsUpTo(int64_t t_ns) const;
  // The state after `applied` events, at the last applied event's instant (the process's start
  // when none is).
  MapLayout layoutAfter(size_t applied) const;
  // The state at an instant.
  MapLayout layoutAt(int64_t t_ns) const;
  // The live block of `layout` that covers most of [from, to) (a pixel's bytes), if any.
  std::optional<uint32_t> blockAt(const MapLayout& layout, uint64_t from, uint64_t to) const;
  // The instant a view shows first. With every block: of the states after each event, the last
  // one in which the most free bytes lie outside the largest hole (what no block larger than that
  // hole can use: where fragmentation costs most), or, if the free space is never scattered, the
  // last peak of live bytes. Otherwise the process's end, where the map is exact (the last event
  // if it never ended).
  int64_t defaultInstant() const;
  // Whether every block has a row, at every instant.
  bool everyBlock() const { return allocation_rows == "all"; }

 private:
  friend HeapHistory heapHistory(const Recording&, const MapRegion&);
  MapLayout layout(size_t applied, int64_t t_ns) const;
  void settleExactness(MapLayout& layout) const;
  bool complete_ = false;        // the recording was finished by its recorder
  int64_t bucket_ns_ = 0;
  bool curveKnown_ = false;       // the space has a memory curve to check the rows against
  bool curveHasExtremes_ = true;  // the space's curve has each bucket's max/min (not mmap)
  std::vector<int64_t> curveT_, curveValue_, curveMax_, curveMin_;  // the space's memory curve
  std::vector<int64_t> rowT_, rowLive_;  // bytes of the space's rows live after each instant
  int64_t worstNs_ = 0;                  // defaultInstant() with every block
};

// Reads a region's rows (those of its space in its address range), orders its events and builds
// its series. Throws RecordingError, or Cancelled when `control` is cancelled.
HeapHistory heapHistory(const Recording& rec, const MapRegion& region, QueryControl& control);
HeapHistory heapHistory(const Recording& rec, const MapRegion& region);

// What a recording's rows let the map show, in one sentence for a front end ("Every block has a
// row: the map is exact at every instant." / "... record with `memledger record --no-fold`").
std::string mapCoverageText(const HeapHistory& history);

}  // namespace memledger::analyzer
