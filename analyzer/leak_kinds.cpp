// Leak kinds (docs/leak-kinds.md): what the recorder's exit scan found per leaked heap block
// (leak_scans, leak_kinds; schema version 6), grouped per site and summed for the report.
#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "analyzer/analyzer.h"
#include "analyzer/leaked_blocks.h"
#include "analyzer/site_merge.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

const char* leakKindName(int index) {
  switch (index) {
    case kDefinite: return "definite";
    case kIndirect: return "indirect";
    case kPossible: return "possible";
    case kReachable: return "reachable";
    default: return "not_classified";
  }
}

bool parseLeakKinds(const std::string& list, std::array<bool, kLeakKindSlots>* out, std::string* error) {
  out->fill(false);
  std::stringstream in(list);
  std::string item;
  bool any = false;
  while (std::getline(in, item, ',')) {
    if (item == "all") {
      // Every kind, not classified too: the default counts those, and a Python process's leaks
      // (counted at finalization, freed before the exit scan) are nothing else.
      out->fill(true);
      any = true;
      continue;
    }
    bool found = false;
    for (int k = 0; k < kLeakKindSlots; ++k)
      if (item == leakKindName(k)) (*out)[k] = found = true;
    if (!found) {
      *error = "unknown leak kind '" + item + "' (definite, indirect, possible, reachable, not_classified, all)";
      return false;
    }
    any = true;
  }
  if (!any) {
    *error = "no leak kind given";
    return false;
  }
  return true;
}

namespace {
using detail::Statement;
bool hasTable(const Recording& rec, const char* name) {
  Statement q(rec, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  q.bind(1, std::string(name));
  return q.step() && q.i64(0) > 0;
}
bool heapKind(const std::string& kind) { return kind == "malloc" || kind == "new"; }

using SiteKey = std::tuple<int64_t, std::string, int64_t>;
std::map<SiteKey, LeakKindAmounts> classified(const Recording& rec, const Filter& filter) {
  std::map<SiteKey, LeakKindAmounts> bySite;
  if (filter.t_from_ns || filter.t_to_ns) {
    // A time range (range after range in the GUI): from the leaked blocks in memory.
    const detail::LeakedBlocks& blocks = rec.leakedBlocks();
    if (blocks.available()) {
      for (const detail::LeakedBlocks::Block& b : blocks.range(filter.t_from_ns, filter.t_to_ns)) {
        if (b.leak_kind < 0) continue;
        KindAmount& a = bySite[{b.stack, blocks.kinds()[b.kind], b.image}][b.leak_kind];
        ++a.count;
        a.bytes += b.size;
      }
      return bySite;
    }
  }
  if (!hasTable(rec, "leak_kinds")) return bySite;
  Statement q(rec,
              "SELECT a.stack_id, a.kind, a.image_id, k.kind, count(*), sum(a.size) FROM allocations a "
              "JOIN leak_kinds k ON k.allocation_id = a.id WHERE a.t_free IS NULL AND a.t_alloc >= ? "
              "AND a.t_alloc <= ? GROUP BY a.stack_id, a.kind, a.image_id, k.kind");
  q.bind(1, filter.t_from_ns.value_or(INT64_MIN));
  q.bind(2, filter.t_to_ns.value_or(INT64_MAX));
  while (q.step()) {
    int64_t k = q.i64(3);
    if (k < 0 || k > kReachable) continue;
    KindAmount& a = bySite[{q.i64(0), q.text(1), q.i64(2)}][k];
    a.count += q.i64(4);
    a.bytes += q.i64(5);
  }
  return bySite;
}

// The rest of a site's leaks (count, bytes) is not classified.
bool scanned(const Recording& rec) {
  if (!hasTable(rec, "leak_scans")) return false;
  Statement q(rec, "SELECT count(*) FROM leak_scans WHERE status = 'scanned'");
  return q.step() && q.i64(0) > 0;
}

void completeWithUnclassified(LeakKindAmounts& a, int64_t count, int64_t bytes) {
  for (int k = 0; k <= kReachable; ++k) {
    count -= a[k].count;
    bytes -= a[k].bytes;
  }
  a[kNotClassified] = {count > 0 ? count : 0, bytes > 0 ? bytes : 0};
}
}  // namespace

std::map<SiteKey, LeakKindAmounts> leakKindsBySite(const Recording& rec) {
  std::map<SiteKey, LeakKindAmounts> bySite = classified(rec, Filter{});
  std::map<SiteKey, LeakKindAmounts> out;
  for (const Site& s : detail::siteRows(rec, Filter{})) {  // amounts only: no stacks read
    if (s.leak_count <= 0 || !heapKind(s.kind)) continue;
    SiteKey key{s.stack_id, s.kind, s.image_id};
    LeakKindAmounts a{};
    if (auto it = bySite.find(key); it != bySite.end()) a = it->second;
    completeWithUnclassified(a, s.leak_count, s.leak_bytes);
    out[key] = a;
  }
  return out;
}

namespace detail {

void attachLeakKinds(const Recording& rec, const Filter& filter, Leaks& leaks) {
  if (hasTable(rec, "leak_scans")) leaks.scanned = scanned(rec);
  std::map<SiteKey, LeakKindAmounts> bySite = classified(rec, filter);
  leaks.kinds = {};
  for (SiteAmount& s : leaks.sites) {
    s.leak_kinds = {};
    if (!heapKind(s.kind)) continue;
    auto it = bySite.find({s.stack_id, s.kind, s.image_id});
    if (it != bySite.end()) s.leak_kinds = it->second;
    completeWithUnclassified(s.leak_kinds, s.count, s.bytes);
    for (int k = 0; k < kLeakKindSlots; ++k) {
      leaks.kinds[k].count += s.leak_kinds[k].count;
      leaks.kinds[k].bytes += s.leak_kinds[k].bytes;
    }
  }
}

size_t orderLeakRows(LeakRows& rows, std::optional<size_t> top) {
  std::vector<uint16_t> rank(rows.kinds.size());  // a kind index's place in name order
  for (size_t k = 0; k < rank.size(); ++k)
    for (size_t j = 0; j < rank.size(); ++j) rank[k] += rows.kinds[j] < rows.kinds[k];
  auto order = [&](const LeakRow& a, const LeakRow& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.count != b.count) return a.count > b.count;
    if (a.stack != b.stack) return a.stack < b.stack;
    if (a.kind != b.kind) return rank[a.kind] < rank[b.kind];
    return a.image < b.image;
  };
  const size_t keep = top ? std::min(*top, rows.rows.size()) : rows.rows.size();
  std::partial_sort(rows.rows.begin(), rows.rows.begin() + std::ptrdiff_t(keep), rows.rows.end(), order);
  return keep;
}

void attachLeakKinds(const Recording& rec, const Filter& filter, Leaks& leaks, const LeakRows& all) {
  leaks.scanned = scanned(rec);
  const std::map<SiteKey, LeakKindAmounts> bySite = classified(rec, filter);
  leaks.kinds = {};
  for (SiteAmount& s : leaks.sites) {
    s.leak_kinds = {};
    if (!heapKind(s.kind)) continue;
    if (auto it = bySite.find({s.stack_id, s.kind, s.image_id}); it != bySite.end()) s.leak_kinds = it->second;
    completeWithUnclassified(s.leak_kinds, s.count, s.bytes);
  }
  // The classified sites by (stack, image, kind index of `all`): one hash lookup a row.
  struct Key {
    int64_t stack, image;
    uint16_t kind;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return size_t(k.stack) * 1000003u ^ size_t(k.image) * 31u ^ k.kind; }
  };
  std::unordered_map<Key, const LeakKindAmounts*, KeyHash> byRow;
  for (const auto& [key, amounts] : bySite)
    for (size_t k = 0; k < all.kinds.size(); ++k)
      if (all.kinds[k] == std::get<1>(key)) byRow[{std::get<0>(key), std::get<2>(key), uint16_t(k)}] = &amounts;
  std::vector<char> heap(all.kinds.size());
  for (size_t k = 0; k < heap.size(); ++k) heap[k] = heapKind(all.kinds[k]);
  for (const LeakRow& r : all.rows) {
    if (!heap[r.kind]) continue;
    LeakKindAmounts a{};
    if (!byRow.empty())
      if (auto it = byRow.find({r.stack, r.image, r.kind}); it != byRow.end()) a = *it->second;
    completeWithUnclassified(a, r.count, r.bytes);
    for (int k = 0; k < kLeakKindSlots; ++k) {
      leaks.kinds[k].count += a[k].count;
      leaks.kinds[k].bytes += a[k].bytes;
    }
  }
}

}  // namespace detail
}  // namespace memledger::analyzer
