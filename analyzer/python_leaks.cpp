// When is a Python leak a leak: what was live when the program's own code finished, i.e. when its
// interpreter started finalizing (schemas/memledger.sql, python_finalize). CPython frees most of
// what a script kept (module globals, their lists) during finalization, so the blocks still live
// at exit are only what finalization itself failed to free; those are counted apart.
// The recorder writes the live set per site and allocation-time bucket at that instant
// (python_finalize_lists; python_finalize_sites before version 8, analyzer/live_sets.h): both answers are exact, a time filter's to the bucket.
#include <algorithm>
#include <array>
#include <map>
#include <unordered_set>
#include <string>
#include <utility>

#include "analyzer.h"
#include "leaked_blocks.h"
#include "sql.h"
#include "live_sets.h"
#include "schemas/kinds.h"

namespace memledger::analyzer::detail {

namespace {

// A site of one image: its stack id and kind (a kind name of schemas/kinds.h, or "").
uint64_t siteKey(int64_t stack, const char* kind) {
  const kinds::KindInfo* k = kinds::byName(kind);
  return (static_cast<uint64_t>(stack) << 8) | (k ? k->code : 255);
}

// Whether the snapshot keeps its blocks' allocation times (t_ns came within version 6).
bool hasAllocationTimes(const Recording& rec) { return finalizeSitesHaveTimes(rec); }

// The snapshot's rows with their times (PythonSnapshot::rows), read once.
void readTimedRows(const Recording& rec, const PythonSnapshot& py) {
  std::call_once(py.rows_once, [&] {
    py.timed = hasAllocationTimes(rec);
    if (!py.timed) return;
    bool untimed = false;  // a row without its time, or of a kind this analyzer does not know
    forEachFinalizeSite(rec, std::nullopt, [&](const FinalizeSite& s) {
      if (untimed || s.kind == 255 || !s.t_ns) {
        untimed = true;
        return;
      }
      py.rows.push_back({s.image_id, s.stack_id, *s.t_ns, s.kind, s.count, s.bytes});
    });
    if (untimed) {
      py.timed = false;
      py.rows = std::vector<PythonSnapshot::Row>();
      return;
    }
    py.rows.shrink_to_fit();
  });
}
}  // namespace

// What finalization left, per Python image of the filter (`slot`) and kind: each site's blocks
// live at exit.
template <class Slot>
void addLeftByKind(const SiteEntry& e, const Slot& slot, const Filter& filter,
                   std::vector<std::map<std::string, std::pair<int64_t, int64_t>>>& leftByKind) {
  const size_t i = slot(e.image_id);
  if (i == SIZE_MAX) return;
  const char* kind = siteKindName(e.kind);
  if (filter.kind && *filter.kind != kind) return;
  auto& left = leftByKind[i][kind];
  left.first += e.leak_count;
  left.second += e.leak_bytes;
}

// PythonSnapshot::left: a site of which some blocks outlived finalization.
void addLeftSite(const PythonSnapshot& py, const SiteEntry& e) {
  if (e.leak_count > 0 && std::binary_search(py.images.begin(), py.images.end(), e.image_id))
    py.left[e.image_id].insert(siteKey(e.stack_id, siteKindName(e.kind)));
}

void preparePythonRanges(const Recording& rec) {
  const PythonSnapshot& py = rec.pythonSnapshot();
  if (py.images.empty()) return;
  std::call_once(py.left_once, [&] { forEachSite(rec, [&](const SiteEntry& e) { addLeftSite(py, e); }); });
  readTimedRows(rec, py);
}

bool pythonOwned(const Recording& rec, int64_t image, int64_t stack, const std::string& kind) {
  const PythonSnapshot& py = rec.pythonSnapshot();
  auto left = py.left.find(image);
  return left == py.left.end() || !left->second.count(siteKey(stack, kind.c_str()));
}

std::string pythonLeaks(const Recording& rec, const Filter& filter, Leaks& out, LeakRows& rows,
                        std::vector<int64_t>* images) {
  if (!hasFinalizeSites(rec)) return {};
  const bool byTime = filter.t_from_ns || filter.t_to_ns;
  std::string imageCond = imageCondition(rec, filter, "f.image_id");
  Statement finals(rec, ("SELECT f.image_id FROM python_finalize f WHERE 1" + imageCond).c_str());
  std::vector<int64_t> python;
  while (finals.step()) python.push_back(finals.i64(0));
  if (python.empty()) return {};
  if (byTime && !hasAllocationTimes(rec)) {
    // An older file: its snapshot cannot say when its blocks were allocated, so the filtered
    // question gets the usual answer (blocks live at exit, each with its row), and says so.
    out.python_exit_rule_processes = static_cast<int64_t>(python.size());
    return {};
  }
  std::vector<int64_t> sorted = python;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  auto slot = [&](int64_t image) {
    auto it = std::lower_bound(sorted.begin(), sorted.end(), image);
    return it != sorted.end() && *it == image ? size_t(it - sorted.begin()) : SIZE_MAX;
  };
  // The sites of which some blocks outlived finalization (few: leaky.py 24 blocks, torch 46k),
  // once per recording, and without a time filter what finalization left per kind (each site's
  // blocks live at exit): one pass over the sites.
  const PythonSnapshot& py = rec.pythonSnapshot();
  std::vector<std::map<std::string, std::pair<int64_t, int64_t>>> leftByKind(sorted.size());
  bool summed = false;  // leftByKind made by the pass that made the sets
  std::call_once(py.left_once, [&] {
    forEachSite(rec, [&](const SiteEntry& e) {
      addLeftSite(py, e);
      if (!byTime) addLeftByKind(e, slot, filter, leftByKind);
    });
    summed = !byTime;
  });
  if (!byTime && !summed)
    forEachSite(rec, [&](const SiteEntry& e) { addLeftByKind(e, slot, filter, leftByKind); });
  const int64_t from = filter.t_from_ns.value_or(INT64_MIN), to = filter.t_to_ns.value_or(INT64_MAX);
  const int64_t width = rec.info().bucket_ns > 0 ? rec.info().bucket_ns : 1;
  if (byTime) out.python_bucket_ns = width;
  // A bucket counts when it overlaps the range: t_ns <= to and t_ns + width > from.
  std::string kindCond = filter.kind ? " AND kind = ?" : "";
  const PythonSnapshot* snapshot = byTime ? nullptr : &py;  // summed over buckets once
  if (byTime) readTimedRows(rec, py);
  const int64_t after = from > INT64_MIN + width ? from - width : INT64_MIN;
  std::string skip;
  for (int64_t image : python) {
    skip += (skip.empty() ? "" : ",") + std::to_string(image);
    ++out.python_processes;
    const size_t at = slot(image);
    // The blocks live at finalization per site (summed over buckets), in (stack, kind) order.
    // Kinds by index into rows.kinds (a code's name is looked up once per code, not per row).
    struct Live {
      int64_t stack;
      uint16_t kind;
      int64_t count, bytes;
    };
    std::vector<Live> live;
    std::array<int, 256> byCode;  // kind code -> index into rows.kinds; -1 not yet, -2 filtered out
    byCode.fill(-1);
    auto kindOf = [&](uint64_t code) {
      int& k = byCode[std::min<uint64_t>(code, 255)];
      if (k == -1) {
        const char* name = siteKindName(code);
        k = filter.kind && *filter.kind != name ? -2 : rows.kind(name);
      }
      return k;
    };
    if (snapshot) {
      for (const PythonSnapshot::Site& site : snapshot->sites)
        if (site.key.image == image)
          if (const int k = kindOf(site.key.kind); k >= 0) live.push_back({site.key.stack, uint16_t(k), site.count, site.bytes});
    } else if (py.timed) {  // the rows in memory
      for (const PythonSnapshot::Row& row : py.rows)
        if (row.image == image && row.t <= to && row.t > after)
          if (const int k = kindOf(row.kind); k >= 0) live.push_back({row.stack, uint16_t(k), row.count, row.bytes});
    } else {
      forEachFinalizeSite(rec, image, [&](const FinalizeSite& s) {
        if (s.t_ns && *s.t_ns <= to && *s.t_ns > after && (!filter.kind || *filter.kind == s.kind_name))
          live.push_back({s.stack_id, rows.kind(s.kind_name), s.count, s.bytes});
      });
    }
    std::sort(live.begin(), live.end(),
              [](const Live& a, const Live& b) { return a.stack != b.stack ? a.stack < b.stack : a.kind < b.kind; });
    for (size_t k = 0; k < live.size();) {
      LeakRow s{live[k].stack, image, 0, 0, live[k].kind, true};
      for (; k < live.size() && live[k].stack == s.stack && live[k].kind == s.kind; ++k) {
        s.count += live[k].count;
        s.bytes += live[k].bytes;
      }
      rows.rows.push_back(s);
    }
    // What finalization left: the blocks live at exit (with a time filter, those allocated in
    // the range: each has its row), per kind: pool blocks inside memory counted elsewhere
    // (pyobject) are not added (sites.cpp).
    auto addLeft = [&](const std::string& kind, int64_t count, int64_t bytes) {
      if (insideCountedMemory(kind)) return;
      out.finalization_left_count += count;
      out.finalization_left_bytes += bytes;
    };
    if (!byTime) {
      for (const auto& [kind, left] : leftByKind[at]) addLeft(kind, left.first, left.second);
      continue;
    }
    if (const LeakedBlocks& blocks = rec.leakedBlocks(); blocks.available()) {  // in memory: range after range
      std::vector<std::pair<int64_t, int64_t>> left(blocks.kinds().size());
      for (const LeakedBlocks::Block& b : blocks.range(filter.t_from_ns, filter.t_to_ns))
        if (b.image == image) {
          ++left[b.kind].first;
          left[b.kind].second += b.size;
        }
      for (size_t k = 0; k < left.size(); ++k)
        if (left[k].first && (!filter.kind || *filter.kind == blocks.kinds()[k]))
          addLeft(blocks.kinds()[k], left[k].first, left[k].second);
      continue;
    }
    Statement l(rec, ("SELECT kind, count(*), coalesce(sum(size), 0) FROM allocations WHERE image_id = ? "
                      "AND t_free IS NULL AND t_alloc >= ? AND t_alloc <= ?" + kindCond + " GROUP BY kind").c_str());
    int arg = 1;
    l.bind(arg++, image);
    l.bind(arg++, from);
    l.bind(arg++, to);
    if (filter.kind) l.bind(arg++, *filter.kind);
    while (l.step()) addLeft(l.text(0), l.i64(1), l.i64(2));
  }
  if (images) *images = std::move(sorted);
  return " AND image_id NOT IN (" + skip + ")";
}

int64_t pythonImageCount(const Recording& rec) {
  return static_cast<int64_t>(rec.pythonSnapshot().images.size());
}

std::unique_ptr<PythonSnapshot> loadPythonSnapshot(const Recording& rec) {
  auto out = std::make_unique<PythonSnapshot>();
  if (!hasFinalizeSites(rec)) return out;
  {
    Statement q(rec, "SELECT image_id FROM python_finalize ORDER BY image_id");
    while (q.step()) out->images.push_back(q.i64(0));
  }
  if (out->images.empty()) return out;
  // torch_mlp's import: 213k entries, 210k sites.
  // The entries come by image, stack id, kind and bucket: a site's buckets are consecutive (sorted
  // and merged again below all the same, whatever the order).
  std::vector<PythonSnapshot::Site>& sites = out->sites;
  bool sorted = true;
  forEachFinalizeSite(rec, std::nullopt, [&](const FinalizeSite& s) {
    const PythonSnapshot::Key key{s.image_id, s.stack_id, s.kind};
    if (!sites.empty() && sites.back().key == key) {
      sites.back().count += s.count;
      sites.back().bytes += s.bytes;
      return;
    }
    if (!sites.empty() && !(sites.back().key < key)) sorted = false;
    sites.push_back({key, s.count, s.bytes});
  });
  if (!sorted) {
    std::stable_sort(sites.begin(), sites.end(),
                     [](const PythonSnapshot::Site& a, const PythonSnapshot::Site& b) { return a.key < b.key; });
    size_t n = 0;
    for (size_t i = 0; i < sites.size(); ++i) {
      if (n > 0 && sites[n - 1].key == sites[i].key) {
        sites[n - 1].count += sites[i].count;
        sites[n - 1].bytes += sites[i].bytes;
      } else {
        sites[n++] = sites[i];
      }
    }
    sites.resize(n);
  }
  sites.shrink_to_fit();
  return out;
}

void applyPythonLeakRule(const PythonSnapshot& py, int64_t image, int64_t stack, uint64_t kind, int64_t& leak_count,
                         int64_t& leak_bytes) {
  if (!std::binary_search(py.images.begin(), py.images.end(), image)) return;
  const PythonSnapshot::Site* it = py.find({image, stack, kinds::info(kind) ? kind : 255});
  leak_count = it ? it->count : 0;
  leak_bytes = it ? it->bytes : 0;
}

void applyPythonLeakRule(const Recording& rec, std::vector<Site>& rows) {
  if (rows.empty()) return;
  const PythonSnapshot& py = rec.pythonSnapshot();
  if (py.images.empty()) return;
  for (Site& s : rows)
    applyPythonLeakRule(py, s.image_id, s.stack_id, PythonSnapshot::kindCode(s.kind), s.leak_count, s.leak_bytes);
}

}  // namespace memledger::analyzer::detail
