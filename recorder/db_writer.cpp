#include "db_writer.h"

#include <sqlite3.h>

#include <cstdio>
#include <algorithm>
#include <tuple>
#include <cstring>

#include "../schemas/packed.h"
#include "../schemas/packed_sites.h"
#include "schema_sql.h"

namespace memledger::recorder {

namespace {
constexpr uint64_t kCommitEveryNs = 100'000'000;  // a killed recorder loses at most ~100 ms
constexpr uint64_t kCommitEveryRows = 65536;

void bindOpt(sqlite3_stmt* st, int i, const std::optional<uint64_t>& v) {
  if (v) sqlite3_bind_int64(st, i, static_cast<sqlite3_int64>(*v));
  else sqlite3_bind_null(st, i);
}
void bindOpt(sqlite3_stmt* st, int i, const std::optional<int64_t>& v) {
  if (v) sqlite3_bind_int64(st, i, *v);
  else sqlite3_bind_null(st, i);
}
void bindOpt(sqlite3_stmt* st, int i, const std::optional<int>& v) {
  if (v) sqlite3_bind_int(st, i, *v);
  else sqlite3_bind_null(st, i);
}
void bindU(sqlite3_stmt* st, int i, uint64_t v) { sqlite3_bind_int64(st, i, static_cast<sqlite3_int64>(v)); }
void bindText(sqlite3_stmt* st, int i, const std::string& s) {
  sqlite3_bind_text(st, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}
}  // namespace

std::pair<std::string, std::string> splitSchema() {
  std::string all = kSchemaSql;
  auto at = all.find("\n-- @finish");
  if (at == std::string::npos) return {all, std::string()};
  return {all.substr(0, at + 1), all.substr(at + 1)};
}

std::string withoutComments(const std::string& sql) {
  // SQLite keeps each CREATE statement's text, comments included, in sqlite_schema: in every
  // recording, ~8 KiB of the schema's column comments (1-2 KiB compressed). The commented schema
  // is schemas/memledger.sql; the file gets the statements alone.
  std::string out;
  out.reserve(sql.size());
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (quote) {
      out += c;
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
      out += c;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      while (i < sql.size() && sql[i] != '\n') ++i;  // keeps the newline
      while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
      if (i < sql.size()) out += '\n';
    } else {
      out += c;
    }
  }
  // Blank lines left by whole-line comments.
  std::string packed;
  for (char c : out)
    if (c != '\n' || (!packed.empty() && packed.back() != '\n')) packed += c;
  return packed;
}

std::unique_ptr<DbWriter> DbWriter::open(const std::string& path, std::string* error) {
  // Per-row costs: SQLite's allocation statistics take a global mutex per malloc (only settable
  // before SQLite is first used: later calls fail harmlessly), and the connection's own mutex is
  // not needed: one thread writes (NOMUTEX), the heartbeat thread never touches the database.
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  std::unique_ptr<DbWriter> w(new DbWriter);
  if (sqlite3_open_v2(path.c_str(), &w->db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    *error = w->db_ ? sqlite3_errmsg(w->db_) : "out of memory";
    return nullptr;
  }
  // The file is written by this one process; WAL keeps committed batches safe if we are killed.
  if (!w->exec("PRAGMA journal_mode=WAL") || !w->exec("PRAGMA synchronous=OFF") ||
      !w->exec("PRAGMA cache_size=-65536") || !w->exec(withoutComments(splitSchema().first).c_str())) {
    *error = w->error_;
    return nullptr;
  }
  w->meta_ = w->prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
  w->process_ = w->prepare(
      "INSERT OR REPLACE INTO processes(id, pid, ppid, parent_id, command, exe, start_ns, end_ns, "
      "ended_by, exit_code, signal, forked, wait_ns, peak_rss, peak_heap_bytes, peak_heap_ns, "
      "peak_mmap_bytes, peak_mmap_ns, unknown_frees) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  w->module_ = w->prepare(
      "INSERT INTO modules(id, image_id, path, bias, start, end, load_ns) VALUES (?,?,?,?,?,?,?)");
  w->moduleGone_ = w->prepare("UPDATE modules SET unload_ns = ? WHERE id = ?");
  w->bulk(w->ips_, "INSERT INTO ips(id, image_id, address, module_id)", 4);
  w->stack_ = w->prepare("INSERT INTO stack_nodes(first_id, image_id, nodes) VALUES (?,?,?)");
  w->site_ = w->prepare("INSERT INTO site_totals(image_id, sites) VALUES (?,?)");
  w->bulk(w->allocs_,
          "INSERT INTO allocations(id, image_id, tid, kind, op, address, size, stack_id, t_alloc, "
          "t_free, realloc_of)", 11);
  w->timeline_ = w->prepare("INSERT INTO timeline_buckets(image_id, buckets) VALUES (?,?)");
  // A bucket is flushed once; were it ever flushed twice, the entries simply add up.
  w->siteTimeline_ = w->prepare("INSERT INTO site_buckets(image_id, buckets) VALUES (?,?)");
  w->marker_ = w->prepare("INSERT INTO markers(image_id, t_ns, name) VALUES (?,?,?)");
  w->pyCode_ = w->prepare(
      "INSERT OR REPLACE INTO python_code(image_id, serial, name, file, first_line, version, linetable) "
      "VALUES (?,?,?,?,?,?,?)");
  w->pyFinal_ = w->prepare("INSERT OR REPLACE INTO python_finalize(image_id, t_ns) VALUES (?,?)");
  w->pyFinalSites_ = w->prepare("INSERT INTO python_finalize_lists(image_id, bucket_ns, sites) VALUES (?,?,?)");
  w->space_ = w->prepare(
      "INSERT OR REPLACE INTO spaces(image_id, account, name, space, is_pool, pool_id, kind, base, "
      "reserved_bytes, created_ns, destroyed_ns, peak_bytes, peak_ns, end_bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  w->peakSites_ = w->prepare("INSERT INTO peak_site_lists(space, image_id, sites) VALUES (?,?,?)");
  w->leakScan_ = w->prepare(
      "INSERT OR REPLACE INTO leak_scans(image_id, status, error, t_ns, duration_ns, root_bytes, "
      "block_bytes, blocks) VALUES (?,?,?,?,?,?,?,?)");
  w->bulk(w->leakKinds_, "INSERT OR REPLACE INTO leak_kinds(allocation_id, kind)", 2);
  if (!w->ok()) {
    *error = w->error_;
    return nullptr;
  }
  return w;
}

DbWriter::~DbWriter() {
  for (sqlite3_stmt* st : {meta_, process_, module_, moduleGone_, stack_, site_, timeline_,
                           siteTimeline_, marker_, space_, pyCode_, pyFinal_, leakScan_, peakSites_,
                           pyFinalSites_})
    sqlite3_finalize(st);
  for (BulkRows* b : {&ips_, &allocs_, &leakKinds_}) b->finalize();
  if (db_) sqlite3_close_v2(db_);
}

void DbWriter::fail(const char* what) {
  if (error_.empty()) error_ = std::string(what) + ": " + (db_ ? sqlite3_errmsg(db_) : "no database");
}

bool DbWriter::exec(const char* sql) {
  if (!ok()) return false;
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    if (error_.empty()) error_ = msg ? msg : "sqlite error";
    sqlite3_free(msg);
    return false;
  }
  return true;
}

sqlite3_stmt* DbWriter::prepare(const char* sql) {
  sqlite3_stmt* st = nullptr;
  if (ok() && sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr) != SQLITE_OK)
    fail("prepare");
  return st;
}

void DbWriter::begin() {
  if (!inTx_ && exec("BEGIN")) inTx_ = true;
}

void DbWriter::bulk(BulkRows& b, const char* head, int cols) {
  if (ok() && !b.prepare(db_, head, cols)) fail("prepare");
}

bool DbWriter::startRow(BulkRows& b) {
  if (!b.ready()) return false;
  if (b.full()) writeBulk(b);
  b.startRow();
  return true;
}

void DbWriter::writeBulk(BulkRows& b) {
  if (b.empty()) return;
  b.write([this](sqlite3_stmt* st, int rows) { step(st, rows); });
}

bool DbWriter::bulkPending() const {
  for (const BulkRows* b : {&ips_, &allocs_, &leakKinds_})
    if (!b->empty()) return true;
  return false;
}

void DbWriter::flushBulk() {
  for (BulkRows* b : {&ips_, &allocs_, &leakKinds_}) writeBulk(*b);
}

void DbWriter::step(sqlite3_stmt* st, int rows) {
  if (ok()) {
    begin();
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) fail("write");
    batchRows_ += static_cast<uint64_t>(rows);
    rows_ += static_cast<uint64_t>(rows);
  }
  // Every insert binds all its parameters, so no sqlite3_clear_bindings (a cost per row).
  sqlite3_reset(st);
  if (batchRows_ >= kCommitEveryRows) commit();
}

void DbWriter::maybeCommit(uint64_t now_ns) {
  // Packed rows still being filled count too: a program that only ticks (a timeline bucket per
  // interval, nothing else written) must still have its curve committed every interval.
  bool pending = inTx_ || bulkPending() || nodes_.count || buckets_.count || siteBuckets_.count || sites_.count;
  if (pending && (now_ns - lastCommitNs_ >= kCommitEveryNs || batchRows_ >= kCommitEveryRows)) {
    commit();
    lastCommitNs_ = now_ns;
  }
}

void DbWriter::commit() {
  flushBulk();
  if (stack_) flushStackNodes();
  if (timeline_) writePacked(timeline_, 1, buckets_);
  if (siteTimeline_) writePacked(siteTimeline_, 1, siteBuckets_);
  if (site_) writePacked(site_, 1, sites_);
  if (inTx_) {
    inTx_ = false;
    exec("COMMIT");
  }
  batchRows_ = 0;
}

void DbWriter::setMeta(const std::string& key, const std::string& value) {
  if (!meta_) return;
  bindText(meta_, 1, key);
  bindText(meta_, 2, value);
  step(meta_);
}

void DbWriter::writeProcess(const ProcessRow& r) {
  sqlite3_stmt* st = process_;
  if (!st) return;
  sqlite3_bind_int64(st, 1, r.id);
  sqlite3_bind_int64(st, 2, r.pid);
  sqlite3_bind_int64(st, 3, r.ppid);
  bindOpt(st, 4, r.parent_id);
  bindText(st, 5, r.command);
  bindText(st, 6, r.exe);
  bindU(st, 7, r.start_ns);
  bindOpt(st, 8, r.end_ns);
  if (r.ended_by) bindText(st, 9, *r.ended_by);
  else sqlite3_bind_null(st, 9);
  bindOpt(st, 10, r.exit_code);
  bindOpt(st, 11, r.signal);
  sqlite3_bind_int(st, 12, r.forked ? 1 : 0);
  bindU(st, 13, r.wait_ns);
  bindU(st, 14, r.peak_rss);
  bindU(st, 15, r.peak_heap_bytes);
  bindU(st, 16, r.peak_heap_ns);
  bindU(st, 17, r.peak_mmap_bytes);
  bindU(st, 18, r.peak_mmap_ns);
  bindU(st, 19, r.unknown_frees);
  step(st);
}

void DbWriter::insertModule(int64_t id, int64_t image, const std::string& path, uint64_t bias,
                            uint64_t start, uint64_t end, uint64_t load_ns) {
  if (!module_) return;
  sqlite3_bind_int64(module_, 1, id);
  sqlite3_bind_int64(module_, 2, image);
  bindText(module_, 3, path);
  bindU(module_, 4, bias);
  bindU(module_, 5, start);
  bindU(module_, 6, end);
  bindU(module_, 7, load_ns);
  step(module_);
}

void DbWriter::setModuleUnload(int64_t id, uint64_t unload_ns) {
  if (!moduleGone_) return;
  bindU(moduleGone_, 1, unload_ns);
  sqlite3_bind_int64(moduleGone_, 2, id);
  step(moduleGone_);
}

void DbWriter::insertIp(int64_t id, int64_t image, uint64_t address, int64_t module) {
  if (!startRow(ips_)) return;
  ips_.put(id);
  ips_.put(image);
  ips_.putU(address);
  if (module) ips_.put(module);
  else ips_.putNull();
}

namespace {
constexpr size_t kNodesPerRow = 256;  // a reader decodes a whole row to get one of its stacks
constexpr size_t kBucketsPerRow = 256;
constexpr size_t kSitesPerRow = 4096;  // readers only ever scan all sites
using packed::putVarint;

}  // namespace

void DbWriter::insertStack(int64_t id, int64_t image, const uint32_t* ipIds, size_t n, int64_t parent) {
  if (!stack_) return;
  if (nodes_.count && (image != nodes_.image || id != nodesFirst_ + static_cast<int64_t>(nodes_.count) ||
                      nodes_.count == kNodesPerRow))
    flushStackNodes();
  if (!nodes_.count) {
    nodesFirst_ = id;
    nodes_.image = image;
  }
  putVarint(nodes_.bytes, parent > 0 && parent < id ? static_cast<uint64_t>(id - parent) : 0);
  putVarint(nodes_.bytes, n);
  for (size_t i = 0; i < n; ++i) putVarint(nodes_.bytes, ipIds[i]);
  ++nodes_.count;
}

void DbWriter::writePacked(sqlite3_stmt* st, int imageColumn, PackedRow& row) {
  if (!row.count) return;
  row.count = 0;  // first: step() may commit, and a commit flushes this row
  sqlite3_bind_int64(st, imageColumn, row.image);
  // SQLITE_STATIC: the blob is only read by the step() below.
  sqlite3_bind_blob(st, imageColumn + 1, row.bytes.data(), static_cast<int>(row.bytes.size()),
                    SQLITE_STATIC);
  step(st);
  row.bytes.clear();
}

void DbWriter::flushStackNodes() {
  if (!nodes_.count) return;
  sqlite3_bind_int64(stack_, 1, nodesFirst_);
  writePacked(stack_, 2, nodes_);
}

void DbWriter::insertSite(const SiteRow& r) {
  if (!site_) return;
  if (sites_.count && (r.image_id != sites_.image || sites_.count == kSitesPerRow)) writePacked(site_, 1, sites_);
  if (!sites_.count) {
    sites_.image = r.image_id;
    prevSiteStack_ = 0;
  }
  packed::putSigned(sites_.bytes, r.stack_id - prevSiteStack_);
  prevSiteStack_ = r.stack_id;
  putVarint(sites_.bytes, r.kind);
  putVarint(sites_.bytes, r.account);
#define MEMLEDGER_PUT_COUNTER(name) putVarint(sites_.bytes, r.name);
  MEMLEDGER_SITE_COUNTERS(MEMLEDGER_PUT_COUNTER)
#undef MEMLEDGER_PUT_COUNTER
  ++sites_.count;
}

void DbWriter::insertAllocation(const AllocationRow& r) {
  BulkRows& b = allocs_;
  if (!startRow(b)) return;
  b.put(r.id);
  b.put(r.image_id);
  b.put(r.tid);
  b.putText(r.kind);
  b.putText(r.op);
  b.putU(r.address);
  b.putU(r.size);
  b.put(r.stack_id);
  b.putU(r.t_alloc);
  if (r.t_free) b.putU(*r.t_free);
  else b.putNull();
  if (r.realloc_of) b.put(*r.realloc_of);
  else b.putNull();
}

// ---- leak kinds ----
void DbWriter::insertLeakScan(const LeakScanRow& r) {
  sqlite3_stmt* st = leakScan_;
  if (!st) return;
  sqlite3_bind_int64(st, 1, r.image_id);
  sqlite3_bind_text(st, 2, r.status.c_str(), -1, SQLITE_TRANSIENT);
  if (r.error) sqlite3_bind_text(st, 3, r.error->c_str(), -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, 3);
  bindU(st, 4, r.t_ns);
  bindU(st, 5, r.duration_ns);
  bindU(st, 6, r.root_bytes);
  bindU(st, 7, r.block_bytes);
  bindU(st, 8, r.blocks);
  step(st);
}

void DbWriter::insertLeakKind(int64_t allocationId, int kind) {
  if (!startRow(leakKinds_)) return;
  leakKinds_.put(allocationId);
  leakKinds_.put(kind);
}

using packed::putSigned;

void DbWriter::insertTimeline(const TimelineRow& r) {
  if (!timeline_) return;
  if (buckets_.count && (r.image_id != buckets_.image || buckets_.count == kBucketsPerRow))
    writePacked(timeline_, 1, buckets_);
  if (!buckets_.count) {
    buckets_.image = r.image_id;
    prevBucket_ = TimelineRow{};
    prevRss_ = prevAnon_ = 0;
  }
  // Unsigned wrap-around: deltas of any two int64 values fit their zigzag form.
  auto delta = [](uint64_t a, uint64_t b) { return static_cast<int64_t>(a - b); };
  putSigned(buckets_.bytes, delta(r.t_ns, prevBucket_.t_ns));
  putSigned(buckets_.bytes, delta(static_cast<uint64_t>(r.heap_bytes), static_cast<uint64_t>(prevBucket_.heap_bytes)));
  putSigned(buckets_.bytes, delta(static_cast<uint64_t>(r.heap_max), static_cast<uint64_t>(r.heap_bytes)));
  putSigned(buckets_.bytes, delta(static_cast<uint64_t>(r.heap_bytes), static_cast<uint64_t>(r.heap_min)));
  putSigned(buckets_.bytes, delta(static_cast<uint64_t>(r.mmap_bytes), static_cast<uint64_t>(prevBucket_.mmap_bytes)));
  putVarint(buckets_.bytes, (r.rss_bytes ? 1 : 0) | (r.anon_bytes ? 2 : 0));
  if (r.rss_bytes) {
    putSigned(buckets_.bytes, delta(*r.rss_bytes, prevRss_));
    prevRss_ = *r.rss_bytes;
  }
  if (r.anon_bytes) {
    putSigned(buckets_.bytes, delta(*r.anon_bytes, prevAnon_));
    prevAnon_ = *r.anon_bytes;
  }
  putVarint(buckets_.bytes, r.allocs);
  putVarint(buckets_.bytes, r.frees);
  putVarint(buckets_.bytes, r.alloc_bytes);
  putVarint(buckets_.bytes, r.accounts.size());  // version 5: the other accounts that changed
  for (const AccountPoint& a : r.accounts) {
    putVarint(buckets_.bytes, a.account);
    putSigned(buckets_.bytes, a.live);
    putSigned(buckets_.bytes, delta(static_cast<uint64_t>(a.max), static_cast<uint64_t>(a.live)));
    putSigned(buckets_.bytes, delta(static_cast<uint64_t>(a.live), static_cast<uint64_t>(a.min)));
  }
  prevBucket_ = r;
  ++buckets_.count;
}

void DbWriter::insertSiteTimeline(int64_t image, uint64_t t_ns, std::vector<SiteBucketEntry>& entries) {
  if (!siteTimeline_) return;
  // Sorted by site, each stack id as the gap from the previous one (kind * 2 + 0) except the first
  // (kind * 2 + 1, so that two writes of one bucket, concatenated, still decode). Schema 3; about
  // a third smaller compressed (py_dict: 60 -> 37 kB).
  std::sort(entries.begin(), entries.end(), [](const SiteBucketEntry& a, const SiteBucketEntry& b) {
    return std::tie(a.stack_id, a.kind, a.allocs, a.bytes, a.frees, a.freed_bytes, a.temps) <
           std::tie(b.stack_id, b.kind, b.allocs, b.bytes, b.frees, b.freed_bytes, b.temps);
  });
  packed_.clear();
  uint64_t prev = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const SiteBucketEntry& e = entries[i];
    putVarint(packed_, i == 0 ? e.stack_id : e.stack_id - prev);
    putVarint(packed_, e.kind * 2 + (i == 0 ? 1 : 0));
    putVarint(packed_, e.allocs);
    putVarint(packed_, e.bytes);
    putVarint(packed_, e.frees);  // schema 7
    putVarint(packed_, e.freed_bytes);
    putVarint(packed_, e.temps);
    prev = e.stack_id;
  }
  // Then into the image's site_buckets row: t_ns delta, the entries' length, the entries.
  if (siteBuckets_.count && (image != siteBuckets_.image || siteBuckets_.count == kBucketsPerRow))
    writePacked(siteTimeline_, 1, siteBuckets_);
  if (!siteBuckets_.count) {
    siteBuckets_.image = image;
    siteT_ = 0;
  }
  putSigned(siteBuckets_.bytes, static_cast<int64_t>(t_ns - siteT_));
  putVarint(siteBuckets_.bytes, packed_.size());
  siteBuckets_.bytes.insert(siteBuckets_.bytes.end(), packed_.begin(), packed_.end());
  siteT_ = t_ns;
  ++siteBuckets_.count;
}

// ---- Python frames (schema version 6)
void DbWriter::insertPythonCode(int64_t image, uint64_t serial, std::string_view name, std::string_view file,
                                int64_t firstLine, uint64_t version, std::string_view linetable) {
  if (!pyCode_) return;
  sqlite3_bind_int64(pyCode_, 1, image);
  bindU(pyCode_, 2, serial);
  sqlite3_bind_text(pyCode_, 3, name.data(), static_cast<int>(name.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(pyCode_, 4, file.data(), static_cast<int>(file.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(pyCode_, 5, firstLine);
  bindU(pyCode_, 6, version);
  sqlite3_bind_blob(pyCode_, 7, linetable.data(), static_cast<int>(linetable.size()), SQLITE_TRANSIENT);
  step(pyCode_);
}

void DbWriter::insertPythonFinalize(int64_t image, uint64_t t_ns) {
  if (!pyFinal_) return;
  sqlite3_bind_int64(pyFinal_, 1, image);
  bindU(pyFinal_, 2, t_ns);
  step(pyFinal_);
}

void DbWriter::insertPythonFinalizeSites(int64_t image, uint64_t bucket_ns,
                                         std::vector<packed::FinalizeSiteEntry>& entries) {
  if (!pyFinalSites_) return;
  packed::sortEntries(entries);
  for (size_t at = 0; at < entries.size(); at += packed::kSiteListRowEntries) {
    const size_t n = std::min(packed::kSiteListRowEntries, entries.size() - at);
    packed_.clear();
    packed::encodeEntries(entries.data() + at, entries.data() + at + n, packed_);
    sqlite3_bind_int64(pyFinalSites_, 1, image);
    bindU(pyFinalSites_, 2, bucket_ns);
    sqlite3_bind_blob(pyFinalSites_, 3, packed_.data(), static_cast<int>(packed_.size()), SQLITE_STATIC);
    step(pyFinalSites_);
  }
}

void DbWriter::insertMarker(int64_t image, uint64_t t_ns, const std::string& name) {
  if (!marker_) return;
  sqlite3_bind_int64(marker_, 1, image);
  bindU(marker_, 2, t_ns);
  bindText(marker_, 3, name);
  step(marker_);
}

void DbWriter::insertSpace(const SpaceRow& r) {
  sqlite3_stmt* st = space_;
  if (!st) return;
  sqlite3_bind_int64(st, 1, r.image_id);
  sqlite3_bind_int64(st, 2, r.account);
  bindText(st, 3, r.name);
  bindText(st, 4, r.space);
  sqlite3_bind_int(st, 5, r.pool ? 1 : 0);
  sqlite3_bind_int64(st, 6, r.pool_id);
  bindText(st, 7, r.kind);
  bindU(st, 8, r.base);
  bindU(st, 9, r.reserved_bytes);
  bindOpt(st, 10, r.created_ns);
  bindOpt(st, 11, r.destroyed_ns);
  bindU(st, 12, r.peak_bytes);
  bindU(st, 13, r.peak_ns);
  bindU(st, 14, r.end_bytes);
  step(st);
}

void DbWriter::insertPeakSites(const std::string& space, int64_t image, std::vector<packed::PeakSiteEntry>& entries) {
  if (!peakSites_) return;
  packed::sortEntries(entries);
  for (size_t at = 0; at < entries.size(); at += packed::kSiteListRowEntries) {
    const size_t n = std::min(packed::kSiteListRowEntries, entries.size() - at);
    packed_.clear();
    packed::encodeEntries(entries.data() + at, entries.data() + at + n, packed_);
    bindText(peakSites_, 1, space);
    sqlite3_bind_int64(peakSites_, 2, image);
    sqlite3_bind_blob(peakSites_, 3, packed_.data(), static_cast<int>(packed_.size()), SQLITE_STATIC);
    step(peakSites_);
  }
}

void DbWriter::applyFinishSchema() {
  commit();
  std::string fin = withoutComments(splitSchema().second);
  if (fin.empty()) return;
  exec("BEGIN");
  exec(fin.c_str());
  exec("COMMIT");
}

void DbWriter::close() {
  commit();
  if (!db_) return;
  for (sqlite3_stmt** st : {&meta_, &process_, &module_, &moduleGone_, &stack_, &site_, &timeline_,
                            &siteTimeline_, &marker_, &space_, &pyCode_, &pyFinal_, &leakScan_, &peakSites_,
                            &pyFinalSites_}) {
    sqlite3_finalize(*st);
    *st = nullptr;
  }
  for (BulkRows* b : {&ips_, &allocs_, &leakKinds_}) b->finalize();
  // Fold the WAL back into the file: readers then need no -wal/-shm beside it.
  exec("PRAGMA journal_mode=DELETE");
  if (sqlite3_close(db_) != SQLITE_OK) fail("close");
  db_ = nullptr;
}

}  // namespace memledger::recorder
