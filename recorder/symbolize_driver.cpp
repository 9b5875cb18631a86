#include "symbolize_driver.h"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

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

bool symbolizeRecording(sqlite3* db, SymbolSource& source, SymbolizeStats* stats, std::string* error) {
  SymbolizeStats local;
  SymbolizeStats& st = stats ? *stats : local;
  auto fail = [&](const char* what) {
    *error = std::string(what) + ": " + sqlite3_errmsg(db);
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return false;
  };

  std::map<int64_t, ImageRow> images;
  {
    Stmt q(db, "SELECT id, parent_id, forked, start_ns, exe FROM processes");
    if (!q) return fail("read processes");
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
      ImageRow r;
      if (sqlite3_column_type(q.get(), 1) != SQLITE_NULL) r.parent = sqlite3_column_int64(q.get(), 1);
      r.forked = sqlite3_column_int(q.get(), 2) != 0;
      r.start_ns = static_cast<uint64_t>(sqlite3_column_int64(q.get(), 3));
      r.exe = columnText(q.get(), 4);
      images[sqlite3_column_int64(q.get(), 0)] = r;
    }
  }
  std::vector<ModuleRow> modules;
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
      if (m.path.empty() && images.count(m.image)) m.path = images[m.image].exe;
      modules.push_back(std::move(m));
    }
  }
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
    uint64_t at = images.count(image) ? images[image].start_ns : 0;
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

  if (sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) return fail("begin");
  Stmt setModule(db, "UPDATE ips SET module_id = ? WHERE id = ?");
  Stmt addFrame(db, "INSERT OR REPLACE INTO frames(ip_id, depth, function, file, line) VALUES (?,?,?,?,?)");
  Stmt setBuildId(db, "UPDATE modules SET build_id = ? WHERE id = ?");
  if (!setModule || !addFrame || !setBuildId) return fail("prepare");

  std::map<std::string, int> pathIds;
  std::map<std::pair<int, uint64_t>, std::vector<SymbolFrame>> cache;
  {
    Stmt q(db, "SELECT id, image_id, address FROM ips ORDER BY image_id, address");
    if (!q) return fail("read ips");
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
      ++st.ips;
      int64_t ipId = sqlite3_column_int64(q.get(), 0);
      int64_t image = sqlite3_column_int64(q.get(), 1);
      uint64_t address = static_cast<uint64_t>(sqlite3_column_int64(q.get(), 2));
      const ModuleRow* m = indexFor(image).find(address);
      if (!m) continue;  // no frames: readers show the raw address
      ++st.withModule;
      sqlite3_bind_int64(setModule.get(), 1, m->id);
      sqlite3_bind_int64(setModule.get(), 2, ipId);
      if (sqlite3_step(setModule.get()) != SQLITE_DONE) return fail("write ips");
      sqlite3_reset(setModule.get());

      int pid = pathIds.emplace(m->path, static_cast<int>(pathIds.size())).first->second;
      // A return address points after the call: ip - 1 lies in the calling line.
      uint64_t rel = address - m->bias - (address > m->bias ? 1 : 0);
      auto [it, isNew] = cache.try_emplace({pid, rel});
      if (isNew) {
        ++st.lookups;
        it->second = source.symbolize(m->path, rel);
        if (it->second.empty()) it->second.emplace_back();
      }
      if (!it->second.front().function.empty() || it->second.size() > 1) ++st.resolved;
      int depth = 0;
      for (const SymbolFrame& f : it->second) {
        sqlite3_stmt* s = addFrame.get();
        sqlite3_bind_int64(s, 1, ipId);
        sqlite3_bind_int(s, 2, depth++);
        if (f.function.empty()) sqlite3_bind_null(s, 3);
        else sqlite3_bind_text(s, 3, f.function.c_str(), -1, SQLITE_TRANSIENT);
        if (f.file.empty()) sqlite3_bind_null(s, 4);
        else sqlite3_bind_text(s, 4, f.file.c_str(), -1, SQLITE_TRANSIENT);
        if (f.line > 0) sqlite3_bind_int(s, 5, f.line);
        else sqlite3_bind_null(s, 5);
        if (sqlite3_step(s) != SQLITE_DONE) return fail("write frames");
        sqlite3_reset(s);
      }
    }
  }
  std::map<std::string, std::string> buildIds;
  for (const ModuleRow& m : modules) {
    if (m.path.empty()) continue;
    auto [it, isNew] = buildIds.try_emplace(m.path);
    if (isNew) it->second = source.buildId(m.path);
    if (it->second.empty()) continue;
    sqlite3_bind_text(setBuildId.get(), 1, it->second.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(setBuildId.get(), 2, m.id);
    if (sqlite3_step(setBuildId.get()) != SQLITE_DONE) return fail("write modules");
    sqlite3_reset(setBuildId.get());
  }
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return fail("commit");
  return true;
}

}  // namespace memledger::recorder
