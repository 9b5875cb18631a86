#include "symbolize_driver.h"

#include <sqlite3.h>

#include <algorithm>
#include <memory>
#include <map>
#include <optional>
#include <unordered_map>

#include "db_bulk.h"
#include "python_lines.h"

namespace memledger::recorder {
namespace {

struct ModuleRow {
  int64_t id;
  int64_t image;
  std::string path;
  uint64_t bias, start, end, load_ns;
  std::optional<uint64_t> unload_ns;
};

struct ImageRow {
  std::optional<int64_t> parent;
  bool forked = false;
  uint64_t start_ns = 0;
  std::string exe;
};

// The modules an image's ips may fall in, sorted by start, with a running maximum of `end` so a
// lookup can stop walking back once nothing earlier reaches the address.
struct ModuleIndex {
  struct Entry {
    const ModuleRow* m;
    bool own;  // the image's own module (preferred over one inherited through fork)
  };
  std::vector<Entry> entries;
  std::vector<uint64_t> maxEnd;

  void build() {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.m->start < b.m->start; });
    maxEnd.resize(entries.size());
    uint64_t mx = 0;
    for (size_t i = 0; i < entries.size(); ++i) maxEnd[i] = mx = std::max(mx, entries[i].m->end);
  }

  // The covering module: own before inherited, then the most recently loaded (an address range
  // reused after dlclose belongs to the newer library as far as we can tell).
  const ModuleRow* find(uint64_t ip) const {
    auto it = std::upper_bound(entries.begin(), entries.end(), ip,
                               [](uint64_t v, const Entry& e) { return v < e.m->start; });
    const Entry* best = nullptr;
    for (size_t i = static_cast<size_t>(it - entries.begin()); i-- > 0;) {
      if (maxEnd[i] <= ip) break;
      const Entry& e = entries[i];
      if (ip >= e.m->end) continue;
      if (!best || (e.own && !best->own) ||
          (e.own == best->own && e.m->load_ns > best->m->load_ns))
        best = &e;
    }
    return best ? best->m : nullptr;
  }
};

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &st_, nullptr); }
  ~Stmt() { sqlite3_finalize(st_); }
  sqlite3_stmt* get() const { return st_; }
  explicit operator bool() const { return st_ != nullptr; }

 private:
  sqlite3_stmt* st_ = nullptr;
};

std::string columnText(sqlite3_stmt* st, int i) {
  const unsigned char* t = sqlite3_column_text(st, i);
  return t ? reinterpret_cast<const char*>(t) : std::string();
}

}  // namespace

// What symbolization needs from the file, read in one go so the lookups can run on another
// thread while the recorder's connection writes the sites (Symbolization below).
struct SymbolizeJob::Data {
  std::map<int64_t, ImageRow> images;
  std::vector<ModuleRow> modules;
  struct Ip {
    int64_t id, image;
    uint64_t address;
    int64_t module;  // ips.module_id as the recorder wrote it (0: NULL)
  };
  std::vector<Ip> ips;
  bool sorted = true;
  void sortIps();
  // Results: per ip its module (null: none) and frames; per module path its build id.
  std::vector<const ModuleRow*> moduleOf;
  std::vector<const std::vector<SymbolFrame>*> framesOf;
  // Indexes into ips in id order (compute() sorts them, off the connection's thread): write()
  // goes in that order, so frames' rows (keyed by ip_id, depth) are appended to their B-tree
  // instead of inserted at random places, as ips' address order would have them.
  std::vector<uint32_t> byId;
  std::map<std::pair<int, uint64_t>, std::vector<SymbolFrame>> cache;
  std::map<std::string, std::string> buildIds;
  SymbolizeStats stats;
  int64_t lastIp = 0;
  // Python code objects by (image, serial) (schema version 6), and the frames of Python ips.
  struct PyCode {
    std::string name, file, table;
    int firstLine = 0;
    uint64_t version = 0;
  };
  std::map<std::pair<int64_t, uint32_t>, PyCode> pyCodes;
  std::map<size_t, std::vector<SymbolFrame>> pyFrames;  // by index in ips
  const PyCode* pyCode(int64_t image, uint32_t serial) const;
};

// A fork child resends what it uses on its own ring; its parent's rows serve what it did not.
const SymbolizeJob::Data::PyCode* SymbolizeJob::Data::pyCode(int64_t image, uint32_t serial) const {
  for (int depth = 0; depth < 64; ++depth) {
    auto it = pyCodes.find({image, serial});
    if (it != pyCodes.end()) return &it->second;
    auto im = images.find(image);
    if (im == images.end() || !im->second.forked || !im->second.parent) return nullptr;
    image = *im->second.parent;
  }
  return nullptr;
}

SymbolizeJob::SymbolizeJob() : d_(std::make_unique<Data>()) {}
SymbolizeJob::~SymbolizeJob() = default;

bool SymbolizeJob::read(sqlite3* db, std::string* error, int64_t afterIp) {
  auto fail = [&](const char* what) {
    *error = std::string(what) + ": " + sqlite3_errmsg(db);
    return false;
  };
  Data& d = *d_;
  {
    Stmt q(db, "SELECT id, parent_id, forked, start_ns, exe FROM processes");
    if (!q) return fail("read processes");
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
      ImageRow r;
      if (sqlite3_column_type(q.get(), 1) != SQLITE_NULL) r.parent = sqlite3_column_int64(q.get(), 1);
      r.forked = sqlite3_column_int(q.get(), 2) != 0;
      r.start_ns = static_cast<uint64_t>(sqlite3_column_int64(q.get(), 3));
      r.exe = columnText(q.get(), 4);
      d.images[sqlite3_column_int64(q.get(), 0)] = r;
    }
  }
  {
    Stmt q(db, "SELECT id, image_id, path, bias, start, end, load_ns, unload_ns FROM modules");
    if (!q) return fail("read modules");
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
      ModuleRow m;
      m.id = sqlite3_column_int64(q.get(), 0);
      m.image = sqlite3_column_int64(q.get(), 1);
      m.path = columnText(q.get(), 2);
      m.bias = static_cast<uint64_t>(sqlite3_column_int64(q.get(), 3));
      m.start = static_cast<uint64_t>(sqlite3_column_int64(q.get(), 4));
      m.end = static_cast<uint64_t>(sqlite3_column_int64(q.get(), 5));
      m.load_ns = static_cast<uint64_t>(sqlite3_column_int64(q.get(), 6));
      if (sqlite3_column_type(q.get(), 7) != SQLITE_NULL)
        m.unload_ns = static_cast<uint64_t>(sqlite3_column_int64(q.get(), 7));
      // The main program may be reported without a name: it is the image's executable.
      if (m.path.empty() && d.images.count(m.image)) m.path = d.images[m.image].exe;
      d.modules.push_back(std::move(m));
    }
  }
  {
    // Absent before version 6: no Python frames.
    Stmt q(db, "SELECT image_id, serial, name, file, first_line, version, linetable FROM python_code");
    while (q && sqlite3_step(q.get()) == SQLITE_ROW) {
      Data::PyCode c;
      c.name = columnText(q.get(), 2);
      c.file = columnText(q.get(), 3);
      c.firstLine = sqlite3_column_int(q.get(), 4);
      c.version = static_cast<uint64_t>(sqlite3_column_int64(q.get(), 5));
      const void* blob = sqlite3_column_blob(q.get(), 6);
      c.table.assign(static_cast<const char*>(blob ? blob : ""), static_cast<size_t>(sqlite3_column_bytes(q.get(), 6)));
      d.pyCodes[{sqlite3_column_int64(q.get(), 0), static_cast<uint32_t>(sqlite3_column_int64(q.get(), 1))}] = std::move(c);
    }
  }
  {
    d.lastIp = afterIp;
    // In id order (the rowid), sorted here: there is no index on ips until the file is finished,
    // and SQLite's sorter takes ~60 ms for the 80k ips of a PyTorch run, on the recorder's loop.
    Stmt q(db, "SELECT id, image_id, address, module_id FROM ips WHERE id > ?");
    if (!q) return fail("read ips");
    sqlite3_bind_int64(q.get(), 1, afterIp);
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
      d.ips.push_back({sqlite3_column_int64(q.get(), 0), sqlite3_column_int64(q.get(), 1),
                       static_cast<uint64_t>(sqlite3_column_int64(q.get(), 2)),
                       sqlite3_column_int64(q.get(), 3)});  // NULL reads as 0
      d.lastIp = std::max(d.lastIp, d.ips.back().id);
    }
    d.sorted = false;  // by sortIps(), on the thread that looks them up (80k ips: ~10 ms)
  }
  return true;
}

// ORDER BY image_id, address: an image's ips by address, so lookups go module by module.
void SymbolizeJob::Data::sortIps() {
  if (sorted) return;
  std::sort(ips.begin(), ips.end(), [](const Ip& a, const Ip& b) {
    if (a.image != b.image) return a.image < b.image;
    const auto x = static_cast<int64_t>(a.address), y = static_cast<int64_t>(b.address);  // as stored
    return x != y ? x < y : a.id < b.id;
  });
  sorted = true;
}

namespace {

// Calls f(i, module) for ips 0..ipCount-1 in order (ipAt(i): the ip's image id and address), with
// the module that covers it (null: none); stops early when f returns false.
template <class IpAt, class F>
void matchModules(const std::map<int64_t, ImageRow>& images, const std::vector<ModuleRow>& modules,
                  size_t ipCount, IpAt&& ipAt, F&& f) {
  std::map<int64_t, std::vector<const ModuleRow*>> byImage;
  for (const ModuleRow& m : modules) byImage[m.image].push_back(&m);

  std::map<int64_t, ModuleIndex> indexes;
  auto indexFor = [&](int64_t image) -> const ModuleIndex& {
    auto found = indexes.find(image);
    if (found != indexes.end()) return found->second;
    ModuleIndex idx;
    for (const ModuleRow* m : byImage[image]) idx.entries.push_back({m, true});
    // A fork child runs in its parent's address space as it was at the fork.
    int64_t cur = image;
    auto self = images.find(image);
    uint64_t at = self != images.end() ? self->second.start_ns : 0;
    for (int depth = 0; depth < 64; ++depth) {
      auto im = images.find(cur);
      if (im == images.end() || !im->second.forked || !im->second.parent) break;
      cur = *im->second.parent;
      for (const ModuleRow* m : byImage[cur])
        if (m->load_ns <= at && (!m->unload_ns || *m->unload_ns > at)) idx.entries.push_back({m, false});
    }
    idx.build();
    return indexes.emplace(image, std::move(idx)).first->second;
  };
  for (size_t i = 0; i < ipCount; ++i) {
    auto [image, address] = ipAt(i);
    if (!f(i, indexFor(image).find(address))) return;
  }
}

// A return address points after the call: ip - 1 lies in the calling line.
uint64_t relativeAddress(const ModuleRow& m, uint64_t address) {
  return address - m.bias - (address > m.bias ? 1 : 0);
}

}  // namespace

void SymbolizeJob::compute(SymbolSource& source) {
  Data& d = *d_;
  d.sortIps();
  SymbolizeStats& st = d.stats;
  std::map<std::string, int> pathIds;
  d.moduleOf.assign(d.ips.size(), nullptr);
  d.framesOf.assign(d.ips.size(), nullptr);
  auto ipAt = [&d](size_t i) { return std::pair{d.ips[i].image, d.ips[i].address}; };
  // The ips are in address order: a code object's ips come together, by offset.
  const Data::PyCode* lineCode = nullptr;
  std::optional<PythonLineCursor> lines;
  matchModules(d.images, d.modules, d.ips.size(), ipAt, [&](size_t i, const ModuleRow* m) {
    ++st.ips;
    if (isPythonFrame(d.ips[i].address)) {  // a Python frame: its code object's name, file, line
      SymbolFrame f;
      if (const Data::PyCode* c = d.pyCode(d.ips[i].image, pythonSerial(d.ips[i].address))) {
        f.function = c->name;
        f.file = c->file;
        if (c != lineCode) {
          lineCode = c;
          lines.emplace(c->version, c->table, c->firstLine);
        }
        f.line = lines->line(pythonOffset(d.ips[i].address));
        ++st.resolved;
      } else {
        f.function = "<python>";
      }
      d.pyFrames[i] = {f};
      d.framesOf[i] = &d.pyFrames[i];
      return true;
    }
    if (!m) return true;  // no frames: readers show the raw address
    ++st.withModule;
    d.moduleOf[i] = m;
    int pid = pathIds.emplace(m->path, static_cast<int>(pathIds.size())).first->second;
    auto [it, isNew] = d.cache.try_emplace({pid, relativeAddress(*m, d.ips[i].address)});
    if (isNew) {
      ++st.lookups;
      it->second = source.symbolize(m->path, it->first.second);
      if (it->second.empty()) it->second.emplace_back();
    }
    if (!it->second.front().function.empty() || it->second.size() > 1) ++st.resolved;
    d.framesOf[i] = &it->second;
    return true;
  });
  for (const ModuleRow& m : d.modules) {
    if (m.path.empty()) continue;
    auto [it, isNew] = d.buildIds.try_emplace(m.path);
    if (isNew) it->second = source.buildId(m.path);
  }
  d.byId.resize(d.ips.size());
  for (size_t i = 0; i < d.ips.size(); ++i) d.byId[i] = static_cast<uint32_t>(i);
  std::sort(d.byId.begin(), d.byId.end(), [&d](uint32_t a, uint32_t b) { return d.ips[a].id < d.ips[b].id; });
}

void SymbolizeJob::warm(SymbolSource& source, const std::atomic<bool>& stop, std::atomic<uint64_t>& answered) {
  Data& d = *d_;
  d.sortIps();
  auto ipAt = [&d](size_t i) { return std::pair{d.ips[i].image, d.ips[i].address}; };
  matchModules(d.images, d.modules, d.ips.size(), ipAt, [&](size_t i, const ModuleRow* m) {
    if (stop.load(std::memory_order_relaxed)) return false;
    if (m && !m->path.empty() && source.prefetch(m->path, relativeAddress(*m, d.ips[i].address)))
      answered.fetch_add(1, std::memory_order_relaxed);
    return true;
  });
}

int64_t SymbolizeJob::lastIp() const { return d_->lastIp; }

bool SymbolizeJob::write(sqlite3* db, SymbolizeStats* stats, std::string* error) {
  Data& d = *d_;
  if (stats) *stats = d.stats;
  auto fail = [&](const char* what) {
    *error = std::string(what) + ": " + sqlite3_errmsg(db);
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return false;
  };
  if (sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) return fail("begin");
  // The recorder wrote each ip's module_id with its row, from the modules its image had loaded
  // then; only where that differs from the answer here (an ip of a module inherited through
  // fork, one recorded before its module's record) is it set again. A run of consecutive such
  // ips in one module is one UPDATE. The frames go 64 rows to an INSERT (db_bulk.h).
  Stmt setModule(db, "UPDATE ips SET module_id = ? WHERE id BETWEEN ? AND ?");
  BulkRows addFrame;
  Stmt setBuildId(db, "UPDATE modules SET build_id = ? WHERE id = ?");
  if (!setModule || !setBuildId ||
      !addFrame.prepare(db, "INSERT OR REPLACE INTO frames(ip_id, depth, function, file, line)", 5))
    return fail("prepare");
  bool stepFailed = false;
  auto writeFrames = [&] {
    addFrame.write([&](sqlite3_stmt* st, int) {
      if (sqlite3_step(st) != SQLITE_DONE) stepFailed = true;
      sqlite3_reset(st);
    });
    return !stepFailed;
  };
  const ModuleRow* runModule = nullptr;  // kNone: a run of ips whose module_id must become NULL
  static const ModuleRow kNone{};
  int64_t runFirst = 0, runLast = 0;
  auto endRun = [&] {
    if (!runModule) return true;
    if (runModule == &kNone) sqlite3_bind_null(setModule.get(), 1);
    else sqlite3_bind_int64(setModule.get(), 1, runModule->id);
    sqlite3_bind_int64(setModule.get(), 2, runFirst);
    sqlite3_bind_int64(setModule.get(), 3, runLast);
    bool ok = sqlite3_step(setModule.get()) == SQLITE_DONE;
    sqlite3_reset(setModule.get());
    runModule = nullptr;
    return ok;
  };
  for (uint32_t i : d.byId) {
    const ModuleRow* m = d.moduleOf[i];
    int64_t ipId = d.ips[i].id;
    if ((m ? m->id : 0) != d.ips[i].module) {
      const ModuleRow* set = m ? m : &kNone;
      if (runModule && (set != runModule || ipId != runLast + 1) && !endRun()) return fail("write ips");
      if (!runModule) {
        runModule = set;
        runFirst = ipId;
      }
      runLast = ipId;
    }
    if (!d.framesOf[i]) continue;
    int depth = 0;
    for (const SymbolFrame& f : *d.framesOf[i]) {
      if (addFrame.full() && !writeFrames()) return fail("write frames");
      addFrame.startRow();
      addFrame.put(ipId);
      addFrame.put(depth++);
      if (f.function.empty()) addFrame.putNull();
      else addFrame.putText(f.function);
      if (f.file.empty()) addFrame.putNull();
      else addFrame.putText(f.file);
      if (f.line > 0) addFrame.put(f.line);
      else addFrame.putNull();
    }
  }
  if (!endRun()) return fail("write ips");
  if (!writeFrames()) return fail("write frames");
  for (const ModuleRow& m : d.modules) {
    auto it = d.buildIds.find(m.path);
    if (it == d.buildIds.end() || it->second.empty()) continue;
    sqlite3_bind_text(setBuildId.get(), 1, it->second.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_int64(setBuildId.get(), 2, m.id);
    if (sqlite3_step(setBuildId.get()) != SQLITE_DONE) return fail("write modules");
    sqlite3_reset(setBuildId.get());
  }
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return fail("commit");
  return true;
}

bool symbolizeRecording(sqlite3* db, SymbolSource& source, SymbolizeStats* stats, std::string* error) {
  SymbolizeJob job;
  if (!job.read(db, error)) return false;
  job.compute(source);
  return job.write(db, stats, error);
}

}  // namespace memledger::recorder
