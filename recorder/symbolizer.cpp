// Symbolizer: libdw (elfutils) for DWARF with inline chains, the ELF symbol table as fallback.
//
// One Dwfl session per module, each reporting its module at load bias 0, so the module-relative
// addresses the recorder stores are the file's own virtual addresses (ET_DYN and ET_EXEC alike).
// A shared session would make modules overlap at bias 0. Everything is lazy: a module is opened on
// its first address, its DWARF is read on the first lookup that needs it (libdwfl finds separate
// debug files by build id and .gnu_debuglink then), its symbol table is indexed on the first
// lookup that falls back to it, and every answer is cached per (module, address).
#include "recorder/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace memledger::recorder {
namespace {

// Offline session: the file is named explicitly, debug info is searched in the standard places
// (the file's directory, its .debug/ folder, /usr/lib/debug and /usr/lib/debug/.build-id).
const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  // Only Itanium-mangled names: __cxa_demangle would also "demangle" plain C names like "f" as types.
  if (name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && out != nullptr) {
      std::string result(out);
      std::free(out);
      return result;
    }
    std::free(out);
  }
  return name;
}

const char* attrString(Dwarf_Die* die, unsigned int name) {
  Dwarf_Attribute attr;
  // _integrate follows DW_AT_abstract_origin and DW_AT_specification: inlined instances and
  // out-of-line member definitions carry their names only on the DIE they refer to.
  if (dwarf_attr_integrate(die, name, &attr) == nullptr) return nullptr;
  return dwarf_formstring(&attr);
}

// The linkage name demangles to the qualified signature ("ns::f(int)"); DW_AT_name alone would
// be "f". C functions have no linkage name, and neither have GCC's out-of-line constructors and
// destructors (their C1/C2 and D1/D2 variants share one DIE).
const char* linkageName(Dwarf_Die* die) {
  const char* name = attrString(die, DW_AT_linkage_name);
  return name != nullptr ? name : attrString(die, DW_AT_MIPS_linkage_name);
}

bool isFunctionScope(int tag) {
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
         tag == DW_TAG_entry_point;
}

// DIEs that own code ranges and may nest further code-bearing DIEs.
bool isCodeScope(int tag) {
  return isFunctionScope(tag) || tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
         tag == DW_TAG_catch_block;
}

// DIEs without ranges whose children may still be function definitions (clang nests definitions
// of namespace members in the namespace DIE, GCC those of local classes; Fortran modules).
bool isContainer(int tag) {
  return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
         tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

// The code scopes of one CU (functions, inlined instances, blocks) as a tree whose children's
// address ranges are sorted, built in one walk the first time an address falls into the CU.
// A per-query walk (what dwarf_getscopes does) costs a full pass over the CU's top-level DIEs:
// ~6 ms per address on a CU that includes CLI11, nlohmann/json and <regex>; the index answers in
// a few binary searches. Only CUs that are hit get indexed, so huge debug info stays cheap.
class ScopeIndex {
 public:
  explicit ScopeIndex(Dwarf_Die* cu) {
    nodes_.push_back({*cu, 0, 0});
    build(cu, 0, nullptr);
  }

  // The chain of scopes containing pc, outermost first.
  void find(Dwarf_Addr pc, std::vector<Dwarf_Die>& chain) const {
    uint32_t node = 0;
    for (int depth = 0; depth < 256; ++depth) {
      const Node& n = nodes_[node];
      auto begin = ranges_.begin() + n.childBegin, end = ranges_.begin() + n.childEnd;
      auto it = std::upper_bound(begin, end, pc, [](Dwarf_Addr a, const Range& r) { return a < r.low; });
      // Siblings' ranges are disjoint in sane DWARF; a few steps back tolerate the odd overlap.
      const Range* hit = nullptr;
      for (int steps = 0; it != begin && steps < 8 && hit == nullptr; ++steps) {
        --it;
        if (pc < it->high) hit = &*it;
      }
      if (hit == nullptr) return;
      node = hit->node;
      chain.push_back(nodes_[node].die);
    }
  }

 private:
  struct Node {
    Dwarf_Die die;
    uint32_t childBegin, childEnd;  // the node's children's ranges: ranges_[childBegin, childEnd)
  };
  struct Range {
    Dwarf_Addr low, high;
    uint32_t node;
  };

  // Collects the code scopes below `parent` as children of node `owner`, then stores their ranges
  // as one sorted block (after the grandchildren's blocks: post-order keeps each block contiguous).
  // `root` gathers the CU's own children: every function with code is one, wherever its DIE sits.
  void build(Dwarf_Die* parent, uint32_t owner, std::vector<Range>* root) {
    std::vector<Range> children;
    collect(parent, owner, children, root != nullptr ? *root : children);
    std::sort(children.begin(), children.end(), [](const Range& a, const Range& b) { return a.low < b.low; });
    nodes_[owner].childBegin = static_cast<uint32_t>(ranges_.size());
    ranges_.insert(ranges_.end(), children.begin(), children.end());
    nodes_[owner].childEnd = static_cast<uint32_t>(ranges_.size());
  }

  void collect(Dwarf_Die* parent, uint32_t owner, std::vector<Range>& out, std::vector<Range>& root) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      if (isCodeScope(tag)) {
        // A function nested in another scope (a lambda's operator() inside its enclosing
        // function's DIE, a local class's methods) is still code of its own, outside its parent's
        // ranges: it hangs off the CU. Inlined instances and blocks lie within their parent.
        std::vector<Range>& into = tag == DW_TAG_subprogram ? root : out;
        const size_t before = into.size();
        const uint32_t node = static_cast<uint32_t>(nodes_.size());
        Dwarf_Addr base = 0, low = 0, high = 0;
        for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &low, &high)) > 0;)
          if (high > low) into.push_back({low, high, node});
        if (into.size() > before) {
          nodes_.push_back({child, 0, 0});
          build(&child, node, &root);
        } else {
          // No code of its own (a declaration, an abstract instance, a block GCC left without
          // ranges), yet local classes inside it may hold functions with code.
          collect(&child, owner, out, root);
        }
      } else if (isContainer(tag)) {
        collect(&child, owner, out, root);
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  std::vector<Node> nodes_;  // nodes_[0] is the CU
  std::vector<Range> ranges_;
};

// libdw joins the line table's directory and file name. In DWARF 5 directory 0 is the compile
// directory, so the result may already start with DW_AT_comp_dir; other relative directories are
// relative to it. Distributions map the build directory to "." (glibc: "./stdlib"), so a path may
// stay relative: it is then relative to the package's source root.
std::string normalizePath(const char* file, const char* compDir) {
  if (file == nullptr) return {};
  std::string path(file);
  if (!path.empty() && path[0] != '/' && compDir != nullptr && compDir[0] != '\0') {
    const size_t dirLength = std::strlen(compDir);
    const bool joined = path.compare(0, dirLength, compDir) == 0 && path.size() > dirLength &&
                        path[dirLength] == '/';
    if (!joined) path = std::string(compDir) + "/" + path;
  }
  if (path.find("/./") != std::string::npos || path.find("/../") != std::string::npos ||
      path.starts_with("./"))
    path = std::filesystem::path(path).lexically_normal().string();
  return path;
}

// A function symbol with the range it covers, indexed once per module. The name points into
// the ELF string table, which lives as long as the Dwfl session.
struct FunctionSymbol {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  const char* name = nullptr;
  int rank = 0;  // among aliases at one address, lower wins
};

int bindingRank(unsigned char binding, const char* name) {
  // Aliases (malloc/__libc_malloc, memcpy/__memcpy_avx...): prefer the public global name.
  int rank = binding == STB_GLOBAL ? 0 : binding == STB_WEAK ? 4 : 8;
  while (*name == '_' && rank < 12) {
    ++rank;
    ++name;
  }
  return rank;
}

// A compile unit's address range, for modules without (complete) .debug_aranges.
struct CuRange {
  uint64_t low = 0, high = 0;  // module addresses, high exclusive
  Dwarf_Die* cu = nullptr;     // owned by the Dwfl session
  Dwarf_Addr bias = 0;
};

}  // namespace

// Open libdw sessions are capped: each holds a descriptor or two (the file, its debug file) and
// its mappings, and a PyTorch process maps hundreds of libraries while the usual descriptor limit
// is 1024. The least recently used session is closed; its answers stay cached.
constexpr size_t kMaxOpenSessions = 128;

struct Symbolizer::Impl {
  // Everything that points into libdw's data for one module; dropped together when closed.
  struct Session {
    Dwfl* dwfl = nullptr;
    Dwfl_Module* mod = nullptr;
    bool symbolsIndexed = false;
    std::vector<FunctionSymbol> symbols;  // sorted by start
    std::unordered_map<Dwarf_Off, std::unique_ptr<ScopeIndex>> scopes;  // by CU DIE offset
    bool cuRangesBuilt = false;
    std::vector<CuRange> cuRanges;  // sorted by low; only built when .debug_aranges falls short

    Session() = default;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    ~Session() {
      if (dwfl != nullptr) dwfl_end(dwfl);
    }
  };

  // Everything below is guarded by `mu` except a checked-out session, which only the thread that
  // checked it out touches (libdw data is not safe to share; the answers are).
  struct Module {
    std::unique_ptr<Session> session;  // null while closed or checked out
    bool unreadable = false;           // a cached failure: missing file, not ELF
    bool inUse = false;                // a thread has the session checked out (or is opening it)
    clockid_t userClock = 0;           // that thread's CPU clock: is it making progress?
    uint64_t generation = 0;           // bumped by a take-over: the session checked out is dropped
    uint64_t lastUse = 0;
    std::unordered_map<uint64_t, std::vector<SymbolFrame>> frames;
    bool buildIdKnown = false;
    std::string buildId;
  };

  std::mutex mu;
  std::condition_variable returned;  // a session was checked back in (or taken over)
  std::unordered_map<std::string, Module> modules;  // element references survive rehashing
  size_t openSessions = 0;  // counts checked-out sessions too
  uint64_t clock = 0;

  // A session checked out to the calling thread. `session` null: the file cannot be read.
  struct Lease {
    Module* module = nullptr;
    std::unique_ptr<Session> session;
    uint64_t generation = 0;
  };

  static clockid_t threadClock() {
    clockid_t id = CLOCK_THREAD_CPUTIME_ID;
    pthread_getcpuclockid(pthread_self(), &id);
    return id;
  }

  static int64_t cpuNs(clockid_t id) {
    timespec ts;
    if (clock_gettime(id, &ts) != 0) return -1;
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  // Waits (lock held) until m is no longer in use, as long as its user makes progress: a thread
  // holding a module runs one lookup at a time, but at SCHED_IDLE on a busy machine one lookup (a
  // debug file to decompress) may take seconds of wall time. Then the module is taken over: its
  // user's session will be dropped when it comes back, and the caller opens a fresh one.
  void waitForModule(std::unique_lock<std::mutex>& lock, Module& m) {
    constexpr auto kSlice = std::chrono::milliseconds(5);
    constexpr int64_t kMinProgressNs = 1'000'000;  // CPU the user must get per slice (20%)
    constexpr int kMaxSlices = 400;                // 2 s at most, whatever the progress
    const uint64_t generation = m.generation;
    const clockid_t user = m.userClock;
    int64_t before = cpuNs(user);
    for (int slice = 0; slice < kMaxSlices; ++slice) {
      if (returned.wait_for(lock, kSlice, [&] { return !m.inUse || m.generation != generation; }))
        return;
      const int64_t now = cpuNs(user);
      if (before < 0 || now < 0 || now - before < kMinProgressNs) break;
      before = now;
    }
    ++m.generation;  // take over
    m.inUse = false;
    returned.notify_all();
  }

  // Checks the module's session out to the calling thread (lock held on entry and on return),
  // opening it if needed (the lock is released meanwhile).
  Lease checkOut(std::unique_lock<std::mutex>& lock, const std::string& path, Module& m) {
    Lease lease;
    lease.module = &m;
    m.inUse = true;
    m.userClock = threadClock();
    m.lastUse = ++clock;
    lease.generation = m.generation;
    lease.session = std::move(m.session);
    if (lease.session == nullptr) {
      if (openSessions >= kMaxOpenSessions) closeLeastRecentlyUsed();
      ++openSessions;
      lock.unlock();
      std::unique_ptr<Session> opened = open(path);
      lock.lock();
      lease.session = std::move(opened);
      if (lease.session == nullptr) {
        --openSessions;
        m.unreadable = true;
      }
    }
    return lease;
  }

  // Returns a checked-out session (lock held). A session whose module was taken over meanwhile is
  // handed back to the caller to be closed after the lock is released.
  std::unique_ptr<Session> checkIn(Lease& lease) {
    Module& m = *lease.module;
    if (lease.generation == m.generation) {
      m.inUse = false;
      m.session = std::move(lease.session);
      returned.notify_all();
      return nullptr;
    }
    if (lease.session != nullptr) --openSessions;
    return std::move(lease.session);
  }

  void closeLeastRecentlyUsed() {
    Module* oldest = nullptr;
    for (auto& [path, m] : modules)
      if (m.session != nullptr && (oldest == nullptr || m.lastUse < oldest->lastUse)) oldest = &m;
    if (oldest == nullptr) return;
    oldest->session.reset();
    --openSessions;
  }

  // The frames for (path, address): cached, else looked up with the module checked out. `wait`
  // false: returns nullopt at once when another thread uses the module.
  std::optional<std::vector<SymbolFrame>> answer(const std::string& path, uint64_t address, bool wait) {
    std::unique_lock<std::mutex> lock(mu);
    Module& m = modules[path];
    while (true) {
      auto cached = m.frames.find(address);
      if (cached != m.frames.end()) return cached->second;
      if (m.unreadable) return std::vector<SymbolFrame>{SymbolFrame{}};
      if (!m.inUse) break;
      if (!wait) return std::nullopt;
      waitForModule(lock, m);
    }
    Lease lease = checkOut(lock, path, m);
    if (lease.session == nullptr) {
      checkIn(lease);
      return std::vector<SymbolFrame>{SymbolFrame{}};
    }
    lock.unlock();
    std::vector<SymbolFrame> frames = resolve(*lease.session, address);
    lock.lock();
    m.frames.emplace(address, frames);
    std::unique_ptr<Session> dropped = checkIn(lease);
    lock.unlock();
    return frames;  // `dropped` (a taken-over module's old session) closes here, unlocked
  }

  static std::unique_ptr<Session> open(const std::string& path) {
    if (path.empty()) return nullptr;
    auto s = std::make_unique<Session>();
    s->dwfl = dwfl_begin(&kOfflineCallbacks);
    if (s->dwfl == nullptr) return nullptr;
    dwfl_report_begin(s->dwfl);
    // ET_DYN at base 0 with add_p_vaddr: module addresses are the file's p_vaddr-based addresses,
    // i.e. exactly runtime address - load bias. ET_EXEC ignores the base and is placed as linked.
    s->mod = dwfl_report_elf(s->dwfl, path.c_str(), path.c_str(), -1, 0, true);
    dwfl_report_end(s->dwfl, nullptr, nullptr);
    return s->mod != nullptr ? std::move(s) : nullptr;
  }

  static void indexSymbols(Session& m) {
    m.symbolsIndexed = true;
    // dwfl picks the best table: .symtab of a separate debug file or of the file itself, else
    // .dynsym (plus .gnu_debugdata when present): exported functions are always in it.
    const int count = dwfl_module_getsymtab(m.mod);
    if (count <= 0) return;
    m.symbols.reserve(static_cast<size_t>(count));
    for (int i = 1; i < count; ++i) {
      GElf_Sym sym;
      GElf_Addr addr = 0;
      const char* name = dwfl_module_getsym_info(m.mod, i, &sym, &addr, nullptr, nullptr, nullptr);
      if (name == nullptr || name[0] == '\0' || sym.st_shndx == SHN_UNDEF) continue;
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
      m.symbols.push_back({addr, addr + sym.st_size, name, bindingRank(GELF_ST_BIND(sym.st_info), name)});
    }
    std::sort(m.symbols.begin(), m.symbols.end(), [](const FunctionSymbol& a, const FunctionSymbol& b) {
      return a.start != b.start ? a.start < b.start : a.rank < b.rank;
    });
    // A sizeless symbol (hand-written assembly) covers up to the next symbol.
    for (size_t i = 0; i < m.symbols.size(); ++i) {
      if (m.symbols[i].end != m.symbols[i].start) continue;
      size_t next = i + 1;
      while (next < m.symbols.size() && m.symbols[next].start == m.symbols[i].start) ++next;
      m.symbols[i].end = next < m.symbols.size() ? m.symbols[next].start : m.symbols[i].start + 1;
    }
  }

  // The symbol table's function containing `address`, demangled; empty when none.
  static std::string symbolName(Session& m, uint64_t address) { return demangle(rawSymbol(m, address)); }

  static const char* rawSymbol(Session& m, uint64_t address) {
    if (!m.symbolsIndexed) indexSymbols(m);
    auto it = std::upper_bound(m.symbols.begin(), m.symbols.end(), address,
                               [](uint64_t a, const FunctionSymbol& s) { return a < s.start; });
    // Walk back over symbols starting at or before `address`: a nested or overlapping symbol
    // (an alias with a smaller size, a .cold part) may end before it while an earlier one covers it.
    const FunctionSymbol* best = nullptr;
    for (int steps = 0; it != m.symbols.begin() && steps < 64; ++steps) {
      --it;
      if (address < it->end) {
        if (best == nullptr || it->start > best->start ||
            (it->start == best->start && it->rank < best->rank))
          best = &*it;
      }
      if (best != nullptr && it->start < best->start) break;
    }
    return best != nullptr ? best->name : nullptr;
  }

  // libdw finds CUs through .debug_aranges, which clang (and rustc) do not emit by default. The
  // fallback reads every CU DIE's ranges once: CU headers only, no full DIE trees.
  static Dwarf_Die* cuFromRanges(Session& m, uint64_t address, Dwarf_Addr* bias) {
    if (!m.cuRangesBuilt) {
      m.cuRangesBuilt = true;
      Dwarf_Addr cuBias = 0;
      for (Dwarf_Die* cu = nullptr; (cu = dwfl_module_nextcu(m.mod, cu, &cuBias)) != nullptr;) {
        Dwarf_Addr base = 0, low = 0, high = 0;
        for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &low, &high)) > 0;)
          if (high > low) m.cuRanges.push_back({low + cuBias, high + cuBias, cu, cuBias});
      }
      std::sort(m.cuRanges.begin(), m.cuRanges.end(),
                [](const CuRange& a, const CuRange& b) { return a.low < b.low; });
    }
    auto it = std::upper_bound(m.cuRanges.begin(), m.cuRanges.end(), address,
                               [](uint64_t a, const CuRange& r) { return a < r.low; });
    // CU ranges may overlap (code of discarded COMDAT sections keeps ranges at 0): look back a bit.
    for (int steps = 0; it != m.cuRanges.begin() && steps < 16; ++steps) {
      --it;
      if (address < it->high) {
        *bias = it->bias;
        return it->cu;
      }
    }
    return nullptr;
  }

  static std::vector<SymbolFrame> resolve(Session& m, uint64_t address) {
    std::vector<SymbolFrame> frames;
    Dwarf_Addr bias = 0;
    Dwarf_Die* cu = dwfl_module_addrdie(m.mod, address, &bias);
    if (cu == nullptr) cu = cuFromRanges(m, address, &bias);
    if (cu == nullptr) {
      frames.push_back({symbolName(m, address), {}, 0});
      return frames;
    }
    Dwarf_Die cuDie = *cu;
    const Dwarf_Addr pc = address - bias;
    Dwarf_Attribute compDirAttr;
    const char* compDir = dwarf_formstring(dwarf_attr(&cuDie, DW_AT_comp_dir, &compDirAttr));

    auto& index = m.scopes[dwarf_dieoffset(&cuDie)];
    if (!index) index = std::make_unique<ScopeIndex>(&cuDie);
    std::vector<Dwarf_Die> chain;
    index->find(pc, chain);
    std::vector<Dwarf_Die*> functions;  // innermost first
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      if (isFunctionScope(dwarf_tag(&*it))) functions.push_back(&*it);

    // The innermost frame's position is the line table's row for pc.
    SymbolFrame inner;
    if (Dwarf_Line* line = dwarf_getsrc_die(&cuDie, pc)) {
      inner.file = normalizePath(dwarf_linesrc(line, nullptr, nullptr), compDir);
      dwarf_lineno(line, &inner.line);
    }
    if (functions.empty()) {
      // Code with line info but no function DIE (assembly with -g, a CU without subprograms).
      inner.function = symbolName(m, address);
      frames.push_back(std::move(inner));
      return frames;
    }

    Dwarf_Files* files = nullptr;
    size_t fileCount = 0;
    if (dwarf_getsrcfiles(&cuDie, &files, &fileCount) != 0) files = nullptr;

    frames.push_back(std::move(inner));
    for (size_t i = 0; i < functions.size(); ++i) {
      const bool physical = dwarf_tag(functions[i]) != DW_TAG_inlined_subroutine;
      if (frames.back().function.empty()) {
        if (const char* linkage = linkageName(functions[i])) {
          frames.back().function = demangle(linkage);
        } else {
          // A mangled symbol is qualified ("ns::A::~A()") where DW_AT_name is not; an unmangled
          // one is the DW_AT_name, perhaps with a clone suffix ("main.cold") best left out.
          const char* symbol = physical ? rawSymbol(m, address) : nullptr;
          const char* name = attrString(functions[i], DW_AT_name);
          frames.back().function =
              demangle(symbol != nullptr && (std::strncmp(symbol, "_Z", 2) == 0 || name == nullptr) ? symbol : name);
        }
      }
      if (physical) break;
      // An inlined instance says where its caller called it: that is the caller's position.
      SymbolFrame caller;
      Dwarf_Attribute attr;
      Dwarf_Word value = 0;
      if (files != nullptr && dwarf_formudata(dwarf_attr(functions[i], DW_AT_call_file, &attr), &value) == 0)
        caller.file = normalizePath(dwarf_filesrc(files, value, nullptr, nullptr), compDir);
      if (dwarf_formudata(dwarf_attr(functions[i], DW_AT_call_line, &attr), &value) == 0)
        caller.line = static_cast<int>(value);
      // Inlined code whose physical function has no DIE (broken or partial DWARF): the symbol
      // table still names the function the code lives in.
      if (i + 1 == functions.size()) caller.function = symbolName(m, address);
      frames.push_back(std::move(caller));
    }
    return frames;
  }
};

Symbolizer::Symbolizer() : impl_(std::make_unique<Impl>()) {}
Symbolizer::~Symbolizer() = default;

std::vector<SymbolFrame> Symbolizer::symbolize(const std::string& modulePath, uint64_t address) {
  return *impl_->answer(modulePath, address, true);
}

bool Symbolizer::prefetch(const std::string& modulePath, uint64_t address) {
  return impl_->answer(modulePath, address, false).has_value();
}

std::string Symbolizer::buildId(const std::string& modulePath) {
  Impl& impl = *impl_;
  std::unique_lock<std::mutex> lock(impl.mu);
  Impl::Module& m = impl.modules[modulePath];
  while (!m.buildIdKnown && !m.unreadable && m.inUse) impl.waitForModule(lock, m);
  if (m.buildIdKnown) return m.buildId;
  if (m.unreadable) return {};
  Impl::Lease lease = impl.checkOut(lock, modulePath, m);
  std::string hex;
  if (lease.session != nullptr) {
    lock.unlock();
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int length = dwfl_module_build_id(lease.session->mod, &bits, &vaddr);
    if (length > 0 && bits != nullptr) {
      static const char kHex[] = "0123456789abcdef";
      hex.reserve(static_cast<size_t>(length) * 2);
      for (int i = 0; i < length; ++i) {
        hex.push_back(kHex[bits[i] >> 4]);
        hex.push_back(kHex[bits[i] & 0xf]);
      }
    }
    lock.lock();
  }
  m.buildIdKnown = true;
  m.buildId = hex;
  std::unique_ptr<Impl::Session> dropped = impl.checkIn(lease);
  lock.unlock();
  return hex;
}

}  // namespace memledger::recorder
