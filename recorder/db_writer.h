// The SQLite side of a recording (schemas/memledger.sql). Prepared statements (the tables of
// many small rows: 64 rows to a statement, db_bulk.h), rows batched into transactions that
// commit every ~100 ms or 64k rows, no indexes until finish(). WAL journal with
// synchronous=OFF: a committed batch survives the recorder being SIGKILLed (the OS has the
// pages), and finish() switches back to a rollback journal so the product is one plain file.
// A write error is remembered (first message kept) and later writes become no-ops: the recorder
// must keep draining rings so the traced program never blocks on a broken disk.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "db_bulk.h"
#include "schemas/packed_sites.h"
#include "schemas/site_counters.h"

struct sqlite3;
struct sqlite3_stmt;

namespace memledger::recorder {

// PRAGMA user_version of schemas/memledger.sql (meta schema_version repeats it).
inline constexpr int kSchemaVersion = schema::kSchemaVersion;

struct ProcessRow {
  int64_t id = 0;
  uint32_t pid = 0, ppid = 0;
  std::optional<int64_t> parent_id;
  std::string command, exe;
  uint64_t start_ns = 0;
  std::optional<uint64_t> end_ns;
  std::optional<std::string> ended_by;
  std::optional<int> exit_code, signal;
  bool forked = false;
  uint64_t wait_ns = 0, peak_rss = 0;
  uint64_t peak_heap_bytes = 0, peak_heap_ns = 0, peak_mmap_bytes = 0, peak_mmap_ns = 0;
  uint64_t unknown_frees = 0;
};

struct SiteRow {
  int64_t stack_id = 0;
  uint8_t kind = 0;  // schemas/kinds.h code, which is site_totals' kind code (see the schema)
  uint32_t account = 0;  // the image's spaces.account this site counts in
  int64_t image_id = 0;
#define MEMLEDGER_SITE_FIELD(name) uint64_t name = 0;
  MEMLEDGER_SITE_COUNTERS(MEMLEDGER_SITE_FIELD)
#undef MEMLEDGER_SITE_FIELD
};

// One account of an image (a space's or a pool's live total; image 0: the recording's
// simultaneous totals): a `spaces` row.
struct SpaceRow {
  int64_t image_id = 0;
  uint32_t account = 0;
  std::string name, space;  // "heap" | "mmap" | "device:N" | ... | "pool:NAME"; space: where it lives
  bool pool = false;
  uint32_t pool_id = 0;
  std::string kind;         // the kind of its blocks
  uint64_t base = 0, reserved_bytes = 0;
  std::optional<uint64_t> created_ns, destroyed_ns;
  uint64_t peak_bytes = 0, peak_ns = 0, end_bytes = 0;
};

// An account's values in one timeline bucket (accounts 2.. ; heap and mmap are inline).
struct AccountPoint {
  uint32_t account;
  int64_t live, max, min;
};

struct AllocationRow {
  int64_t id = 0, image_id = 0;
  uint32_t tid = 0;
  const char* kind = "malloc";
  const char* op = "malloc";
  uint64_t address = 0, size = 0;
  int64_t stack_id = 0;
  uint64_t t_alloc = 0;
  std::optional<uint64_t> t_free;
  std::optional<int64_t> realloc_of;
};

// ---- leak kinds (schema version 6: leak_scans, leak_kinds) ----
struct LeakScanRow {
  int64_t image_id = 0;
  std::string status = "scanned";  // 'scanned' | 'failed'
  std::optional<std::string> error;
  uint64_t t_ns = 0, duration_ns = 0, root_bytes = 0, block_bytes = 0, blocks = 0;
};

// What one site allocated and freed in one timeline bucket (frees and temporaries: schema 7).
struct SiteBucketEntry {
  uint64_t stack_id, kind, allocs, bytes;
  uint64_t frees = 0, freed_bytes = 0, temps = 0;
};

struct TimelineRow {
  int64_t image_id = 0;
  uint64_t t_ns = 0;
  int64_t heap_bytes = 0, heap_max = 0, heap_min = 0, mmap_bytes = 0;
  std::optional<uint64_t> rss_bytes, anon_bytes;
  uint64_t allocs = 0, frees = 0, alloc_bytes = 0;
  std::vector<AccountPoint> accounts;  // accounts other than heap and mmap that changed
};

class DbWriter {
 public:
  // Opens (creates) the SQLite file at `path` and applies the schema up to `-- @finish`.
  // The file may already exist empty (the CLI creates it O_EXCL first). nullptr + *error on failure.
  static std::unique_ptr<DbWriter> open(const std::string& path, std::string* error);
  ~DbWriter();
  DbWriter(const DbWriter&) = delete;
  DbWriter& operator=(const DbWriter&) = delete;

  void setMeta(const std::string& key, const std::string& value);
  void writeProcess(const ProcessRow& row);  // insert or replace: rows are rewritten as facts arrive
  void insertModule(int64_t id, int64_t image, const std::string& path, uint64_t bias,
                    uint64_t start, uint64_t end, uint64_t load_ns);
  void setModuleUnload(int64_t id, uint64_t unload_ns);
  // module 0: none (NULL)
  void insertIp(int64_t id, int64_t image, uint64_t address, int64_t module = 0);
  // parent 0: none (ips is the whole stack); else an earlier id. Nodes are packed into
  // stack_nodes rows (see the schema), written when a row is full, the next id does not follow
  // (another image), or at commit: a committed batch holds every stack its rows name.
  void insertStack(int64_t id, int64_t image, const uint32_t* ipIds, size_t n, int64_t parent = 0);
  // Packed into site_totals rows (see the schema), written at 4096 sites, an image change, or a
  // commit.
  void insertSite(const SiteRow& row);
  void insertAllocation(const AllocationRow& row);
  // ---- leak kinds ----
  void insertLeakScan(const LeakScanRow& row);
  void insertLeakKind(int64_t allocationId, int kind);
  // Packed into timeline_buckets rows like stack nodes (see the schema), written at 256 entries,
  // an image change, or a commit.
  void insertTimeline(const TimelineRow& row);
  // One bucket's site entries, in any order (sorted here, in place); stored sorted, with stack ids
  // as gaps, packed with other buckets of the image into a site_buckets row like the timeline's
  // (see the schema).
  void insertSiteTimeline(int64_t image, uint64_t t_ns, std::vector<SiteBucketEntry>& entries);
  void insertMarker(int64_t image, uint64_t t_ns, const std::string& name);
  // Python frames (schema version 6's block)
  void insertPythonCode(int64_t image, uint64_t serial, std::string_view name, std::string_view file,
                        int64_t firstLine, uint64_t version, std::string_view linetable);
  void insertPythonFinalize(int64_t image, uint64_t t_ns);
  // One image's live set at finalization (entries sorted here, in place), packed into
  // python_finalize_lists rows of 4096 entries (schemas/packed_sites.h).
  void insertPythonFinalizeSites(int64_t image, uint64_t bucket_ns, std::vector<packed::FinalizeSiteEntry>& entries);
  void insertSpace(const SpaceRow& row);
  // One image's live set at the simultaneous peak of `space` (entries sorted here, in place),
  // packed into peak_site_lists rows of 4096 entries (schemas/packed_sites.h).
  void insertPeakSites(const std::string& space, int64_t image, std::vector<packed::PeakSiteEntry>& entries);

  // Commits the open batch when it is old (>= 100 ms since the last commit) or large.
  void maybeCommit(uint64_t now_ns);
  void commit();
  // Runs the schema's `-- @finish` statements (indexes) in their own transaction.
  void applyFinishSchema();
  // Commits, switches to a rollback journal (folding the WAL into the file) and closes.
  void close();

  // The connection for a reader: the rows still buffered for a multi-row INSERT (db_bulk.h) are
  // written first, so that it sees every row inserted so far.
  sqlite3* handle() {
    flushBulk();
    return db_;
  }
  // The same without writing them: for a reader that only needs the rows up to some point and
  // comes back for the rest (the symbol warmer, every round).
  sqlite3* handleAsIs() { return db_; }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  uint64_t rowsWritten() const { return rows_; }

 private:
  DbWriter() = default;
  bool exec(const char* sql);
  sqlite3_stmt* prepare(const char* sql);
  void bulk(BulkRows& b, const char* head, int cols);
  void step(sqlite3_stmt* st, int rows = 1);
  // Starts a row of `b`, writing its buffer first when full; false: the table is not open.
  bool startRow(BulkRows& b);
  void writeBulk(BulkRows& b);
  void flushBulk();
  bool bulkPending() const;  // rows buffered for a multi-row INSERT, not written yet
  void begin();
  void fail(const char* what);
  // A packed row being filled (stack_nodes, timeline_buckets, site_buckets, site_totals): its image, how many
  // entries it holds, their bytes.
  struct PackedRow {
    int64_t image = 0;
    size_t count = 0;
    std::vector<uint8_t> bytes;
  };
  // Binds the row's image at `imageColumn` and its bytes in the next column, writes the row and
  // empties it; nothing when it holds no entry.
  void writePacked(sqlite3_stmt* st, int imageColumn, PackedRow& row);
  void flushStackNodes();

  sqlite3* db_ = nullptr;
  std::string error_;
  bool inTx_ = false;
  uint64_t batchRows_ = 0, rows_ = 0, lastCommitNs_ = 0;
  // The stack_nodes row being filled, and its first id.
  PackedRow nodes_;
  int64_t nodesFirst_ = 0;
  // The timeline_buckets row being filled (see the schema), and what its next entry is a delta from.
  PackedRow buckets_;
  TimelineRow prevBucket_;
  uint64_t prevRss_ = 0, prevAnon_ = 0;
  // The site_buckets row being filled, and its previous bucket's start.
  PackedRow siteBuckets_;
  uint64_t siteT_ = 0;
  // The site_totals row being filled, and the stack id its next entry is a delta from.
  PackedRow sites_;
  int64_t prevSiteStack_ = 0;
  std::vector<uint8_t> packed_;
  sqlite3_stmt *meta_ = nullptr, *process_ = nullptr, *module_ = nullptr, *moduleGone_ = nullptr,
               *stack_ = nullptr, *site_ = nullptr,
               *timeline_ = nullptr, *siteTimeline_ = nullptr, *marker_ = nullptr,
               *space_ = nullptr, *pyCode_ = nullptr, *pyFinal_ = nullptr;
  // Packed live sets (schema 8): a row per call and 4096 entries.
  sqlite3_stmt *peakSites_ = nullptr, *pyFinalSites_ = nullptr;
  sqlite3_stmt* leakScan_ = nullptr;  // leak kinds
  // The tables of many small rows, written 64 rows to a statement.
  BulkRows ips_, allocs_, leakKinds_;
};

// The schema text split at its `-- @finish` line: first = tables, second = finish statements.
std::pair<std::string, std::string> splitSchema();
// SQL without its `--` comments (outside quotes) and blank lines: what the recorder executes.
std::string withoutComments(const std::string& sql);

}  // namespace memledger::recorder
