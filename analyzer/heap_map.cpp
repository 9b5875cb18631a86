// The fragmentation map's regions (heap_map.h): which address ranges of which process and space
// have blocks with rows, and the space of a row.
#include "analyzer/heap_map.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "analyzer/control.h"
#include "analyzer/format.h"
#include "analyzer/heap_map_spaces.h"
#include "analyzer/sql.h"
#include "schemas/kinds.h"

namespace memledger::analyzer {

namespace detail {

RowSpaces::RowSpaces(const Recording& rec) : rec_(rec) {
  if (rec.info().schema_version < 5) return;
  Statement q(rec, "SELECT image_id, account, name, is_pool, base, reserved_bytes FROM spaces WHERE image_id != 0");
  while (q.step()) {
    accountNames_[{q.i64(0), q.i64(1)}] = q.text(2);
    if (q.i64(3) && q.i64(5) > 0)
      reserved_[{q.i64(0), q.text(2)}] = {static_cast<uint64_t>(q.i64(4)), static_cast<uint64_t>(q.i64(5))};
  }
}

const std::string& RowSpaces::of(int64_t image, int64_t stack, const std::string& kind) {
  static const std::string heap = "heap", mmap = "mmap", none;
  const kinds::KindInfo* k = kinds::byName(kind);
  if (k && k->shape == kinds::Shape::Block && k->space == kinds::Space::HostHeap) return heap;
  // (pyobject lives in mmap too, but as blocks of the pool "pymalloc": its account names it)
  if (k && k->space == kinds::Space::HostMmap && k->shape == kinds::Shape::Range) return mmap;
  if (k && k->kind == kinds::Kind::Vmm) return none;
  auto key = std::make_tuple(image, stack, kind);
  auto found = memo_.find(key);
  if (found != memo_.end()) return found->second;
  std::string name;
  if (!k) {
    name = kind;  // a kind this analyzer does not know: a space of its own
  } else if (k->space == kinds::Space::Pinned || k->space == kinds::Space::Managed) {
    name = kinds::spaceName(k->space);
  } else if (rec_.info().schema_version < 5) {
    name = k->name;  // before version 5 only custom blocks are here: the unnamed pool
  } else {
    if (!sitesRead_) {
      sitesRead_ = true;
      // Only the kinds whose account the kind does not say (a device's blocks, pool blocks).
      Statement s(rec_, "SELECT image_id, stack_id, kind, account FROM sites WHERE kind NOT IN ('malloc', 'new', 'mmap')");
      while (s.step()) siteAccounts_[{s.i64(0), s.i64(1), s.text(2)}] = s.i64(3);
    }
    auto account = siteAccounts_.find(key);
    auto named = account == siteAccounts_.end() ? accountNames_.end() : accountNames_.find({image, account->second});
    name = named != accountNames_.end() ? named->second : std::string(k->name);
  }
  return memo_.emplace(key, std::move(name)).first->second;
}

std::optional<RowSpaces::Reserved> RowSpaces::reserved(int64_t image, const std::string& space) const {
  auto found = reserved_.find({image, space});
  if (found == reserved_.end()) return std::nullopt;
  return found->second;
}

}  // namespace detail

namespace {

// Spaces in the order a chooser lists them: the host heap first.
int spaceRank(const std::string& space) {
  if (space == "heap") return 0;
  if (space == "mmap") return 1;
  if (space.rfind("pool:", 0) == 0 || space == "custom" || space == "pymalloc") return 2;
  if (space.rfind("device:", 0) == 0) return 3;
  if (space == "pinned") return 4;
  if (space == "managed") return 5;
  return 6;
}

// Per process and space, what the rows starting in each 1 MiB of addresses hold. Regions are runs
// of these pages: inside a page no gap reaches kMapJoinGap, so joining pages whose blocks come
// within kMapJoinGap of each other is joining the blocks themselves, in memory proportional to the
// pages, not to the rows (a --no-fold recording has millions).
struct Page {
  uint64_t lo = UINT64_MAX, hi = 0;  // lowest block start, highest block end
  int64_t rows = 0;
  uint64_t bytes = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
};
struct Group {
  std::map<uint64_t, Page> pages;  // by address / kMapJoinGap
  std::optional<detail::RowSpaces::Reserved> reserved;
  MapRegion pool;  // the reserved range's region
};

void add(Page& p, uint64_t address, uint64_t size, int64_t t_alloc, std::optional<int64_t> t_free) {
  p.lo = std::min(p.lo, address);
  p.hi = std::max(p.hi, address + size);
  ++p.rows;
  p.bytes += size;
  p.first = std::min(p.first, t_alloc);
  p.last = std::max(p.last, t_free.value_or(t_alloc));
}

}  // namespace

std::vector<MapRegion> mapRegions(const Recording& rec, QueryControl& control) {
  return detail::controlled(control, [&] { return mapRegions(rec); });
}

std::vector<MapRegion> mapRegions(const Recording& rec) {
  detail::RowSpaces spaces(rec);
  std::map<std::pair<int64_t, std::string>, Group> groups;
  int64_t total = 1;
  {
    detail::Statement n(rec, "SELECT max(id) FROM allocations");
    if (n.step() && n.optI64(0)) total = std::max<int64_t>(1, *n.optI64(0));
  }
  detail::Statement q(rec, "SELECT id, image_id, kind, stack_id, address, size, t_alloc, t_free FROM allocations");
  int64_t seen = 0;
  while (q.step()) {
    if ((++seen & 0xffff) == 0) detail::progress(double(q.i64(0)) / double(total));
    const int64_t image = q.i64(1);
    const std::string& space = spaces.of(image, q.i64(3), q.text(2));
    if (space.empty()) continue;
    const uint64_t address = static_cast<uint64_t>(q.i64(4)), size = static_cast<uint64_t>(q.i64(5));
    auto [it, isNew] = groups.try_emplace({image, space});
    Group& g = it->second;
    if (isNew) g.reserved = spaces.reserved(image, space);
    if (g.reserved && address >= g.reserved->base && address < g.reserved->base + g.reserved->size) {
      MapRegion& r = g.pool;
      if (r.rows == 0) r.first_ns = INT64_MAX, r.last_ns = INT64_MIN;
      ++r.rows;
      r.bytes += size;
      r.first_ns = std::min(r.first_ns, q.i64(6));
      r.last_ns = std::max(r.last_ns, q.optI64(7).value_or(q.i64(6)));
      continue;
    }
    add(g.pages[address / kMapJoinGap], address, size, q.i64(6), q.optI64(7));
  }

  std::vector<MapRegion> out;
  for (auto& [key, g] : groups) {
    // Not a structured binding: a lambda may not capture one (clang 14, the fuzz build).
    const int64_t image = key.first;
    const std::string& space = key.second;
    auto region = [&] {
      MapRegion r;
      r.image_id = image;
      r.pid = rec.pidOf(image);
      r.space = space;
      return r;
    };
    if (g.pool.rows > 0) {
      MapRegion r = region();
      r.from = g.reserved->base;
      r.to = g.reserved->base + g.reserved->size;
      r.reserved = true;
      r.rows = g.pool.rows;
      r.bytes = g.pool.bytes;
      r.first_ns = g.pool.first_ns;
      r.last_ns = g.pool.last_ns;
      out.push_back(std::move(r));
    }
    std::optional<MapRegion> open;
    for (const auto& [page, p] : g.pages) {
      if (open && p.lo <= open->to + kMapJoinGap) {
        open->to = std::max(open->to, p.hi);
        open->rows += p.rows;
        open->bytes += p.bytes;
        open->first_ns = std::min(open->first_ns, p.first);
        open->last_ns = std::max(open->last_ns, p.last);
        continue;
      }
      if (open) out.push_back(std::move(*open));
      open = region();
      open->from = p.lo;
      open->to = p.hi;
      open->rows = p.rows;
      open->bytes = p.bytes;
      open->first_ns = p.first;
      open->last_ns = p.last;
    }
    if (open) out.push_back(std::move(*open));
  }
  std::stable_sort(out.begin(), out.end(), [](const MapRegion& a, const MapRegion& b) {
    return std::make_tuple(a.image_id, spaceRank(a.space), a.space, a.from) <
           std::make_tuple(b.image_id, spaceRank(b.space), b.space, b.from);
  });
  return out;
}

std::string regionText(const MapRegion& r) {
  char range[64];
  std::snprintf(range, sizeof range, "0x%" PRIx64 "-0x%" PRIx64, r.from, r.to);
  std::string out = r.space + " " + range + " (" + formatBytes(static_cast<int64_t>(r.to - r.from)) +
                    (r.reserved ? " reserved, " : ", ") + formatCount(r.rows) + (r.rows == 1 ? " block)" : " blocks)");
  return out;
}

std::string mapCoverageText(const HeapHistory& h) {
  if (h.everyBlock()) return "Every block has a row (recorded with --no-fold): the map is exact at every instant.";
  const std::string end = h.image_end_ns ? " at and after the process's end (" + formatDuration(*h.image_end_ns) + ")" : "";
  if (h.allocation_rows == "long_lived")
    return "Only blocks that lived at least " + formatDuration(h.fold_threshold_ns) +
           " have a row (recorded with --fold-ms): a block freed sooner is missing and its place looks free. "
           "The map is exact" + end + " and wherever the memory curve shows that every live byte has a row; "
           "record with `memledger record --no-fold` for every block.";
  return "This recording keeps rows only for the blocks live at the end of their process (the default): "
         "the map is exact" + end + " and wherever the memory curve shows that every live byte has a row; "
         "mid-run, blocks freed later are missing. Record with `memledger record --no-fold` (every block) "
         "or `--fold-ms N` (blocks that lived at least N ms) for the map at every instant.";
}

}  // namespace memledger::analyzer
