// Hand-made recordings for the analyzer tests: the real schema (schemas/memledger.sql) executed
// into a temporary file, then rows with exact numbers, so every expected value is known.
#pragma once

#include <gtest/gtest.h>

#include "schemas/kinds.h"
#include "schemas/site_counters.h"
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace memledger::testing {

// Whether one of `lines` ends with `suffix`: a collapsed stack ("...;main;f 42") whatever frames
// the C runtime put above main.
inline bool hasLine(const std::vector<std::string>& lines, const std::string& suffix) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.size() >= suffix.size() && l.compare(l.size() - suffix.size(), suffix.size(), suffix) == 0;
  });
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::filesystem::path tempDir() {
  return std::filesystem::temp_directory_path() / ("memledger-analyzer-test-" + std::to_string(getpid()));
}

// Removes this test process's recordings when it exits (one per process, whichever TU owns it).
inline struct TempDirCleanup {
  ~TempDirCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(tempDir(), ec);
  }
} tempDirCleanup;

inline std::string tempPath(const std::string& name) {
  auto dir = tempDir();
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

struct FrameSpec {
  const char* function = nullptr;  // nullptr: unknown
  const char* file = nullptr;
  int line = 0;
};

struct SiteSpec {
  int64_t stack = 0;
  const char* kind = "malloc";
  int64_t image = 1;
#define MEMLEDGER_SPEC_FIELD(name) int64_t name = 0;
  MEMLEDGER_SITE_COUNTERS(MEMLEDGER_SPEC_FIELD)  // schemas/site_counters.h
#undef MEMLEDGER_SPEC_FIELD
};

struct ProcessSpec {
  int64_t id = 1;
  int64_t pid = 1000;
  int64_t ppid = 1;
  const char* command = "./prog";
  int64_t start_ns = 0;
  int64_t end_ns = 1000000000;
  const char* ended_by = "exit";
  int64_t exit_code = 0;
  int64_t peak_rss = 0;
  int64_t peak_heap_bytes = 0, peak_heap_ns = 0, peak_mmap_bytes = 0, peak_mmap_ns = 0;
};

struct TimelineSpec {
  int64_t image = 1;
  int64_t t_ns = 0;
  int64_t heap_bytes = 0, heap_max = -1, heap_min = -1;  // -1: same as heap_bytes
  int64_t mmap_bytes = 0;
  int64_t rss_bytes = -1, anon_bytes = -1;  // -1: NULL
  int64_t allocs = 0, frees = 0, alloc_bytes = 0;
};

class RecordingBuilder {
 public:
  explicit RecordingBuilder(const std::string& name, bool complete = true) : path_(tempPath(name)) {
    std::filesystem::remove(path_);
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db_), SQLITE_OK);
    exec("PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY;");
    exec(readFile(std::string(MEMLEDGER_SOURCE_DIR) + "/schemas/memledger.sql"));
    exec("BEGIN");
    meta("schema_version", "4");
    meta("allocation_rows", "all");
    meta("memledger_version", "0.1.0");
    meta("bucket_ns", "1000000");
    meta("duration_ns", "1000000000");
    if (complete) meta("complete", "1");
  }
  ~RecordingBuilder() {
    if (db_) sqlite3_close(db_);
  }

  void exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << "\n  in: " << sql.substr(0, 200);
    sqlite3_free(err);
  }
  static std::string q(const char* s) {
    if (!s) return "NULL";
    char* m = sqlite3_mprintf("%Q", s);
    std::string out(m);
    sqlite3_free(m);
    return out;
  }

  void meta(const std::string& key, const std::string& value) {
    exec("INSERT OR REPLACE INTO meta VALUES (" + q(key.c_str()) + "," + q(value.c_str()) + ")");
  }

  void process(const ProcessSpec& p) {
    std::ostringstream s;
    s << "INSERT INTO processes (id, pid, ppid, command, start_ns, end_ns, ended_by, exit_code, peak_rss, "
         "peak_heap_bytes, peak_heap_ns, peak_mmap_bytes, peak_mmap_ns) VALUES ("
      << p.id << "," << p.pid << "," << p.ppid << "," << q(p.command) << "," << p.start_ns << ","
      << p.end_ns << "," << q(p.ended_by) << "," << p.exit_code << "," << p.peak_rss << ","
      << p.peak_heap_bytes << "," << p.peak_heap_ns << "," << p.peak_mmap_bytes << "," << p.peak_mmap_ns << ")";
    exec(s.str());
  }

  // A stack of one ip per frame (plus inline frames listed in `inlined` for the first ip).
  int64_t stack(int64_t image, const std::vector<FrameSpec>& frames, const char* module = "/usr/bin/prog",
                const std::vector<FrameSpec>& inlined = {}) {
    int64_t moduleId = ++modules_;
    exec("INSERT INTO modules (id, image_id, path, bias, start, end, load_ns) VALUES (" +
         std::to_string(moduleId) + "," + std::to_string(image) + "," + q(module) + ",0,0,0,0)");
    std::vector<int64_t> ipIds;
    bool first = true;
    for (const FrameSpec& f : frames) {
      int64_t ip = ++ips_;
      exec("INSERT INTO ips VALUES (" + std::to_string(ip) + "," + std::to_string(image) + "," +
           std::to_string(0x1000 + ip) + "," + std::to_string(moduleId) + ")");
      int depth = 0;
      if (first)
        for (const FrameSpec& in : inlined) addFrame(ip, depth++, in);
      addFrame(ip, depth, f);
      first = false;
      ipIds.push_back(ip);
    }
    return node(image, ipIds);
  }
  // A stack whose ip has no frames rows at all (not symbolized).
  int64_t rawStack(int64_t image) {
    int64_t ip = ++ips_;
    exec("INSERT INTO ips VALUES (" + std::to_string(ip) + "," + std::to_string(image) + ",4096,NULL)");
    return node(image, {ip});
  }

  // A stack tree node with these ip ids (innermost first) and parent (0: none) as its own
  // stack_nodes row (schema 3: varints parent_gap, n, ip ids). Returns its stack id.
  int64_t node(int64_t image, const std::vector<int64_t>& ipIds, int64_t parent = 0) {
    int64_t id = ++stacks_;
    std::string hex;
    varintHex(hex, parent ? static_cast<uint64_t>(id - parent) : 0);
    varintHex(hex, ipIds.size());
    for (int64_t ip : ipIds) varintHex(hex, static_cast<uint64_t>(ip));
    nodes_.push_back({id, image, ipIds, parent});
    if (version_ >= 3)
      exec("INSERT INTO stack_nodes VALUES (" + std::to_string(id) + "," + std::to_string(image) + ",X'" + hex + "')");
    else
      insertStackRow(nodes_.back());
    return id;
  }

  // Makes the file a version 2 recording: one `stacks` row per node (ips as little-endian u32).
  void versionTwo() {
    if (version_ >= 4) versionThree();
    exec("CREATE TABLE stacks (id INTEGER PRIMARY KEY, image_id INTEGER NOT NULL, ips BLOB NOT NULL, "
         "parent_id INTEGER); DROP TABLE stack_nodes; PRAGMA user_version = 2;");
    exec("CREATE TABLE timeline (image_id INTEGER NOT NULL, t_ns INTEGER NOT NULL, heap_bytes INTEGER NOT NULL, "
         "heap_max INTEGER NOT NULL, heap_min INTEGER NOT NULL, mmap_bytes INTEGER NOT NULL, rss_bytes INTEGER, "
         "anon_bytes INTEGER, allocs INTEGER NOT NULL, frees INTEGER NOT NULL, alloc_bytes INTEGER NOT NULL, "
         "PRIMARY KEY (image_id, t_ns)) WITHOUT ROWID; DROP TABLE timeline_buckets;");
    exec("CREATE TABLE site_timeline (image_id INTEGER NOT NULL, t_ns INTEGER NOT NULL, sites BLOB NOT NULL, "
         "PRIMARY KEY (image_id, t_ns)) WITHOUT ROWID; DROP TABLE site_buckets;");
    meta("schema_version", "2");
    version_ = 2;
    for (const Node& n : nodes_) insertStackRow(n);
    for (const TimelineSpec& t : timelines_) insertTimelineRow(t);
    for (const Activity& a : activities_) insertSiteTimelineRow(a);
  }

  void site(const SiteSpec& s) {
    sites_.push_back(s);
    insertSiteRow(s);
  }

  // Makes the file a version 4 recording (before accounts: site entries without one, timeline
  // entries without the other accounts). Call before adding sites or timeline rows.
  void versionFour() {
    exec("PRAGMA user_version = 4;");
    meta("schema_version", "4");
    version_ = 4;
  }

  // Makes the file a version 6 recording (site_buckets entries without frees). Call before adding
  // site activity.
  void versionSix() {
    exec("PRAGMA user_version = 6;");
    meta("schema_version", "6");
    version_ = 6;
  }

  // Makes the file a version 3 recording: a real `sites` table, one row per site.
  void versionThree() {
    exec("CREATE TABLE sites (stack_id INTEGER NOT NULL, kind TEXT NOT NULL, image_id INTEGER NOT NULL, "
         "alloc_count INTEGER NOT NULL, alloc_bytes INTEGER NOT NULL, free_count INTEGER NOT NULL, "
         "freed_bytes INTEGER NOT NULL, leak_count INTEGER NOT NULL, leak_bytes INTEGER NOT NULL, "
         "peak_count INTEGER NOT NULL, peak_bytes INTEGER NOT NULL, temp_count INTEGER NOT NULL, "
         "temp_bytes INTEGER NOT NULL, realloc_count INTEGER NOT NULL, max_live_count INTEGER NOT NULL, "
         "max_live_bytes INTEGER NOT NULL, min_size INTEGER NOT NULL, max_size INTEGER NOT NULL, "
         "same_size_count INTEGER NOT NULL, lifetime_ns_sum INTEGER NOT NULL, max_realloc_chain INTEGER NOT NULL, "
         "PRIMARY KEY (stack_id, kind)) WITHOUT ROWID; DROP TABLE site_totals; PRAGMA user_version = 3;");
    meta("schema_version", "3");
    version_ = 3;
    for (const SiteSpec& s : sites_) insertSiteRow(s);
  }

  // t_free < 0: never freed. The allocation is also counted in site_timeline, in a "bucket" of
  // its own instant (the recorder's buckets are wider; phase attribution reads only the start).
  void alloc(int64_t image, int64_t stack, int64_t address, int64_t size, int64_t t_alloc,
             int64_t t_free = -1, const char* kind = "malloc") {
    std::ostringstream o;
    o << "INSERT INTO allocations (image_id, tid, kind, op, address, size, stack_id, t_alloc, t_free) VALUES ("
      << image << ",1," << q(kind) << ",'malloc'," << address << "," << size << "," << stack << ","
      << t_alloc << "," << (t_free < 0 ? std::string("NULL") : std::to_string(t_free)) << ")";
    exec(o.str());
    if (siteTimeline_) siteActivity(image, t_alloc, stack, 1, size, kind);
  }

  // Activity of a site in one bucket, without allocation rows (as the recorder writes freed
  // blocks): one packed site_timeline entry, appended to the bucket's row.
  // Version 7 entries also carry frees, freed bytes and temporaries.
  void siteActivity(int64_t image, int64_t t_ns, int64_t stack, int64_t allocs, int64_t bytes,
                    const char* kind = "malloc", int64_t frees = 0, int64_t freedBytes = 0, int64_t temps = 0) {
    std::string hex;
    auto varint = [&hex](uint64_t v) { varintHex(hex, v); };
    const std::string k = kind;
    uint64_t code = k == "new" ? 1 : k == "mmap" ? 2 : k == "custom" ? 3 : 0;
    activities_.push_back({image, t_ns, stack, allocs, bytes, code});
    if (version_ < 3) return insertSiteTimelineRow(activities_.back());
    // Version 3: a site_buckets row of one bucket (zigzag t_ns, entry length) holding one entry
    // whose stack id is absolute (kind * 2 + 1).
    varint(static_cast<uint64_t>(stack));
    varint(code * 2 + 1);
    varint(static_cast<uint64_t>(allocs));
    varint(static_cast<uint64_t>(bytes));
    if (version_ >= 7) {
      varint(static_cast<uint64_t>(frees));
      varint(static_cast<uint64_t>(freedBytes));
      varint(static_cast<uint64_t>(temps));
    }
    siteBucketRaw(image, t_ns, hex);
  }

  // A site_buckets row of one bucket whose entries are these bytes (hex), as they are.
  void siteBucketRaw(int64_t image, int64_t t_ns, const std::string& entriesHex) {
    std::string row;
    varintHex(row, static_cast<uint64_t>(t_ns) << 1);
    varintHex(row, entriesHex.size() / 2);
    exec("INSERT INTO site_buckets (image_id, buckets) VALUES (" + std::to_string(image) + ",X'" + row + entriesHex + "')");
  }

  // Makes the file a version 1 recording (no site_timeline, phase sites from allocation rows,
  // `stacks` rows without parent_id: the fixture's stacks are whole stacks).
  void versionOne(const char* foldThresholdNs = "0") {
    versionTwo();
    exec("ALTER TABLE stacks DROP COLUMN parent_id; DROP TABLE site_timeline; PRAGMA user_version = 1;");
    version_ = 1;
    meta("schema_version", "1");
    exec("DELETE FROM meta WHERE key = 'allocation_rows'");
    meta("fold_threshold_ns", foldThresholdNs);
    siteTimeline_ = false;
  }

  // Version 3: one timeline_buckets row per call (one entry: deltas from zeros, see the schema);
  // versions 1-2: a `timeline` row.
  void timeline(const TimelineSpec& t) {
    timelines_.push_back(t);
    if (version_ < 3) return insertTimelineRow(t);
    std::string hex;
    auto zigzag = [&](int64_t v) { varintHex(hex, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); };
    int64_t max = t.heap_max < 0 ? t.heap_bytes : t.heap_max, min = t.heap_min < 0 ? t.heap_bytes : t.heap_min;
    zigzag(t.t_ns);
    zigzag(t.heap_bytes);
    zigzag(max - t.heap_bytes);
    zigzag(t.heap_bytes - min);
    zigzag(t.mmap_bytes);
    varintHex(hex, (t.rss_bytes >= 0 ? 1 : 0) | (t.anon_bytes >= 0 ? 2 : 0));
    if (t.rss_bytes >= 0) zigzag(t.rss_bytes);
    if (t.anon_bytes >= 0) zigzag(t.anon_bytes);
    varintHex(hex, static_cast<uint64_t>(t.allocs));
    varintHex(hex, static_cast<uint64_t>(t.frees));
    varintHex(hex, static_cast<uint64_t>(t.alloc_bytes));
    if (version_ >= 5) varintHex(hex, 0);  // no other account changed
    exec("INSERT INTO timeline_buckets (image_id, buckets) VALUES (" + std::to_string(t.image) + ",X'" + hex + "')");
  }

  void marker(int64_t image, int64_t t_ns, const char* name) {
    exec("INSERT INTO markers VALUES (" + std::to_string(image) + "," + std::to_string(t_ns) + "," + q(name) + ")");
  }

  // Commits and closes; returns the file path.
  std::string finish() {
    exec("COMMIT");
    sqlite3_close(db_);
    db_ = nullptr;
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  void addFrame(int64_t ip, int depth, const FrameSpec& f) {
    exec("INSERT INTO frames VALUES (" + std::to_string(ip) + "," + std::to_string(depth) + "," + q(f.function) +
         "," + q(f.file) + "," + (f.line ? std::to_string(f.line) : std::string("NULL")) + ")");
  }

  static void varintHex(std::string& hex, uint64_t v) {
    char b[3];
    for (; v >= 0x80; v >>= 7) {
      std::snprintf(b, sizeof b, "%02x", static_cast<unsigned>((v & 0x7f) | 0x80));
      hex += b;
    }
    std::snprintf(b, sizeof b, "%02x", static_cast<unsigned>(v));
    hex += b;
  }
  static std::string u32Hex(const std::vector<int64_t>& ips) {
    std::string hex;
    for (int64_t ip : ips)
      for (int b = 0; b < 4; ++b) {
        char h[3];
        std::snprintf(h, sizeof h, "%02x", static_cast<unsigned>((ip >> (8 * b)) & 0xff));
        hex += h;
      }
    return hex;
  }

  struct Node {
    int64_t id, image;
    std::vector<int64_t> ips;
    int64_t parent;
  };
  // Versions 1 and 2: one `stacks` row per node (version 1 without parent_id).
  void insertStackRow(const Node& n) {
    std::string values = std::to_string(n.id) + "," + std::to_string(n.image) + ",X'" + u32Hex(n.ips) + "'";
    if (version_ == 2) values += "," + (n.parent ? std::to_string(n.parent) : std::string("NULL"));
    exec("INSERT INTO stacks VALUES (" + values + ")");
  }
  void insertTimelineRow(const TimelineSpec& t) {
    auto orNull = [](int64_t v) { return v < 0 ? std::string("NULL") : std::to_string(v); };
    std::ostringstream o;
    o << "INSERT INTO timeline VALUES (" << t.image << "," << t.t_ns << "," << t.heap_bytes << ","
      << (t.heap_max < 0 ? t.heap_bytes : t.heap_max) << "," << (t.heap_min < 0 ? t.heap_bytes : t.heap_min)
      << "," << t.mmap_bytes << "," << orNull(t.rss_bytes) << "," << orNull(t.anon_bytes) << ","
      << t.allocs << "," << t.frees << "," << t.alloc_bytes << ")";
    exec(o.str());
  }
  std::vector<Node> nodes_;
  std::vector<TimelineSpec> timelines_;
  struct Activity {
    int64_t image, t_ns, stack, allocs, bytes;
    uint64_t code;
  };
  // Version 2: entries appended to the bucket's site_timeline row, ids absolute.
  void insertSiteTimelineRow(const Activity& a) {
    std::string hex;
    for (uint64_t v : {static_cast<uint64_t>(a.stack), a.code, static_cast<uint64_t>(a.allocs),
                       static_cast<uint64_t>(a.bytes)})
      varintHex(hex, v);
    exec("INSERT INTO site_timeline VALUES (" + std::to_string(a.image) + "," + std::to_string(a.t_ns) + ",X'" + hex +
         "') ON CONFLICT DO UPDATE SET sites = sites || excluded.sites");
  }
  std::vector<Activity> activities_;
  // Version 4: a site_totals row of this one site (its stack id absolute, see the schema);
  // versions 1-3: a `sites` row.
  void insertSiteRow(const SiteSpec& s) {
#define MEMLEDGER_SPEC_VALUE(name) s.name,
    const int64_t counters[] = {MEMLEDGER_SITE_COUNTERS(MEMLEDGER_SPEC_VALUE)};
#undef MEMLEDGER_SPEC_VALUE
    if (version_ >= 4) {
      const std::string k = s.kind;
      std::string hex;
      varintHex(hex, (static_cast<uint64_t>(s.stack) << 1) ^ static_cast<uint64_t>(s.stack >> 63));
      const memledger::kinds::KindInfo* kind = memledger::kinds::byName(k);
      varintHex(hex, kind ? kind->code : 0);
      if (version_ >= 5) varintHex(hex, k == "mmap" ? 1 : 0);  // the account: heap 0, mmap 1
      for (int64_t v : counters) varintHex(hex, static_cast<uint64_t>(v));
      exec("INSERT INTO site_totals (image_id, sites) VALUES (" + std::to_string(s.image) + ",X'" + hex + "')");
      return;
    }
    std::ostringstream o;
    o << "INSERT INTO sites VALUES (" << s.stack << "," << q(s.kind) << "," << s.image;
    for (int64_t v : counters) o << "," << v;
    o << ")";
    exec(o.str());
  }
  std::vector<SiteSpec> sites_;
  int version_ = memledger::schema::kSchemaVersion;  // as the schema file says
  std::string path_;
  sqlite3* db_ = nullptr;
  int64_t modules_ = 0, ips_ = 0, stacks_ = 0;
  bool siteTimeline_ = true;
};

}  // namespace memledger::testing
