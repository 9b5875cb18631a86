// Questions answered from the aggregate tables alone (sites, processes): processes, sites,
// leaks, peak, totals, temporaries. Only a time filter on leaks reads raw allocation rows.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "analyzer/analyzer.h"
#include "analyzer/format.h"
#include "analyzer/live_sets.h"
#include "analyzer/python_sites.h"
#include "analyzer/site_merge.h"
#include "analyzer/sql.h"
#include "analyzer/leaked_blocks.h"
#include "schemas/kinds.h"

namespace memledger::analyzer {

namespace detail {

std::string imageCondition(const Recording& rec, const Filter& filter, const char* column) {
  if (!filter.pid) return {};
  std::string ids;
  Statement q(rec, "SELECT id FROM processes WHERE pid = ? ORDER BY id");
  q.bind(1, *filter.pid);
  while (q.step()) ids += (ids.empty() ? "" : ",") + std::to_string(q.i64(0));
  if (ids.empty()) return " AND 0";
  return std::string(" AND ") + column + " IN (" + ids + ")";
}

std::optional<std::vector<int64_t>> filterImages(const Recording& rec, const Filter& filter) {
  if (!filter.pid) return std::nullopt;
  std::vector<int64_t> ids;
  Statement q(rec, "SELECT id FROM processes WHERE pid = ? ORDER BY id");
  q.bind(1, *filter.pid);
  while (q.step()) ids.push_back(q.i64(0));
  return ids;
}

std::optional<int64_t> peakImage(const Recording& rec, const Filter& filter) {
  if (!filter.pid && rec.info().peak_image) {
    Statement q(rec, "SELECT id FROM processes WHERE id = ?");
    q.bind(1, *rec.info().peak_image);
    if (q.step()) return q.i64(0);
  }
  std::string sql = "SELECT id FROM processes WHERE 1" + imageCondition(rec, filter, "id") +
                    " ORDER BY peak_heap_bytes DESC, id LIMIT 1";
  Statement q(rec, sql.c_str());
  if (q.step()) return q.i64(0);
  return std::nullopt;
}

// The C runtime's entry frames name no code of the program's: a stripped program's stacks have
// no other symbol, and "__libc_start_call_main" was then taken for the site.
bool isRuntimeEntry(const std::string& f) {
  static const char* const entries[] = {"__libc_start_call_main", "__libc_start_main", "__libc_start_main_impl",
                                        "_start", "start_thread", "clone", "clone3", "__clone"};
  for (const char* e : entries)
    if (f == e) return true;
  return false;
}

const Frame* namedFrame(const Stack& stack) {
  // The C++ standard library's frames (a vector's growth, a string's copy, an allocator) are
  // how the program allocated, not where: the first named frame past them names the site.
  const Frame* first = nullptr;
  for (const Frame& f : stack) {
    if (!f.function || isRuntimeEntry(*f.function)) continue;
    if (!isStandardLibraryFrame(f)) return &f;
    if (!first) first = &f;
  }
  return first;
}

}  // namespace detail

bool isStandardLibraryFrame(const Frame& f) {
  if (f.file) return f.file->find("/include/c++/") != std::string::npos;  // libstdc++'s and libc++'s headers
  if (f.function && (f.function->starts_with("std::") || f.function->starts_with("__gnu_cxx::"))) return true;
  if (!f.module) return false;
  const std::string_view base = pathBaseName(*f.module);
  return base.starts_with("libstdc++") || base.starts_with("libc++.");
}

std::string siteText(const Stack& stack) {
  if (const Frame* f = siteFrame(stack)) return frameText(*f);
  return stack.empty() ? "(no stack)" : frameText(stack.front());
}

std::vector<std::string> distinctSiteTexts(const std::vector<const Stack*>& stacks) {
  std::vector<std::string> base, out;
  std::vector<size_t> depth;  // of the frame the text names
  for (const Stack* s : stacks) {
    base.push_back(siteText(*s));
    const Frame* f = siteFrame(*s);
    size_t d = 0;
    while (f && d < s->size() && &(*s)[d] != f) ++d;
    depth.push_back(f && d < s->size() ? d : 0);
  }
  out = base;
  auto textAt = [&](size_t i, size_t d) { return d < stacks[i]->size() ? frameText((*stacks[i])[d]) : std::string(); };
  for (size_t i = 0; i < stacks.size(); ++i) {
    std::vector<size_t> same;
    for (size_t j = 0; j < stacks.size(); ++j)
      if (j != i && base[j] == base[i]) same.push_back(j);
    if (same.empty()) continue;
    for (size_t d = depth[i] + 1; d < stacks[i]->size(); ++d) {
      std::string mine = textAt(i, d);
      bool differs = false;
      for (size_t j : same) differs = differs || textAt(j, d - depth[i] + depth[j]) != mine;
      if (differs) {
        out[i] += " <- " + mine;
        break;
      }
    }
  }
  return out;
}

std::vector<SiteAmount> sitesBySameFrames(std::span<const SiteAmount> sites, size_t top, bool by_count) {
  std::vector<SiteAmount> out;
  std::unordered_map<std::string, size_t> at;
  for (const SiteAmount& s : sites) {
    auto [it, added] = at.try_emplace(stackKey(s.stack) + '\n' + s.kind, out.size());
    if (added) {
      out.push_back(s);
      continue;
    }
    out[it->second].count += s.count;
    out[it->second].bytes += s.bytes;
  }
  std::stable_sort(out.begin(), out.end(), [by_count](const SiteAmount& a, const SiteAmount& b) {
    return by_count ? a.count > b.count : a.bytes > b.bytes;
  });
  if (out.size() > top) out.resize(top);
  return out;
}

namespace {

void sortAndCut(std::vector<SiteAmount>& v, const Filter& filter) {
  auto order = [](const SiteAmount& a, const SiteAmount& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.count != b.count) return a.count > b.count;
    if (a.stack_id != b.stack_id) return a.stack_id < b.stack_id;
    return a.kind < b.kind;
  };
  // Only the first `top` are kept: ordering the long tail too was half of `suggest` on torch_mlp.
  if (filter.top && v.size() > *filter.top) {
    std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(*filter.top), v.end(), order);
    v.resize(*filter.top);
  } else {
    std::sort(v.begin(), v.end(), order);
  }
}

SiteAmount amount(const Recording& rec, int64_t stackId, std::string kind, int64_t imageId,
                  int64_t count, int64_t bytes) {
  SiteAmount s;
  s.stack_id = stackId;
  s.kind = std::move(kind);
  s.pid = rec.pidOf(imageId);
  s.image_id = imageId;
  s.count = count;
  s.bytes = bytes;
  return s;
}

// The order sortAndCut() keeps, in SQL, so that a `top` cut reads only the rows it keeps.
std::string orderAndLimit(const char* prefix, const Filter& filter) {
  if (!filter.top) return {};
  std::string p = prefix;
  return " ORDER BY " + p + "_bytes DESC, " + p + "_count DESC, stack_id, kind LIMIT " + std::to_string(*filter.top);
}

void attachStacks(const Recording& rec, std::vector<SiteAmount>& v) {
  for (auto& s : v) s.stack = rec.stack(s.stack_id);
}

}  // namespace

std::vector<Process> processes(const Recording& rec) {
  std::vector<SpacePeak> spaces = spacePeaks(rec);
  detail::Statement q(rec,
                      "SELECT id, pid, ppid, parent_id, command, exe, start_ns, end_ns, ended_by, "
                      "exit_code, signal, forked, wait_ns, peak_rss, peak_heap_bytes, peak_heap_ns, "
                      "peak_mmap_bytes, peak_mmap_ns, unknown_frees FROM processes ORDER BY start_ns, id");
  std::vector<Process> out;
  while (q.step()) {
    Process p;
    p.image_id = q.i64(0);
    p.pid = q.i64(1);
    p.ppid = q.i64(2);
    p.parent_image = q.optI64(3);
    p.command = q.text(4);
    p.exe = q.optText(5);
    p.start_ns = q.i64(6);
    p.end_ns = q.optI64(7);
    p.ended_by = q.optText(8);
    p.exit_code = q.optI64(9);
    p.signal = q.optI64(10);
    p.forked = q.i64(11) != 0;
    p.wait_ns = q.i64(12);
    p.peak_rss = q.i64(13);
    p.peak_heap_bytes = q.i64(14);
    p.peak_heap_ns = q.i64(15);
    p.peak_mmap_bytes = q.i64(16);
    p.peak_mmap_ns = q.i64(17);
    p.unknown_frees = q.i64(18);
    for (const SpacePeak& s : spaces)
      if (s.image_id == p.image_id) p.spaces.push_back(s);
    out.push_back(std::move(p));
  }
  return out;
}

namespace detail {
// The heap's live set at its peak (no stacks): heap kinds only (account 0), never mmap or pools;
// the simultaneous peak's (peak_site_lists or peak_sites: live_sets.h) or image's own (sites.peak_*).
std::vector<SiteAmount> heapPeakSites(const Recording& rec, const Filter& filter, bool simultaneous, int64_t image) {
  std::vector<SiteAmount> out;
  if (simultaneous) {
    // Sites of several processes are merged before the cut (peak()): then every row is needed.
    const kinds::KindInfo* k = filter.kind ? kinds::byName(*filter.kind) : nullptr;
    std::vector<PeakSite> live = peakSites(rec, "heap");
    if (filter.kind)
      std::erase_if(live, [&](const PeakSite& s) { return !k || s.kind != k->code; });
    if (filter.top && !severalProcesses(rec, filter) && live.size() > *filter.top) {
      auto order = [](const PeakSite& a, const PeakSite& b) {
        if (a.bytes != b.bytes) return a.bytes > b.bytes;
        if (a.count != b.count) return a.count > b.count;
        return a.stack_id != b.stack_id ? a.stack_id < b.stack_id : a.kind < b.kind;
      };
      std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(*filter.top), live.end(), order);
      live.resize(*filter.top);
    }
    for (const PeakSite& s : live)
      out.push_back(amount(rec, s.stack_id, siteKindName(s.kind), s.image_id, s.count, s.bytes));
    return out;
  }
  std::string sql = "SELECT stack_id, kind, image_id, peak_count, peak_bytes FROM sites "
                    "WHERE image_id = ? AND peak_bytes > 0 AND kind IN " + heapKindsSql() +
                    (filter.kind ? " AND kind = ?" : "") + orderAndLimit("peak", filter);
  Statement q(rec, sql.c_str());
  q.bind(1, image);
  if (filter.kind) q.bind(2, *filter.kind);
  while (q.step()) out.push_back(amount(rec, q.i64(0), q.text(1), q.i64(2), q.i64(3), q.i64(4)));
  return out;
}

bool hasSimultaneousPeaks(const Recording& rec) { return simultaneousPeak(rec, "heap").has_value(); }

namespace {
// Every site, as the query below lists them with no filter (alloc_bytes descending, then stack id
// and kind), decoded straight from the packed totals (version 4+): the `sites` virtual table and
// SQLite's sort took 1.3 s for torch_mlp's 700k sites, this takes a few tens of ms. The stable
// sort keeps the file's order among full ties, as SQLite's sorter does over a scan in that order.
std::vector<Site> allSiteRows(const Recording& rec) {
  std::map<std::pair<int64_t, int64_t>, std::string> names;  // (image, account) -> space name
  for (const SpacePeak& sp : spacePeaks(rec)) names[{sp.image_id, sp.account}] = sp.name;
  std::unordered_map<int64_t, int64_t> pids;
  std::vector<Site> out;
  forEachSite(rec, [&](const SiteEntry& e) {
    Site s;
    s.stack_id = e.stack_id;
    s.kind = siteKindName(e.kind);
    s.image_id = e.image_id;
    auto pid = pids.find(e.image_id);
    if (pid == pids.end()) pid = pids.emplace(e.image_id, rec.pidOf(e.image_id)).first;
    s.pid = pid->second;
#define MEMLEDGER_COPY_COUNTER(name) s.name = e.name;
    MEMLEDGER_SITE_COUNTERS(MEMLEDGER_COPY_COUNTER)
#undef MEMLEDGER_COPY_COUNTER
    s.account = int64_t(e.account);
    auto name = names.find({s.image_id, s.account});
    s.space = name != names.end() ? name->second : (s.account == 1 ? "mmap" : "heap");
    out.push_back(std::move(s));
  });
  // Sorted by key, then moved once: sorting 700k Sites (strings, a stack) took longer than the
  // decode. The index as the last key keeps the file's order among full ties.
  struct Key {
    int64_t alloc_bytes, stack_id;
    const std::string* kind;
    uint32_t index;
  };
  std::vector<Key> keys(out.size());
  for (size_t i = 0; i < out.size(); ++i) keys[i] = Key{out[i].alloc_bytes, out[i].stack_id, &out[i].kind, uint32_t(i)};
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.alloc_bytes != b.alloc_bytes) return a.alloc_bytes > b.alloc_bytes;
    if (a.stack_id != b.stack_id) return a.stack_id < b.stack_id;
    if (*a.kind != *b.kind) return *a.kind < *b.kind;
    return a.index < b.index;
  });
  // Put in that order in place (following each cycle of the permutation): a second vector of
  // 700k Sites would be 200 MB more to fault in.
  std::vector<uint32_t> from(out.size());
  for (size_t i = 0; i < keys.size(); ++i) from[i] = keys[i].index;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == i) continue;
    Site held = std::move(out[i]);
    size_t at = i;
    while (from[at] != i) {
      const size_t next = from[at];
      out[at] = std::move(out[next]);
      from[at] = uint32_t(at);
      at = next;
    }
    out[at] = std::move(held);
    from[at] = uint32_t(at);
  }
  applyPythonLeakRule(rec, out);
  return out;
}
}  // namespace

std::vector<Site> siteRows(const Recording& rec, const Filter& filter, const char* where) {
  if (!where && !filter.pid && !filter.kind && !filter.top && rec.info().schema_version >= 4) return allSiteRows(rec);
#define MEMLEDGER_COUNTER_COLUMN(name) ", " #name
  // Version 1-3 files have a real `sites` table without accounts: mmap counted in account 1.
  const char* account = rec.info().schema_version >= 4 ? ", account" : ", CASE kind WHEN 'mmap' THEN 1 ELSE 0 END";
  std::string sql =
      std::string("SELECT stack_id, kind, image_id" MEMLEDGER_SITE_COUNTERS(MEMLEDGER_COUNTER_COLUMN)) + account +
      " FROM sites WHERE 1" +
#undef MEMLEDGER_COUNTER_COLUMN
      detail::imageCondition(rec, filter, "image_id") + (filter.kind ? " AND kind = ?" : "") +
      (where ? std::string(" AND (") + where + ")" : std::string()) +
      " ORDER BY alloc_bytes DESC, stack_id, kind" +
      (filter.top ? " LIMIT " + std::to_string(*filter.top) : std::string());
  detail::Statement q(rec, sql.c_str());
  if (filter.kind) q.bind(1, *filter.kind);
  std::vector<Site> out;
  std::map<std::pair<int64_t, int64_t>, std::string> names;  // (image, account) -> space name
  for (const SpacePeak& sp : spacePeaks(rec)) names[{sp.image_id, sp.account}] = sp.name;
  while (q.step()) {
    Site s;
    s.stack_id = q.i64(0);
    s.kind = q.text(1);
    s.image_id = q.i64(2);
    s.pid = rec.pidOf(s.image_id);
    int column = 3;
#define MEMLEDGER_READ_COUNTER(name) s.name = q.i64(column++);
    MEMLEDGER_SITE_COUNTERS(MEMLEDGER_READ_COUNTER)
#undef MEMLEDGER_READ_COUNTER
    s.account = q.i64(column);
    auto name = names.find({s.image_id, s.account});
    s.space = name != names.end() ? name->second : (s.account == 1 ? "mmap" : "heap");
    out.push_back(std::move(s));
    if (filter.top && out.size() >= *filter.top) break;
  }
  applyPythonLeakRule(rec, out);
  return out;
}
}  // namespace detail

std::vector<Site> sites(const Recording& rec, const Filter& filter) {
  std::vector<Site> out = detail::siteRows(rec, filter);
  for (auto& s : out) s.stack = rec.stack(s.stack_id);
  return out;
}

Leaks leaks(const Recording& rec, const Filter& filter) {
  Leaks out;
  // Every leak site as a row without strings first (a PyTorch range: 10^5 sites, 1000 listed).
  // Python images count at their interpreter's finalization (python_leaks.cpp); the rest here.
  detail::LeakRows rows;
  std::vector<int64_t> python;  // ascending
  std::string pyImages = detail::pythonLeaks(rec, filter, out, rows, &python);
  std::string images = detail::imageCondition(rec, filter, "image_id") + pyImages;
  std::string kindCond = filter.kind ? " AND kind = ?" : "";
  const bool byTime = filter.t_from_ns || filter.t_to_ns;
  const detail::LeakedBlocks* blocks = byTime ? &rec.leakedBlocks() : nullptr;
  auto add = [&](int64_t stack, std::string_view kind, int64_t image, int64_t count, int64_t bytes) {
    rows.rows.push_back({stack, image, count, bytes, rows.kind(kind), false});
  };
  if (blocks && blocks->available()) {
    // Every leaked block has its own row (never folded), so the time filter is exact here; the
    // rows are in memory (a range after range: the GUI).
    const std::optional<std::vector<int64_t>> kept = detail::filterImages(rec, filter);
    std::optional<size_t> kind;  // the filter's kind among the blocks' (none: no block has it)
    if (filter.kind) {
      auto it = std::lower_bound(blocks->kinds().begin(), blocks->kinds().end(), *filter.kind);
      kind = it != blocks->kinds().end() && *it == *filter.kind ? size_t(it - blocks->kinds().begin()) : SIZE_MAX;
    }
    auto keep = [&](const detail::LeakedBlocks::Block& b) {
      if (kind && b.kind != *kind) return false;
      if (std::binary_search(python.begin(), python.end(), b.image)) return false;
      return !kept || std::binary_search(kept->begin(), kept->end(), b.image);
    };
    for (const detail::LeakedSite& l : detail::leakedSites(blocks->range(filter.t_from_ns, filter.t_to_ns), keep))
      add(l.stack, blocks->kinds()[l.kind], l.image, l.count, l.bytes);
  } else if (byTime) {
    // Every leaked block has its own row (never folded), so the time filter is exact here.
    std::string sql =
        "SELECT stack_id, kind, image_id, count(*), sum(size) FROM allocations "
        "WHERE t_free IS NULL AND t_alloc >= ? AND t_alloc <= ?" +
        images + kindCond + " GROUP BY stack_id, kind, image_id";
    detail::Statement q(rec, sql.c_str());
    q.bind(1, filter.t_from_ns.value_or(INT64_MIN));
    q.bind(2, filter.t_to_ns.value_or(INT64_MAX));
    if (filter.kind) q.bind(3, *filter.kind);
    while (q.step()) add(q.i64(0), q.text(1), q.i64(2), q.i64(3), q.i64(4));
  } else {
    // Decoded here, not through SQL: most sites leak nothing (torch_mlp: 210k of 508k do).
    const std::optional<std::vector<int64_t>> kept = detail::filterImages(rec, filter);
    detail::forEachSite(rec, [&](const detail::SiteEntry& e) {
      if (e.leak_count <= 0 || std::binary_search(python.begin(), python.end(), e.image_id)) return;
      if (kept && !std::binary_search(kept->begin(), kept->end(), e.image_id)) return;
      const char* kind = detail::siteKindName(e.kind);
      if (filter.kind && *filter.kind != kind) return;
      add(e.stack_id, kind, e.image_id, e.leak_count, e.leak_bytes);
    });
  }
  std::vector<char> inside(rows.kinds.size());
  for (size_t k = 0; k < rows.kinds.size(); ++k) inside[k] = detail::insideCountedMemory(rows.kinds[k]);
  out.count = out.bytes = 0;
  for (const detail::LeakRow& r : rows.rows) {
    (inside[r.kind] ? out.pool_count : out.count) += r.count;
    (inside[r.kind] ? out.pool_bytes : out.bytes) += r.bytes;
    out.pool_site_count += inside[r.kind];
  }
  out.site_count = rows.rows.size();
  auto amountOf = [&](const detail::LeakRow& r) {
    SiteAmount s = amount(rec, r.stack, rows.kinds[r.kind], r.image, r.count, r.bytes);
    if (r.python) s.python_owned = detail::pythonOwned(rec, r.image, r.stack, s.kind);
    return s;
  };
  if (detail::severalProcesses(rec, filter)) {
    // The same leak in every child of a fork or exec loop is one site (analyzer/site_merge.h):
    // merged first, then cut.
    out.sites.reserve(rows.rows.size());
    for (const detail::LeakRow& r : rows.rows) out.sites.push_back(amountOf(r));
    rows.rows = std::vector<detail::LeakRow>();
    detail::attachLeakKinds(rec, filter, out);  // leak kinds (leak_kinds.cpp)
    out.sites = detail::mergeAcrossProcesses(rec, std::move(out.sites));
    out.site_count = out.sites.size();
    out.pool_site_count = static_cast<size_t>(std::count_if(
        out.sites.begin(), out.sites.end(), [](const SiteAmount& s) { return detail::insideCountedMemory(s.kind); }));
    sortAndCut(out.sites, filter);
  } else {
    // One process: only the first `top` rows (sortAndCut()'s order) become SiteAmounts; the leak
    // kinds' totals are over every row.
    const size_t keep = detail::orderLeakRows(rows, filter.top);
    out.sites.reserve(keep);
    for (size_t i = 0; i < keep; ++i) out.sites.push_back(amountOf(rows.rows[i]));
    detail::attachLeakKinds(rec, filter, out, rows);
  }
  attachStacks(rec, out.sites);
  detail::classifyOrigins(rec, out.sites);
  return out;
}

Peak peak(const Recording& rec, const Filter& filter) {
  Peak out;
  auto image = detail::peakImage(rec, filter);
  if (!image) return out;
  out.image_id = *image;
  out.pid = rec.pidOf(*image);
  std::vector<SpacePeak> all = spacePeaks(rec);
  // The simultaneous peaks (image 0) exist from version 5 on; a pid filter asks for one process.
  bool simultaneous = !filter.pid && detail::hasSimultaneousPeaks(rec);
  out.scope = simultaneous ? "all processes" : "process";
  std::vector<int64_t> images;  // the images a pid filter keeps
  if (filter.pid) {
    for (const Process& p : processes(rec))
      if (p.pid == *filter.pid) images.push_back(p.image_id);
  }
  auto kept = [&](const SpacePeak& s) {
    return !filter.pid || std::find(images.begin(), images.end(), s.image_id) != images.end();
  };
  // Per space: the simultaneous row, or the largest single process's.
  std::map<std::string, SpacePeak> bySpace;
  for (const SpacePeak& s : all) {
    if (s.pool) {
      if (s.image_id && kept(s)) out.pools.push_back(s);
      continue;
    }
    if (simultaneous ? s.image_id != 0 : (s.image_id == 0 || !kept(s))) continue;
    auto [it, isNew] = bySpace.try_emplace(s.name, s);
    if (!isNew && s.bytes > it->second.bytes) it->second = s;
  }
  for (auto& [name, s] : bySpace) out.spaces.push_back(s);
  for (const char* k : {"heap", "mmap"}) {
    KindPeak kp;
    kp.kind = k;
    if (auto it = bySpace.find(k); it != bySpace.end()) {
      kp.bytes = it->second.bytes;
      kp.time_ns = it->second.time_ns;
      kp.pid = it->second.pid;
    }
    out.by_kind.push_back(kp);
  }
  if (simultaneous) {
    out.bytes = out.by_kind[0].bytes;
    out.time_ns = out.by_kind[0].time_ns;
  } else {
    detail::Statement q(rec, "SELECT peak_heap_bytes, peak_heap_ns FROM processes WHERE id = ?");
    q.bind(1, *image);
    if (q.step()) {
      out.bytes = q.i64(0);
      out.time_ns = q.i64(1);
    }
  }

  // RSS is per process: compare it with the heap of the same process.
  {
    std::string sql = "SELECT pid, peak_rss, peak_heap_bytes, peak_mmap_bytes FROM processes WHERE 1" +
                      detail::imageCondition(rec, filter, "id") + " ORDER BY peak_rss DESC, id LIMIT 1";
    detail::Statement q(rec, sql.c_str());
    int64_t mmapPeak = 0;
    if (q.step()) {
      out.rss_pid = q.i64(0);
      out.rss_bytes = q.i64(1);
      out.rss_heap_bytes = q.i64(2);
      mmapPeak = q.i64(3);
    }
    if (out.rss_bytes == 0) {  // no sample in the process table: the curve's samples, if any
      out.rss_pid = out.pid;
      out.rss_heap_bytes = out.by_kind[0].bytes;
      for (const detail::TimelineRow& r : detail::timelineRows(rec, detail::imageCondition(rec, filter, "image_id")))
        out.rss_bytes = std::max(out.rss_bytes, r.rss_bytes.value_or(0));
    }
    out.gap_bytes = out.rss_bytes - out.rss_heap_bytes;
    std::string who = "process " + std::to_string(out.rss_pid);
    if (out.rss_bytes == 0) {
      out.gap_explanation = "No RSS was sampled, so the gap between resident memory and the heap is unknown.";
    } else if (out.gap_bytes < 0) {
      out.gap_explanation = "In " + who + ", RSS (" + formatBytes(out.rss_bytes) + ") stayed below its heap peak (" +
                            formatBytes(out.rss_heap_bytes) +
                            "): allocated pages that were never touched are not resident, and RSS is "
                            "sampled, so a short spike can fall between two samples.";
    } else {
      out.gap_explanation =
          "In " + who + ", RSS peaked " + formatBytes(out.gap_bytes) + " above its own heap peak (" +
          formatBytes(out.rss_heap_bytes) + "): that is program code and shared libraries, thread "
          "stacks, anonymous mmaps (" + formatBytes(mmapPeak) + " at their own peak), and memory the "
          "allocator keeps after free (free lists, fragmentation, per-thread arenas).";
    }
  }

  out.sites = detail::heapPeakSites(rec, filter, simultaneous, *image);
  // Live at once in several processes: the same code is one site (analyzer/site_merge.h).
  if (simultaneous && detail::severalProcesses(rec, filter))
    out.sites = detail::mergeAcrossProcesses(rec, std::move(out.sites));
  sortAndCut(out.sites, filter);
  attachStacks(rec, out.sites);
  return out;
}

Totals totals(const Recording& rec, const Filter& filter) {
  Totals t;
  // Summed here per kind rather than by a GROUP BY: that sorted torch_mlp's 609k sites and was
  // half of its report's time.
  const std::optional<std::vector<int64_t>> kept = detail::filterImages(rec, filter);
  std::map<std::string, KindTotal> byKind;
  detail::forEachSite(rec, [&](const detail::SiteEntry& e) {
    if (kept && !std::binary_search(kept->begin(), kept->end(), e.image_id)) return;
    const char* kind = detail::siteKindName(e.kind);
    if (filter.kind && *filter.kind != kind) return;
    // Pool blocks are in use inside memory already counted: not allocated twice (unless asked for).
    const kinds::KindInfo* k = kinds::info(e.kind);
    if (!filter.kind && k && k->shape == kinds::Shape::PoolBlock) return;
    auto it = byKind.find(kind);
    if (it == byKind.end()) it = byKind.emplace(kind, KindTotal{kind, 0, 0}).first;
    it->second.allocations += e.alloc_count;
    it->second.bytes += e.alloc_bytes;
    t.allocations += e.alloc_count;
    t.frees += e.free_count;
    t.allocated_bytes += e.alloc_bytes;
    t.freed_bytes += e.freed_bytes;
    t.temporary_count += e.temp_count;
    t.temporary_bytes += e.temp_bytes;
  });
  for (auto& [name, kt] : byKind)
    if (kt.allocations > 0) t.by_kind.push_back(kt);
  std::sort(t.by_kind.begin(), t.by_kind.end(),
            [](const KindTotal& a, const KindTotal& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.kind < b.kind; });
  return t;
}

std::vector<SiteAmount> temporaries(const Recording& rec, const Filter& filter) {
  // Merging across processes needs every row before the cut.
  const bool merge = detail::severalProcesses(rec, filter);
  std::string sql = "SELECT stack_id, kind, image_id, temp_count, temp_bytes FROM sites "
                    "WHERE temp_count > 0" +
                    detail::imageCondition(rec, filter, "image_id") +
                    (filter.kind ? " AND kind = ?" : "") + (merge ? std::string() : orderAndLimit("temp", filter));
  detail::Statement q(rec, sql.c_str());
  if (filter.kind) q.bind(1, *filter.kind);
  std::vector<SiteAmount> out;
  while (q.step()) out.push_back(amount(rec, q.i64(0), q.text(1), q.i64(2), q.i64(3), q.i64(4)));
  if (merge) out = detail::mergeAcrossProcesses(rec, std::move(out));
  sortAndCut(out, filter);
  attachStacks(rec, out);
  return out;
}

}  // namespace memledger::analyzer
