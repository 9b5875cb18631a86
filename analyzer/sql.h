// Internal to the analyzer: a small RAII wrapper over prepared statements. Every query failure
// on an opened recording becomes RecordingError(Corrupt) – a damaged file never crashes a reader.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analyzer/analyzer.h"
#include "schemas/kinds.h"
#include "schemas/packed.h"
#include "schemas/site_counters.h"

namespace memledger::analyzer::detail {

// stacks.ips of schema 1-2 (schemas/memledger.sql): little-endian uint32 ip ids, innermost first.
// A trailing partial id is damage and is ignored.
inline std::vector<uint32_t> decodeIpIds(const void* blob, int bytes) {
  std::vector<uint32_t> ids;
  const auto* p = static_cast<const unsigned char*>(blob);
  for (int i = 0; p && i + 4 <= bytes; i += 4)
    ids.push_back(uint32_t(p[i]) | (uint32_t(p[i + 1]) << 8) | (uint32_t(p[i + 2]) << 16) |
                  (uint32_t(p[i + 3]) << 24));
  return ids;
}

// Version 4 files: makes `sites` (the relation versions 1-3 stored as a table) an eponymous
// virtual table over the packed `site_totals` on this connection (analyzer/site_totals.cpp).
// The version says how entries are packed (5 carries each site's account).
bool registerSitesTable(sqlite3* db, int schemaVersion);

// One entry of site_buckets (schemas/memledger.sql): four unsigned LEB128 varints, seven in
// version 7 (frees, freed bytes and temporaries; 0 in older files).
struct SiteActivity {
  int64_t stack_id = 0;
  uint64_t kind = 0;  // a kind code of schemas/kinds.h
  int64_t allocs = 0, alloc_bytes = 0;
  int64_t frees = 0, freed_bytes = 0, temps = 0;
};
// Whether a file's site_buckets entries carry frees per bucket (version 7).
inline bool hasBucketFrees(int schema_version) { return schema_version >= 7; }
// The heap's live set at its peak, without stacks (analyzer/sites.cpp): the recording's
// simultaneous one (version 5, peak_sites) or `image`'s own; only heap kinds.
std::vector<SiteAmount> heapPeakSites(const Recording& rec, const Filter& filter, bool simultaneous, int64_t image);
// A space's simultaneous peak over the processes alive at once (version 5 `spaces`, image 0),
// nullopt in older files; hasSimultaneousPeaks: whether the file has the heap's.
std::optional<SpacePeak> simultaneousPeak(const Recording& rec, const std::string& name);
bool hasSimultaneousPeaks(const Recording& rec);
// The SQL list of the kinds that count in the host heap as blocks: "('malloc', 'new')".
inline std::string heapKindsSql() {
  std::string out;
  for (const kinds::KindInfo& k : kinds::kKinds)
    if (k.space == kinds::Space::HostHeap && k.shape == kinds::Shape::Block)
      out += (out.empty() ? "('" : ", '") + std::string(k.name) + "'";
  return out + ")";
}
// Whether blocks of the kind named live inside memory leak totals already count (schemas/kinds.h:
// pymalloc's objects, inside its arenas).
inline bool insideCountedMemory(const std::string& kind) {
  const kinds::KindInfo* k = kinds::byName(kind);
  return k && kinds::insideCountedMemory(k->kind);
}
// A kind code's name (schemas/kinds.h); "" for a code this analyzer does not know.
inline const char* siteKindName(uint64_t code) {
  const kinds::KindInfo* k = kinds::info(code);
  return k ? k->name : "";
}
// One site's totals as stored (a version 4+ `site_totals` entry, or an older file's `sites` row),
// decoded without SQLite: the passes over every site (leaks, totals, the activity's sites) read
// torch_mlp's 508k sites in a few tens of ms this way, against hundreds through the virtual table.
struct SiteEntry {
  int64_t image_id = 0, stack_id = 0;
  uint64_t kind = 0;     // a kind code of schemas/kinds.h (older files: their kind's code, 255 unknown)
  uint64_t account = 0;  // version 4: 1 for mmap, else 0; versions 1-3 likewise
#define MEMLEDGER_SITE_ENTRY_FIELD(name) int64_t name = 0;
  MEMLEDGER_SITE_COUNTERS(MEMLEDGER_SITE_ENTRY_FIELD)
#undef MEMLEDGER_SITE_ENTRY_FIELD
};
// Calls f for every site of the recording, in the file's order (that of `SELECT ... FROM sites`
// without ORDER BY); cancellable between packed rows. Throws RecordingError on SQLite errors.
void forEachSite(const Recording& rec, const std::function<void(const SiteEntry&)>& f);

// Calls f(SiteActivity) for each entry; damage (a cut varint) ends the list. schema_version 3
// entries carry kind * 2 + absolute: absolute 0 means the first varint is the gap from the
// previous entry's stack id; versions 1-2 have the kind and the stack id as they are; version 7
// entries add frees, freed bytes and temporaries.
template <class F>
void forEachSiteActivity(const void* blob, int bytes, int schema_version, F&& f) {
  const auto* p = static_cast<const unsigned char*>(blob);
  const unsigned char* end = p ? p + (bytes > 0 ? bytes : 0) : p;
  auto varint = [&](uint64_t& v) { return packed::readVarint(p, end, &v); };
  const bool frees = hasBucketFrees(schema_version);
  uint64_t prev = 0;
  while (p && p < end) {
    uint64_t stack, kind, allocs, bytesAllocated, freed[3] = {0, 0, 0};
    if (!varint(stack) || !varint(kind) || !varint(allocs) || !varint(bytesAllocated)) return;
    if (frees && (!varint(freed[0]) || !varint(freed[1]) || !varint(freed[2]))) return;
    if (schema_version >= 3) {
      if (!(kind & 1)) stack += prev;  // unsigned: a damaged gap wraps, it never traps
      kind >>= 1;
    }
    prev = stack;
    f(SiteActivity{static_cast<int64_t>(stack), kind, static_cast<int64_t>(allocs),
                   static_cast<int64_t>(bytesAllocated), static_cast<int64_t>(freed[0]),
                   static_cast<int64_t>(freed[1]), static_cast<int64_t>(freed[2])});
  }
}

// Calls f(t_ns, entries, entryBytes) for each bucket of a site_buckets row (schema 3: per bucket
// a zigzag varint t_ns delta from the row's previous bucket, the entries' length, the entries);
// damage ends the row.
template <class F>
void forEachSiteBucket(const void* blob, int bytes, F&& f) {
  const auto* p = static_cast<const unsigned char*>(blob);
  const unsigned char* end = p ? p + (bytes > 0 ? bytes : 0) : p;
  auto varint = [&](uint64_t& v) { return packed::readVarint(p, end, &v); };
  uint64_t t = 0;
  while (p && p < end) {
    uint64_t delta, length;
    if (!varint(delta) || !varint(length) || length > uint64_t(end - p)) return;
    t += static_cast<uint64_t>(packed::unzigzag(delta));  // unsigned, so damage wraps
    f(static_cast<int64_t>(t), static_cast<const void*>(p), static_cast<int>(length));
    p += length;
  }
}

[[noreturn]] void throwCorrupt(const std::string& path);
// The RecordingError (or Cancelled) for a failed SQLite call on the recording `path`.
[[noreturn]] void throwFor(int rc, const std::string& path);

// One bucket of one image's memory curve (the `timeline` table of schema 1-2, an entry of
// timeline_buckets in schema 3).
// An account's values in a bucket (version 5: accounts other than heap and mmap that changed).
struct AccountValue {
  int64_t account, live, max, min;
};
struct TimelineRow {
  int64_t image_id, t_ns, heap_bytes, heap_max, heap_min, mmap_bytes;
  std::optional<int64_t> rss_bytes, anon_bytes;
  int64_t allocs, frees, alloc_bytes;
  std::vector<AccountValue> accounts = {};
};
// Every row of the images that pass imageCond (" AND image_id ...", or ""), ordered by t_ns,
// image_id; one per bucket and image. Throws RecordingError on SQLite errors.
std::vector<TimelineRow> timelineRows(const Recording& rec, const std::string& imageCond);

// The whole ip id list of a stack, innermost first: its node's own ip ids, then its parent's, and
// so on (schema 3 packs the nodes into stack_nodes rows, schema 2 has one stacks row per node,
// version 1 rows are whole stacks). Nodes read once are kept (a stack_nodes row is decoded
// whole), so stacks that share outer frames read each shared node once. A damaged chain (a
// cycle, a missing parent, a cut stack_nodes row) ends the stack where it breaks. Throws
// RecordingError on SQLite errors. Safe to use from several threads.
class StackIps {
 public:
  StackIps(sqlite3* db, const RecordingInfo& info);
  ~StackIps();
  StackIps(const StackIps&) = delete;
  StackIps& operator=(const StackIps&) = delete;
  std::vector<uint32_t> of(int64_t stack_id);

 private:
  struct Node {
    int64_t parent;
    uint64_t off : 40, count : 24;  // its ips in arena_ (a node has at most 2^16 of them)
  };
  // A node of dense_: 12 bytes where Node takes 16 (a PyTorch run reads 1.7 million of them: 20
  // MB, not 26); a node whose parent or ips do not fit goes to nodes_.
  struct DenseNode {
    uint32_t parent, off, count;  // off kUnread: not read
  };
  void readPacked(int64_t stack_id);  // schema 3: decodes the stack_nodes row holding stack_id
  // Appends the ip ids of stack_id to `out`; reads missing nodes when `read` (the caller holds
  // mutex_ exclusively), else returns false at the first one (shared is enough).
  bool walk(int64_t stack_id, std::vector<uint32_t>& out, bool read);
  std::shared_mutex mutex_;  // nodes_, arena_, stmt_
  bool packed_ = false;
  std::string path_;
  sqlite3_stmt* stmt_ = nullptr;
  // The nodes read so far: by id in dense_ (stack ids are dense from 1; a hash lookup per node
  // was the trees' largest cost), ids past kDenseIds in nodes_.
  static constexpr int64_t kDenseIds = int64_t{1} << 22;  // 64 MiB of nodes at most
  static constexpr uint32_t kUnread = UINT32_MAX;  // dense_[id].off of a node not read
  bool find(int64_t id, Node& out) const;  // false: not read
  void put(int64_t id, Node n);  // keeps a node already read
  std::vector<DenseNode> dense_;
  std::unordered_map<int64_t, Node> nodes_;
  std::vector<uint32_t> arena_;
};

class Statement {
 public:
  Statement(const Recording& rec, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, const std::string& value);
  Statement& bindNull(int index);
  // Advances to the next row; false when done. Throws RecordingError on failure.
  bool step();
  void reset();

  int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double f64(int col) const { return sqlite3_column_double(stmt_, col); }
  bool isNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::optional<int64_t> optI64(int col) const {
    if (isNull(col)) return std::nullopt;
    return i64(col);
  }
  std::string text(int col) const;
  std::optional<std::string> optText(int col) const {
    if (isNull(col)) return std::nullopt;
    return text(col);
  }
  const void* blob(int col) const { return sqlite3_column_blob(stmt_, col); }
  int bytes(int col) const { return sqlite3_column_bytes(stmt_, col); }
  sqlite3_stmt* raw() const { return stmt_; }

 private:
  const Recording& rec_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Image ids whose pid matches the filter (all images when no pid filter); used as an SQL
// condition "image_id IN (...)": the list is built from integers only, never from user text.
std::string imageCondition(const Recording& rec, const Filter& filter, const char* column);
// The same as a list (ascending): the images of the filter's pid; nullopt without a pid filter.
std::optional<std::vector<int64_t>> filterImages(const Recording& rec, const Filter& filter);

// A leak site while leaks() gathers them, without strings: a PyTorch range has 10^5 of them and
// lists 1000, so only the kept ones become SiteAmounts (with their kind's name, stack, origin).
struct LeakRow {
  int64_t stack = 0, image = 0, count = 0, bytes = 0;
  uint16_t kind = 0;    // index into LeakRows::kinds
  bool python = false;  // counted by the Python rule (pythonLeaks)
};
struct LeakRows {
  std::vector<LeakRow> rows;
  std::vector<std::string> kinds;  // the rows' kind names, each once
  uint16_t kind(std::string_view name) {
    for (size_t k = 0; k < kinds.size(); ++k)
      if (kinds[k] == name) return uint16_t(k);
    kinds.emplace_back(name);
    return uint16_t(kinds.size() - 1);
  }
};

// Python images (schema 6, python_leaks.cpp): adds to `rows` their leaks as of their
// interpreter's finalization and sets out.python_*; returns an SQL condition on image_id that
// leaves those images out (empty: there are none).
// `images` (optional) gets those images, ascending.
std::string pythonLeaks(const Recording& rec, const Filter& filter, Leaks& out, LeakRows& rows,
                        std::vector<int64_t>* images = nullptr);
// Puts the first `top` rows (all without one) in front in sortAndCut()'s order (bytes, count
// descending, stack id, kind name, then image) and returns how many that is (leak_kinds.cpp).
size_t orderLeakRows(LeakRows& rows, std::optional<size_t> top);
// Whether Python objects kept a site's leaked blocks (SiteAmount::python_owned): a site of a row
// pythonLeaks() added of which no block outlived finalization.
bool pythonOwned(const Recording& rec, int64_t image, int64_t stack, const std::string& kind);
// Site rows of Python images get the same rule: leak_count/leak_bytes become what was live when
// their interpreter started finalizing (every front end, export and check agrees with `report`).
void applyPythonLeakRule(const Recording& rec, std::vector<Site>& rows);
struct PythonSnapshot;
// The same rule on one site's leak amounts (a kind code), from the recording's pythonSnapshot().
void applyPythonLeakRule(const PythonSnapshot& py, int64_t image, int64_t stack, uint64_t kind, int64_t& leak_count,
                         int64_t& leak_bytes);
// What that rule reads, once per recording (Recording::pythonSnapshot): the Python images and
// their sites' blocks live at finalization, summed over allocation buckets.
struct PythonSnapshot {
  struct Key {
    int64_t image, stack;
    uint64_t kind;  // code (255: a kind this analyzer does not know)
    // By image, stack, kind: the order of `sites` below.
    auto operator<=>(const Key&) const = default;
    bool operator==(const Key&) const = default;
  };
  static uint64_t kindCode(std::string_view name) {
    const kinds::KindInfo* k = kinds::byName(name);
    return k ? k->code : 255;
  }
  std::vector<int64_t> images;  // ascending
  // Each site's blocks live at finalization, summed over buckets, sorted by (image, stack, kind):
  // 40 bytes a site where a hash map's node took 56 and its bucket 8 (torch_mlp: 210k sites).
  struct Site {
    Key key;
    int64_t count, bytes;
  };
  std::vector<Site> sites;
  // The site of a key, or null.
  const Site* find(const Key& k) const {
    auto it = std::lower_bound(sites.begin(), sites.end(), k, [](const Site& s, const Key& x) { return s.key < x; });
    return it != sites.end() && it->key == k ? &*it : nullptr;
  }
  // Every row with its bucket's start, for a time filter (a range of the GUI), read when first
  // asked for (python_leaks.cpp): `timed` when the file has t_ns and every row's kind is known
  // (else the filter reads the table).
  struct Row {
    int64_t image, stack, t;
    uint64_t kind;  // code
    int64_t count, bytes;
  };
  mutable std::once_flag rows_once;
  mutable std::vector<Row> rows;
  mutable bool timed = false;
  // Per Python image, its sites (stack id << 8 | kind code) of which some blocks outlived
  // finalization (few: torch_mlp 46k); made when first asked for (python_leaks.cpp).
  mutable std::once_flag left_once;
  mutable std::unordered_map<int64_t, std::unordered_set<uint64_t>> left;
};
std::unique_ptr<PythonSnapshot> loadPythonSnapshot(const Recording& rec);
// What a time range of the Python leak rule reads (PythonSnapshot's rows and left), read now.
void preparePythonRanges(const Recording& rec);
// How many images that rule applies to (they reached finalization).
int64_t pythonImageCount(const Recording& rec);

// Whether a site kind passes the filter.
inline bool kindMatches(const Filter& filter, const std::string& kind) {
  return !filter.kind || *filter.kind == kind;
}

// The image the peak questions are about: the meta peak image, or (with a pid filter) the image
// of that pid with the largest heap peak. nullopt when the recording has no processes.
std::optional<int64_t> peakImage(const Recording& rec, const Filter& filter);

// Rows of `sites` like analyzer::sites(), without decoding their stacks: the rules engine looks
// at every site but needs the frames of the few that match.
// `where`, when given, is an extra SQL condition written by the analyzer itself (never user text).
std::vector<Site> siteRows(const Recording& rec, const Filter& filter, const char* where = nullptr);

// Innermost frame with a known function (the one a message should name), or nullptr.
const Frame* namedFrame(const Stack& stack);

}  // namespace memledger::analyzer::detail
