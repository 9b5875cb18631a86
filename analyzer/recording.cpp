// Opening a recording read-only, telling every kind of bad file apart, and decoding stacks.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "analyzer/analyzer.h"
#include "analyzer/control.h"
#include "analyzer/inflate.h"
#include "analyzer/leaked_blocks.h"
#include "analyzer/site_activity.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

using detail::throwFor;

namespace {

std::string msgNotRecording(const std::string& path) {
  return "memledger: '" + path + "' is not a memledger recording";
}
std::string msgCorrupt(const std::string& path) {
  return "memledger: '" + path + "' is truncated or corrupt";
}

uint32_t be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// SQLite opens lazily and happily reads a truncated file until it meets a missing page, so the
// header is checked first: a database whose header promises more pages than the file holds was cut.
// `path` names the recording in messages; h holds the first `got` bytes of fileSize.
void checkHeaderBytes(const std::string& path, const unsigned char* h, size_t got, uint64_t fileSize) {
  if (fileSize == 0) throw RecordingError(ErrorKind::NotARecording, path, msgNotRecording(path));
  static const char kMagic[16] = "SQLite format 3";  // includes the trailing NUL
  size_t cmp = std::min<size_t>(got, sizeof kMagic);
  if (std::memcmp(h, kMagic, cmp) != 0)
    throw RecordingError(ErrorKind::NotARecording, path, msgNotRecording(path));
  if (got < 100) throw RecordingError(ErrorKind::Corrupt, path, msgCorrupt(path));
  uint32_t pageSize = (uint32_t(h[16]) << 8) | h[17];
  if (pageSize == 1) pageSize = 65536;
  if (pageSize < 512 || (pageSize & (pageSize - 1)) != 0)
    throw RecordingError(ErrorKind::Corrupt, path, msgCorrupt(path));
  uint32_t pages = be32(h + 28);
  bool sizeValid = be32(h + 24) == be32(h + 92) && pages != 0;  // "in-header size" is trusted then
  if (fileSize % pageSize != 0) throw RecordingError(ErrorKind::Corrupt, path, msgCorrupt(path));
  if (sizeValid && uint64_t(pages) * pageSize > fileSize)
    throw RecordingError(ErrorKind::Corrupt, path, msgCorrupt(path));
}

void checkHeader(const std::string& file, const std::string& path, uint64_t fileSize) {
  unsigned char h[100] = {};
  std::ifstream in(file, std::ios::binary);
  in.read(reinterpret_cast<char*>(h), sizeof h);
  checkHeaderBytes(path, h, static_cast<size_t>(in.gcount()), fileSize);
}

int64_t toInt(const std::string& s, int64_t fallback = 0) {
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    return used == s.size() ? v : fallback;
  } catch (...) {
    return fallback;
  }
}

}  // namespace

// Threads: `db` is a serialized connection (SQLITE_OPEN_FULLMUTEX), `info` and `pids` are
// written only by open(); each cache has its own lock, held only to look up or to insert, never
// while SQLite reads, so threads that find what they need in a cache do not wait for one that
// reads. The caches are node-based maps: a Stack or Frame handed out stays where it is while
// other threads insert.
struct Recording::Impl {
  sqlite3* db = nullptr;
  RecordingInfo info;
  std::unordered_map<int64_t, int64_t> pids;  // image id -> pid
  std::shared_mutex stacksMutex;
  std::unordered_map<int64_t, Stack> stacks;
  size_t cachedFrames = 0, maxStackFrames = 0;  // copied into `stacks`, and the limit (0: none)
  std::shared_mutex ipFramesMutex;
  // Shared with every Stack that points into it (analyzer.h), which keeps it past the close.
  std::shared_ptr<std::unordered_map<int64_t, std::vector<Frame>>> ipFrames =
      std::make_shared<std::unordered_map<int64_t, std::vector<Frame>>>();
  // ipFrames' entries by ip id (ids are dense from 1), published once read: the trees look up
  // every frame of every site (89M on a PyTorch run), which the lock and the hash made 1.6 s.
  std::once_flag ipSlotsOnce;
  std::unique_ptr<std::atomic<const std::vector<Frame>*>[]> ipSlots;
  size_t ipSlotCount = 0;
  std::once_flag stackIpsOnce;
  std::unique_ptr<detail::StackIps> stackIps;  // locks itself
  std::once_flag pythonOnce;
  std::unique_ptr<detail::PythonSnapshot> python;  // read-only once loaded
  std::once_flag activityOnce;
  std::unique_ptr<detail::ActivitySites> activity;  // read-only once made
  std::once_flag leakedOnce;
  std::unique_ptr<detail::LeakedBlocks> leaked;  // read-only once read
  std::mutex ipStmtMutex;  // ipStmt and framesStmt: one reader at a time
  sqlite3_stmt* ipStmt = nullptr;
  sqlite3_stmt* framesStmt = nullptr;
  std::string tempFile;  // a large compressed recording decompressed here; removed on close

  // The frames of one ip (inline chain, innermost first), read once.
  const std::vector<Frame>& framesOfIp(const Recording& rec, uint32_t ipId);
  detail::StackIps& stackIpsOf();

  ~Impl() {
    stackIps.reset();  // before the database closes
    sqlite3_finalize(ipStmt);
    sqlite3_finalize(framesStmt);
    if (db) sqlite3_close(db);
    if (!tempFile.empty()) ::unlink(tempFile.c_str());
  }
};

namespace {

// Every 1000 virtual machine instructions SQLite asks whether the question running on that
// thread was cancelled (analyzer/control.h): a long statement stops without waiting for its row.
void prepareConnection(sqlite3* db) {
  sqlite3_extended_result_codes(db, 1);
  sqlite3_progress_handler(db, 1000, detail::sqliteProgressHandler, nullptr);
}

// `file` is opened; `path` (the recording the user named) is what messages say.
sqlite3* openDb(const std::string& file, const std::string& path, bool immutable) {
  sqlite3* db = nullptr;
  int rc;
  if (immutable) {
    // A recorder killed mid-transaction leaves a hot journal that a read-only connection may not
    // roll back; reading the file as it is still shows everything committed before the kill.
    char* uri = sqlite3_mprintf("file:%q?immutable=1", file.c_str());
    rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr);
    sqlite3_free(uri);
  } else {
    rc = sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr);
  }
  if (rc != SQLITE_OK) {
    sqlite3_close(db);
    throwFor(rc, path);
  }
  prepareConnection(db);
  return db;
}

// A decompressed recording held in memory: SQLite reads it in place, read-only, and frees it.
sqlite3* openInMemory(detail::Inflated& inflated, const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc == SQLITE_OK) {
    auto size = static_cast<sqlite3_int64>(inflated.size);
    // Freed by SQLite from here on, even when deserialize fails.
    rc = sqlite3_deserialize(db, "main", inflated.bytes.release(), size, size,
                             SQLITE_DESERIALIZE_READONLY | SQLITE_DESERIALIZE_FREEONCLOSE);
  }
  if (rc != SQLITE_OK) {
    sqlite3_close(db);
    throwFor(rc, path);
  }
  prepareConnection(db);
  return db;
}

// Returns the sqlite result code of the first probe (SQLITE_OK when it is a readable database).
int probeMeta(sqlite3* db, bool& hasMeta) {
  sqlite3_stmt* st = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table'", -1, &st, nullptr);
  hasMeta = false;
  if (rc != SQLITE_OK) return rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    auto* name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    if (name && std::strcmp(name, "meta") == 0) hasMeta = true;
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

bool needsImmutable(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_READONLY ||
         primary == SQLITE_CANTOPEN;
}

}  // namespace

Recording::Recording(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Recording::~Recording() = default;
Recording::Recording(Recording&&) noexcept = default;
Recording& Recording::operator=(Recording&&) noexcept = default;

Recording Recording::open(const std::string& path) { return open(path, OpenOptions{}); }

Recording Recording::open(const std::string& path, const OpenOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    throw RecordingError(ErrorKind::NotFound, path,
                         "memledger: cannot open '" + path + "': " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode))
    throw RecordingError(ErrorKind::NotFound, path,
                         "memledger: cannot open '" + path + "': " + std::strerror(EISDIR));

  auto impl = std::make_unique<Impl>();
  impl->info.path = path;
  bool hasMeta = false;
  int rc;
  if (detail::isCompressedRecording(path)) {
    // Compressed on exit (recorder/compress.h): the same SQLite file inside one zstd frame. Past
    // the in-memory limit it goes to a private temporary file, which nobody else writes.
    detail::Inflated inflated = detail::inflateRecording(path, static_cast<uint64_t>(st.st_size),
                                                         options.max_in_memory);
    if (!inflated.tempPath.empty()) {
      impl->tempFile = inflated.tempPath;
      checkHeader(impl->tempFile, path, inflated.size);
      impl->db = openDb(impl->tempFile, path, true);
    } else {
      checkHeaderBytes(path, inflated.bytes.get(), std::min<uint64_t>(inflated.size, 100), inflated.size);
      impl->db = openInMemory(inflated, path);
    }
    rc = probeMeta(impl->db, hasMeta);
  } else {
    checkHeader(path, path, static_cast<uint64_t>(st.st_size));
    impl->db = openDb(path, path, false);
    rc = probeMeta(impl->db, hasMeta);
    if (rc != SQLITE_OK && needsImmutable(rc)) {
      sqlite3_close(impl->db);
      impl->db = openDb(path, path, true);
      rc = probeMeta(impl->db, hasMeta);
    }
  }
  if (rc != SQLITE_OK) throwFor(rc, path);
  if (!hasMeta) throw RecordingError(ErrorKind::NotARecording, path, msgNotRecording(path));

  Recording rec(std::move(impl));
  RecordingInfo& info = rec.impl_->info;
  {
    detail::Statement q(rec, "PRAGMA user_version");
    if (q.step()) info.schema_version = static_cast<int>(q.i64(0));
  }
  if (info.schema_version > kSchemaVersion)
    throw RecordingError(ErrorKind::NewerVersion, path,
                         "memledger: '" + path + "' was written by a newer memledger (schema " +
                             std::to_string(info.schema_version) + " > " +
                             std::to_string(kSchemaVersion) + ")");
  if (info.schema_version < 1) throw RecordingError(ErrorKind::NotARecording, path, msgNotRecording(path));

  {
    // Every table of the schema must be there; a missing one means the file is damaged (or the
    // recorder died before it created them).
    // Version 3 packs three of version 2's tables, version 4 a fourth (see the schema).
    static const char* kTables[] = {"processes", "modules", "ips", "frames", "allocations", "markers"};
    static const char* kTablesV2[] = {"stacks", "timeline", "site_timeline"};
    static const char* kTablesV3[] = {"stack_nodes", "timeline_buckets", "site_buckets"};
    detail::Statement q(rec, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?");
    auto require = [&](const char* t) {
      q.reset();
      q.bind(1, std::string(t));
      if (!q.step() || q.i64(0) == 0) throw RecordingError(ErrorKind::Corrupt, path, msgCorrupt(path));
    };
    for (const char* t : kTables) require(t);
    // Version 4 packs the sites; `sites` is then a virtual table over them.
    require(info.schema_version >= 4 ? "site_totals" : "sites");
    for (const char* t : info.schema_version >= 3 ? kTablesV3 : kTablesV2)
      if (info.schema_version >= 2 || std::strcmp(t, "site_timeline") != 0) require(t);
  }
  {
    detail::Statement q(rec, "SELECT key, value FROM meta");
    while (q.step()) {
      std::string key = q.text(0), value = q.text(1);
      if (key == "complete") info.complete = value == "1";
      else if (key == "duration_ns") info.duration_ns = toInt(value);
      else if (key == "wait_ns") info.wait_ns = toInt(value);
      else if (key == "lost_records") info.lost_records = toInt(value);
      else if (key == "recorder_cpu_ns") info.recorder_cpu_ns = toInt(value);
      else if (key == "bucket_ns") info.bucket_ns = toInt(value);
      else if (key == "fold_threshold_ns") info.fold_threshold_ns = toInt(value);
      else if (key == "allocation_rows") info.allocation_rows = value;
      else if (key == "memledger_version") info.version = value;
      else if (key == "command") info.command = value;
      else if (key == "start_wall") info.start_wall = value;
      else if (key == "peak_image" && !value.empty()) info.peak_image = toInt(value, -1);
    }
  }
  if (info.schema_version >= 4 && !detail::registerSitesTable(rec.impl_->db, info.schema_version))
    throw RecordingError(ErrorKind::Corrupt, path, msgCorrupt(path));
  // Version 1 had no allocation_rows: a threshold of 0 meant every block had a row.
  if (info.schema_version < 2) info.allocation_rows = info.fold_threshold_ns == 0 ? "all" : "long_lived";
  {
    detail::Statement q(rec, "SELECT id, pid FROM processes");
    while (q.step()) rec.impl_->pids[q.i64(0)] = q.i64(1);
  }
  // An unfinished recording may lack duration_ns: the last thing seen is the best estimate.
  if (info.duration_ns == 0) {
    detail::Statement q(rec, "SELECT coalesce((SELECT max(end_ns) FROM processes), 0)");
    int64_t last = q.step() ? q.i64(0) : 0;
    std::vector<detail::TimelineRow> rows = detail::timelineRows(rec, "");
    if (!rows.empty()) last = std::max(last, rows.back().t_ns);
    info.duration_ns = last + info.bucket_ns;
  }
  return rec;
}

const RecordingInfo& Recording::info() const { return impl_->info; }
sqlite3* Recording::db() const { return impl_->db; }

int64_t Recording::pidOf(int64_t image_id) const {
  auto it = impl_->pids.find(image_id);
  return it == impl_->pids.end() ? 0 : it->second;
}

const detail::PythonSnapshot& Recording::pythonSnapshot() const {
  std::call_once(impl_->pythonOnce, [this] { impl_->python = detail::loadPythonSnapshot(*this); });
  return *impl_->python;
}

const detail::ActivitySites& Recording::activitySites() const {
  std::call_once(impl_->activityOnce, [this] { impl_->activity = std::make_unique<detail::ActivitySites>(*this); });
  return *impl_->activity;
}

const detail::LeakedBlocks& Recording::leakedBlocks() const {
  std::call_once(impl_->leakedOnce, [this] { impl_->leaked = std::make_unique<detail::LeakedBlocks>(*this); });
  return *impl_->leaked;
}

namespace {

void prepare(const Recording& rec, sqlite3_stmt*& stmt, const char* sql) {
  if (stmt) {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return;
  }
  int rc = sqlite3_prepare_v2(rec.db(), sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) throwFor(rc, rec.info().path);
}

std::string colText(sqlite3_stmt* st, int col) {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(st, col))) : std::string();
}

}  // namespace

namespace {

// The hooks already drop their own frames; what can remain innermost is an allocator entry that
// forwards to the hooked one without being hooked itself: the dynamic loader's malloc/calloc
// wrappers (rtld-malloc.h, inlined or not), reached while ld.so allocates a TLS vector or an
// error message. Stacks start at the code that asked for memory, so those go too.
bool isAllocatorEntry(const Frame& f) {
  if (!f.function) return false;
  static const char* const kEntries[] = {"malloc", "calloc", "realloc", "free", "__rtld_malloc",
                                         "__rtld_calloc", "__rtld_realloc", "__rtld_free"};
  for (const char* e : kEntries)
    if (*f.function == e) return true;
  return false;
}

// --- CUDA collector (issue 16) ---
// A device allocation's stack starts in the collector's callback, called from CUPTI inside the
// driver, inside the runtime (libcudart, or its copy linked into the program as cudart::...).
// Stacks start at the program's code that asked, so those leading frames go as the hooks' do.
bool isCudaMachinery(const Frame& f) {
  if (f.function && (f.function->rfind("cudart::", 0) == 0 || f.function->rfind("__cudart", 0) == 0)) return true;
  if (!f.module) return false;
  std::string_view m = *f.module;
  m = m.substr(m.rfind('/') + 1);
  for (std::string_view lib : {"libmemledger_cupti.so", "libcupti.so", "libcuda.so", "libcudart.so"})
    if (m.substr(0, lib.size()) == lib) return true;
  return false;
}

}  // namespace

const std::vector<Frame>& Recording::Impl::framesOfIp(const Recording& rec, uint32_t ipId) {
  std::call_once(ipSlotsOnce, [this] {
    constexpr int64_t kMaxSlots = int64_t{1} << 22;  // 32 MiB of slots; ids past it use the map alone
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT max(id) FROM ips", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
      const int64_t top = sqlite3_column_int64(st, 0);
      ipSlotCount = size_t(std::clamp<int64_t>(top + 1, 0, kMaxSlots));
      ipSlots.reset(new std::atomic<const std::vector<Frame>*>[ipSlotCount]());
    }
    sqlite3_finalize(st);
  });
  if (ipId < ipSlotCount)
    if (const std::vector<Frame>* known = ipSlots[ipId].load(std::memory_order_acquire)) return *known;
  {
    std::shared_lock lock(ipFramesMutex);
    auto cached = ipFrames->find(ipId);
    if (cached != ipFrames->end()) return cached->second;
  }
  std::lock_guard statements(ipStmtMutex);
  {
    // Read meanwhile by the thread that held the statements.
    std::shared_lock lock(ipFramesMutex);
    auto cached = ipFrames->find(ipId);
    if (cached != ipFrames->end()) return cached->second;
  }
  const std::string& path = info.path;
  int rc = SQLITE_OK;
  std::optional<std::string> module;
  std::optional<int64_t> offset;
  prepare(rec, ipStmt, "SELECT m.path, i.address - m.bias FROM ips i LEFT JOIN modules m ON m.id = i.module_id WHERE i.id = ?");
  sqlite3_bind_int64(ipStmt, 1, ipId);
  rc = sqlite3_step(ipStmt);
  if (rc == SQLITE_ROW && sqlite3_column_type(ipStmt, 0) != SQLITE_NULL) {
    module = colText(ipStmt, 0);
    offset = sqlite3_column_int64(ipStmt, 1);
  }
  else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    throwFor(rc, path);
  sqlite3_reset(ipStmt);

  std::vector<Frame> frames;
  prepare(rec, framesStmt, "SELECT function, file, line FROM frames WHERE ip_id = ? ORDER BY depth");
  sqlite3_bind_int64(framesStmt, 1, ipId);
  while ((rc = sqlite3_step(framesStmt)) == SQLITE_ROW) {
    Frame f;
    sqlite3_stmt* st = framesStmt;
    if (sqlite3_column_type(st, 0) != SQLITE_NULL && sqlite3_column_bytes(st, 0) > 0) f.function = colText(st, 0);
    if (sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_bytes(st, 1) > 0) f.file = colText(st, 1);
    if (sqlite3_column_type(st, 2) != SQLITE_NULL && sqlite3_column_int64(st, 2) > 0)
      f.line = sqlite3_column_int64(st, 2);
    f.module = module;
    f.offset = offset;
    frames.push_back(std::move(f));
  }
  if (rc != SQLITE_DONE) throwFor(rc, path);
  sqlite3_reset(framesStmt);
  // Not symbolized (or the symbolizer found nothing): still one frame, its module known.
  if (frames.empty()) {
    Frame f;
    f.module = module;
    f.offset = offset;
    frames.push_back(std::move(f));
  }
  std::unique_lock lock(ipFramesMutex);
  const std::vector<Frame>& kept = ipFrames->emplace(ipId, std::move(frames)).first->second;
  if (ipId < ipSlotCount) ipSlots[ipId].store(&kept, std::memory_order_release);
  return kept;
}

detail::StackIps& Recording::Impl::stackIpsOf() {
  std::call_once(stackIpsOnce, [this] { stackIps = std::make_unique<detail::StackIps>(db, info); });
  return *stackIps;
}

void Recording::stackFrames(int64_t stack_id, std::vector<const Frame*>* out) const {
  out->clear();
  detail::throwIfCancelled();  // passes over every site call this once a site
  for (uint32_t ipId : impl_->stackIpsOf().of(stack_id))
    for (const Frame& f : impl_->framesOfIp(*this, ipId)) out->push_back(&f);
  size_t n = 0;
  while (n + 1 < out->size() && (isAllocatorEntry(*(*out)[n]) || isCudaMachinery(*(*out)[n]))) ++n;
  out->erase(out->begin(), out->begin() + static_cast<long>(n));
}

Stack Recording::uncachedStack(int64_t stack_id) const {
  std::vector<const Frame*> ptrs;
  stackFrames(stack_id, &ptrs);
  return Stack(std::move(ptrs), impl_->ipFrames);
}

const Stack& Recording::stack(int64_t stack_id) const {
  {
    std::shared_lock lock(impl_->stacksMutex);
    auto found = impl_->stacks.find(stack_id);
    if (found != impl_->stacks.end()) return found->second;
  }
  Stack frames = uncachedStack(stack_id);
  std::unique_lock lock(impl_->stacksMutex);
  if (impl_->maxStackFrames && (impl_->cachedFrames += frames.size()) > impl_->maxStackFrames)
    throw FilterError("memledger: the lists would hold more than " + std::to_string(impl_->maxStackFrames) +
                      " stack frames (about 2 KB each until written): lower --top, or export every site with "
                      "`memledger export --format folded` or `--format pprof`");
  return impl_->stacks.emplace(stack_id, std::move(frames)).first->second;
}

void Stack::push_back(Frame frame) {
  if (own_ && own_.use_count() > 1) {
    // Shared with a copy of this stack: this one takes frames of its own (copies never change).
    auto mine = std::make_shared<std::deque<Frame>>();
    for (const Frame*& f : frames_) f = &mine->emplace_back(*f);
    own_ = std::move(mine);
    keeper_.reset();
  }
  if (!own_) own_ = std::make_shared<std::deque<Frame>>();
  own_->push_back(std::move(frame));
  frames_.push_back(&own_->back());
}

void Recording::limitStackFrames(size_t max_frames) { impl_->maxStackFrames = max_frames; }

// ---------------------------------------------------------------------------------------------

namespace detail {

[[noreturn]] void throwCorrupt(const std::string& path) {
  throw RecordingError(ErrorKind::Corrupt, path, msgCorrupt(path));
}

[[noreturn]] void throwFor(int rc, const std::string& path) {
  // The progress handler (analyzer/control.h) interrupted a statement of a cancelled question.
  if ((rc & 0xff) == SQLITE_INTERRUPT && detail::cancelRequested()) throw Cancelled();
  // SQLITE_NOTADB: the header is not SQLite's at all (random bytes); anything else that fails
  // on a file with a valid header means its pages are damaged or missing.
  if ((rc & 0xff) == SQLITE_NOTADB)
    throw RecordingError(ErrorKind::NotARecording, path, msgNotRecording(path));
  throw RecordingError(ErrorKind::Corrupt, path, msgCorrupt(path));
}

Statement::Statement(const Recording& rec, const char* sql) : rec_(rec) {
  int rc = sqlite3_prepare_v2(rec.db(), sql, -1, &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    throwFor(rc, rec.info().path);
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::bind(int index, const std::string& value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

bool Statement::step() {
  if (detail::cancelRequested()) throw Cancelled();
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throwFor(rc, rec_.info().path);
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Statement::text(int col) const { return colText(stmt_, col); }

}  // namespace detail

}  // namespace memledger::analyzer
