// The own unwinder and its trace cache (unwinder.h says why and what makes reuse exact), the
// per-pc rules from libdw, and libunwind as the fallback. Everything runs inside a hook's guard:
// libdw's and libelf's own mallocs pass through untracked.
#include "unwinder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime.h"

namespace memledger::preload::unwind {
namespace {

// ---- settings
bool g_own = true;    // MEMLEDGER_UNWIND=libunwind turns the own walker off
bool g_check = false; // MEMLEDGER_UNWIND_CHECK=1
std::atomic<uint64_t> g_checked{0}, g_differ{0}, g_fallbacks{0}, g_reused{0}, g_fresh{0};

// ---- libunwind, dlopen'ed (RTLD_LOCAL) so the program's _Unwind_*/backtrace stay libgcc's
using UnwBacktrace = int (*)(void**, int);
enum : int { kUntried = 0, kLoading = 1, kReady = 2, kFailed = 3 };
std::atomic<int> g_unwState{kUntried};
UnwBacktrace g_unwBacktrace = nullptr;
constexpr int kUnwCachePerThread = 2;  // UNW_CACHE_PER_THREAD

bool loadLibunwind() {
  int state = g_unwState.load(std::memory_order_acquire);
  if (ML_LIKELY(state == kReady)) return true;
  if (state != kUntried) return false;  // failed, or another thread is loading it right now
  int expected = kUntried;
  if (!g_unwState.compare_exchange_strong(expected, kLoading)) return false;
  void* h = R.dlopen ? R.dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL) : nullptr;
  void* fn = h ? dlsym(h, "unw_backtrace") : nullptr;
  if (!fn) {
    writeStderr("memledger: cannot load libunwind.so.8, recording without stacks\n");
    g_unwState.store(kFailed, std::memory_order_release);
    return false;
  }
  // Per-thread caches: the global one takes a lock with signals blocked on every walk.
  auto setPolicy = reinterpret_cast<int (*)(void*, int)>(dlsym(h, "_ULx86_64_set_caching_policy"));
  auto* space = static_cast<void**>(dlsym(h, "_ULx86_64_local_addr_space"));
  if (setPolicy && space) setPolicy(*space, kUnwCachePerThread);
  g_unwBacktrace = reinterpret_cast<UnwBacktrace>(fn);
  g_unwState.store(kReady, std::memory_order_release);
  return true;
}

// unw_backtrace's frames, this library's leading ones dropped. Returns the count kept.
__attribute__((noinline)) int libunwindFrames(uint64_t* out, int max) {
  if (!loadLibunwind()) return 0;
  void* raw[kTraceCap];
  int n = g_unwBacktrace(raw, kTraceCap);
  int first = 0;
  while (first < n && inSelf(reinterpret_cast<uint64_t>(raw[first]))) ++first;
  int count = n - first < max ? n - first : max;
  for (int i = 0; i < count; ++i) out[i] = reinterpret_cast<uint64_t>(raw[first + i]);
  return count;
}

// ---- libdw, dlopen'ed (RTLD_LOCAL) on the first rule computed
struct Dw {
  unsigned (*elf_version)(unsigned);
  Elf* (*elf_begin)(int, Elf_Cmd, Elf*);
  int (*elf_end)(Elf*);
  Dwarf_CFI* (*getcfi_elf)(Elf*);
  int (*cfi_end)(Dwarf_CFI*);
  int (*cfi_addrframe)(Dwarf_CFI*, Dwarf_Addr, Dwarf_Frame**);
  int (*frame_info)(Dwarf_Frame*, Dwarf_Addr*, Dwarf_Addr*, bool*);
  int (*frame_cfa)(Dwarf_Frame*, Dwarf_Op**, size_t*);
  int (*frame_register)(Dwarf_Frame*, int, Dwarf_Op*, Dwarf_Op**, size_t*);
};
Dw D;
int g_dwState = kUntried;  // under g_lock

template <typename T>
bool sym(void* h, T& slot, const char* name) {
  slot = reinterpret_cast<T>(dlsym(h, name));
  return slot != nullptr;
}

bool loadLibdw() {
  if (g_dwState != kUntried) return g_dwState == kReady;
  g_dwState = kFailed;
  void* dw = R.dlopen ? R.dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL) : nullptr;
  void* elf = R.dlopen ? R.dlopen("libelf.so.1", RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!dw || !elf) return false;
  bool ok = sym(elf, D.elf_version, "elf_version") && sym(elf, D.elf_begin, "elf_begin") &&
            sym(elf, D.elf_end, "elf_end") && sym(dw, D.getcfi_elf, "dwarf_getcfi_elf") &&
            sym(dw, D.cfi_end, "dwarf_cfi_end") && sym(dw, D.cfi_addrframe, "dwarf_cfi_addrframe") &&
            sym(dw, D.frame_info, "dwarf_frame_info") && sym(dw, D.frame_cfa, "dwarf_frame_cfa") &&
            sym(dw, D.frame_register, "dwarf_frame_register");
  if (!ok || D.elf_version(EV_CURRENT) == EV_NONE) return false;
  g_dwState = kReady;
  return true;
}

// ---- rules: one 64-bit word per pc (the pc of frame 0, the return address - 1 for the others)
enum : uint64_t {
  kValid = 1ull << 56,
  kRbpBase = 1ull << 57,   // CFA = rbp + off (otherwise rsp + off)
  kRbpSaved = 1ull << 58,  // the caller's rbp is at CFA + rbpOff (otherwise unchanged)
  kEnd = 1ull << 59,       // the return address is undefined: the outermost frame
  kUnknown = 1ull << 60,   // no rule this walker can follow: use unw_backtrace
};
inline int32_t cfaOff(uint64_t r) { return static_cast<int32_t>(r & 0xffffffffu); }
inline int16_t rbpOff(uint64_t r) { return static_cast<int16_t>((r >> 32) & 0xffff); }
inline int8_t raOff(uint64_t r) { return static_cast<int8_t>((r >> 48) & 0xff); }
uint64_t makeRule(uint64_t flags, int32_t cfa, int16_t rbp, int8_t ra) {
  return kValid | flags | static_cast<uint32_t>(cfa) | (uint64_t{static_cast<uint16_t>(rbp)} << 32) |
         (uint64_t{static_cast<uint8_t>(ra)} << 48);
}

struct Slot {
  std::atomic<uint64_t> key;  // written last (release): a reader that sees it sees the rule
  std::atomic<uint64_t> rule;
};
constexpr uint32_t kTableBits = 18;
constexpr uint32_t kTableSlots = 1u << kTableBits;  // 4 MiB mapped, touched as used
constexpr uint32_t kTableMaxUsed = kTableSlots / 2;
struct Table {
  Slot slots[kTableSlots];
};
std::atomic<Table*> g_table{nullptr};
uint32_t g_tableUsed = 0;  // under g_lock
std::atomic<uint32_t> g_codeGen{1};  // bumped when code is unloaded: traces from before go
int g_retired = 0;                   // tables given up after dlclose (never unmapped: a reader
constexpr int kMaxRetired = 16;      // may still hold one); past this the own walker stops

inline uint32_t slotOf(uint64_t key) {
  return static_cast<uint32_t>((key * 0x9e3779b97f4a7c15ull) >> (64 - kTableBits));
}

inline uint64_t lookup(const Table* t, uint64_t key) {
  for (uint32_t i = slotOf(key);; i = (i + 1) & (kTableSlots - 1)) {
    uint64_t k = t->slots[i].key.load(std::memory_order_acquire);
    if (k == key) return t->slots[i].rule.load(std::memory_order_relaxed);
    if (k == 0) return 0;
  }
}

// Only while g_tableUsed < kTableMaxUsed (slowRule checks): past that, pcs without a rule keep
// going to unw_backtrace.
void insert(Table* t, uint64_t key, uint64_t rule) {
  uint32_t i = slotOf(key);
  while (t->slots[i].key.load(std::memory_order_relaxed) != 0) i = (i + 1) & (kTableSlots - 1);
  t->slots[i].rule.store(rule, std::memory_order_relaxed);
  t->slots[i].key.store(key, std::memory_order_release);
  ++g_tableUsed;
}

// One thread computes rules at a time; the others do not wait (they use unw_backtrace).
std::atomic<bool> g_lock{false};
bool tryLock() { return !g_lock.exchange(true, std::memory_order_acquire); }
void unlock() { g_lock.store(false, std::memory_order_release); }

// ---- modules whose .eh_frame is open (under g_lock)
struct Module {
  uint64_t lo, hi, bias;
  int fd;
  Elf* elf;
  Dwarf_CFI* cfi;  // null: no usable CFI (vdso, unreadable file)
};
constexpr int kMaxModules = 512;
Module* g_mods = nullptr;
int g_modCount = 0;

struct Found {
  uint64_t pc;
  bool found;
  uint64_t lo, hi, bias;
  char path[4096];
};

int findObject(struct dl_phdr_info* info, size_t, void* arg) {
  auto* f = static_cast<Found*>(arg);
  uint64_t lo = UINT64_MAX, hi = 0;
  bool covers = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    if (a < lo) lo = a;
    if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
    if (f->pc >= a && f->pc < a + ph.p_memsz) covers = true;
  }
  if (!covers) return 0;
  f->found = true;
  f->lo = lo;
  f->hi = hi;
  f->bias = info->dlpi_addr;
  const char* name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
  size_t len = strlen(name);
  if (len >= sizeof(f->path)) len = sizeof(f->path) - 1;
  memcpy(f->path, name, len);
  f->path[len] = '\0';
  return 1;
}

const Module* moduleFor(uint64_t pc) {
  for (int i = 0; i < g_modCount; ++i)
    if (pc >= g_mods[i].lo && pc < g_mods[i].hi) return &g_mods[i];
  if (!g_mods) {
    void* m = rawMmap(nullptr, kMaxModules * sizeof(Module), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    g_mods = static_cast<Module*>(m);
  }
  if (g_modCount == kMaxModules) return nullptr;
  static Found f;  // under g_lock; 4 KiB is too much for a hook's stack
  f.pc = pc;
  f.found = false;
  dl_iterate_phdr(&findObject, &f);
  if (!f.found) return nullptr;
  Module& m = g_mods[g_modCount];
  m = Module{f.lo, f.hi, f.bias, -1, nullptr, nullptr};
  m.fd = static_cast<int>(syscall(SYS_open, f.path, O_RDONLY | O_CLOEXEC));
  if (m.fd >= 0) m.elf = D.elf_begin(m.fd, ELF_C_READ_MMAP, nullptr);
  if (m.elf) m.cfi = D.getcfi_elf(m.elf);
  ++g_modCount;
  return &m;
}

void closeModules() {
  for (int i = 0; i < g_modCount; ++i) {
    if (g_mods[i].cfi) D.cfi_end(g_mods[i].cfi);
    if (g_mods[i].elf) D.elf_end(g_mods[i].elf);
    if (g_mods[i].fd >= 0) syscall(SYS_close, g_mods[i].fd);
  }
  g_modCount = 0;
}

// "CFA + n" as libdw spells a register's save slot: DW_OP_call_frame_cfa [DW_OP_plus_uconst n].
bool cfaPlus(const Dwarf_Op* ops, size_t n, int64_t* off) {
  if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
    *off = 0;
    return true;
  }
  if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
    *off = static_cast<int64_t>(ops[1].number);
    return true;
  }
  return false;
}

constexpr int kDwarfRbp = 6, kDwarfRsp = 7, kDwarfRa = 16;

uint64_t ruleFromFrame(Dwarf_Frame* f) {
  Dwarf_Addr start, end;
  bool signal = false;
  if (D.frame_info(f, &start, &end, &signal) != kDwarfRa || signal) return kUnknown;
  Dwarf_Op* ops;
  size_t n;
  if (D.frame_cfa(f, &ops, &n) != 0 || n != 1 || ops[0].atom != DW_OP_bregx) return kUnknown;
  if (ops[0].number != kDwarfRsp && ops[0].number != kDwarfRbp) return kUnknown;
  auto cfa = static_cast<int64_t>(ops[0].number2);
  if (cfa < INT32_MIN || cfa > INT32_MAX) return kUnknown;
  uint64_t flags = ops[0].number == kDwarfRbp ? uint64_t{kRbpBase} : uint64_t{0};

  Dwarf_Op mem[3];
  if (D.frame_register(f, kDwarfRa, mem, &ops, &n) != 0) return kUnknown;
  if (n == 0) return ops == mem ? makeRule(kEnd, 0, 0, 0) : kUnknown;  // undefined: outermost
  int64_t ra;
  if (!cfaPlus(ops, n, &ra) || ra < INT8_MIN || ra > INT8_MAX) return kUnknown;

  int64_t rbp = 0;
  if (D.frame_register(f, kDwarfRbp, mem, &ops, &n) != 0) return kUnknown;
  if (n == 0) {
    if (ops == mem) return kUnknown;  // undefined rbp: a later rbp-based CFA could not be found
  } else {
    if (!cfaPlus(ops, n, &rbp) || rbp < INT16_MIN || rbp > INT16_MAX) return kUnknown;
    flags |= kRbpSaved;
  }
  return makeRule(flags, static_cast<int32_t>(cfa), static_cast<int16_t>(rbp), static_cast<int8_t>(ra));
}

uint64_t computeRule(uint64_t key) {
  const Module* m = moduleFor(key);
  if (!m || !m->cfi) return kUnknown;
  Dwarf_Frame* frame = nullptr;
  if (D.cfi_addrframe(m->cfi, key - m->bias, &frame) != 0 || !frame) return kUnknown;
  uint64_t rule = ruleFromFrame(frame);
  free(frame);  // libdw malloc'ed it inside this hook: the guard passes it straight through
  return rule;
}

// The rule for `key`, computed now if needed. 0: not available now (busy, no table): fall back.
__attribute__((noinline)) uint64_t slowRule(uint64_t key) {
  if (!tryLock()) return 0;
  uint64_t rule = 0;
  Table* t = g_table.load(std::memory_order_relaxed);
  if (!t && g_own) {
    void* m = rawMmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      t = static_cast<Table*>(m);
      g_tableUsed = 0;
      g_table.store(t, std::memory_order_release);
    }
  }
  if (t && g_tableUsed >= kTableMaxUsed) {
    rule = lookup(t, key);  // full: pcs without a rule go to unw_backtrace (and its own cache)
  } else if (t && loadLibdw()) {
    rule = lookup(t, key);  // another thread may have just added it
    if (!rule) {
      rule = computeRule(key);
      insert(t, key, rule);
    }
  } else if (g_dwState == kFailed) {
    g_own = false;  // no libdw here: unw_backtrace for good
  }
  unlock();
  return rule;
}

// ---- capture

Captured fallback(Trace* trace, uint64_t* out) {
  if (trace) trace->n = 0;
  g_fallbacks.fetch_add(1, std::memory_order_relaxed);
  Captured c;
  c.n = libunwindFrames(out, wire::kMaxFrames);
  c.hash = c.n > 0 ? wire::hashFrames(out, c.n) : 0;
  c.framesOut = true;
  return c;
}

// A frame just written field by field, copied with the same 8-byte accesses: a struct copy
// becomes 16-byte loads, which cannot be forwarded from the narrower stores still in flight and
// stall until they retire (a quarter of walk()'s time on python3's allocations).
inline void copyFrame(Frame& d, const Frame& s) {
  uint64_t pc = s.pc, rsp = s.rsp, rbp = s.rbp, ra = s.raSlot, rbpSlot = s.rbpSlot, hash = s.hash,
           step = s.step, needs = s.needsRbp;
  asm("" : "+r"(pc), "+r"(rsp), "+r"(rbp), "+r"(ra), "+r"(rbpSlot), "+r"(hash), "+r"(step), "+r"(needs));
  d.pc = pc;
  d.rsp = rsp;
  d.rbp = rbp;
  d.raSlot = ra;
  d.rbpSlot = rbpSlot;
  d.hash = hash;
  d.step = step;
  d.needsRbp = needs;
}

// The reads `rev[r]` and the frames outside it made still give what they gave.
inline bool suffixHolds(const Trace* t, int r) {
  for (int i = r; i >= 0; --i) {
    const Frame& f = t->rev[i];
    if (f.raSlot && *reinterpret_cast<const uint64_t*>(f.raSlot) != (i > 0 ? t->rev[i - 1].pc : 0))
      return false;
    // A saved rbp matters only to a walk that uses it (a program's -O2 code keeps any value there).
    if (f.rbpSlot && t->rev[i - 1].needsRbp && *reinterpret_cast<const uint64_t*>(f.rbpSlot) != t->rev[i - 1].rbp)
      return false;
  }
  return true;
}

// How many of the trace's innermost frames run in this library (the hook, the capture).
int selfFrames(const Trace* t) {
  int n = static_cast<int>(t->n);
  int first = 0;
  while (first < n && inSelf(t->rev[n - 1 - first].pc)) ++first;
  return first;
}

// Sets c from the trace `t` (n frames, all hashes set); frames of this library at the top dropped.
Captured finish(const Trace* t, uint64_t* out) {
  Captured c;
  int n = static_cast<int>(t->n);
  int first = selfFrames(t);
  int count = n - first;
  if (count <= 0) return c;
  if (count <= wire::kMaxFrames) {
    c.n = count;
    c.hash = wire::finalHash(t->rev[n - 1 - first].hash);
    return c;
  }
  // Deeper than a stack record holds: the innermost kMaxFrames, hashed as such.
  c.n = wire::kMaxFrames;
  for (int i = 0; i < c.n; ++i) out[i] = t->rev[n - 1 - first - i].pc;
  c.hash = wire::hashFrames(out, c.n);
  c.framesOut = true;
  return c;
}

void checkAgainstLibunwind(const Trace* trace, const Captured& own, const uint64_t* ownOut);

// Largest frame of this library between a hook and here (walk's own, with the check's buffers).
constexpr uint64_t kSelfFrameMax = 64 * 1024;

__attribute__((noinline)) Captured walk(Trace* t, uint64_t* out) {
  uint64_t pc, rsp, rbp;
  asm volatile("mov %%rsp, %0\n\tmov %%rbp, %1" : "=r"(rsp), "=r"(rbp));
  const Table* table = g_table.load(std::memory_order_acquire);
  uint32_t gen = g_codeGen.load(std::memory_order_acquire);
  if (ML_UNLIKELY(t->gen != gen)) {
    memset(t->hotKey, 0, sizeof(t->hotKey));  // rules of unloaded code must not serve new code
    t->n = 0;
  }
  if (t->truncated) t->n = 0;
  // This library's frames (walk, the capture, the hook) are skipped along the frame-pointer chain:
  // it is built with -fno-omit-frame-pointer, so each of its frames holds the caller's rbp and the
  // return address at [rbp] and [rbp + 8], and its caller's rsp is rbp + 16. The walk starts at the
  // hook's caller. A chain that looks wrong (not above rsp, too far, too long) is not followed.
  for (int k = 0;; ++k) {
    if (ML_UNLIKELY(k == kSkipRoom || rbp <= rsp || rbp - rsp > kSelfFrameMax || (rbp & 7)))
      return fallback(t, out);
    const uint64_t* fp = reinterpret_cast<const uint64_t*>(rbp);
    pc = fp[1];
    rsp = rbp + 16;
    rbp = fp[0];
    if (!inSelf(pc)) break;
  }
  Frame* fresh = t->fresh;
  int j = 0;
  int r = static_cast<int>(t->n) - 1;  // candidate frame of the last trace, innermost first
  int keep = 0;                        // frames of the last trace kept (rev[0 .. keep))
  int retries = 4;
  bool truncated = false;
  for (;;) {
    while (r >= 0 && t->rev[r].rsp < rsp) --r;
    uint64_t key = pc - 1;  // a return address: the call is the instruction before it
    uint32_t hot = static_cast<uint32_t>((key * 0x9e3779b97f4a7c15ull) >> (64 - Trace::kHotBits));
    uint64_t rule;
    if (ML_LIKELY(t->hotKey[hot] == key)) {
      rule = t->hotRule[hot];
    } else {
      rule = table ? lookup(table, key) : 0;
      if (ML_UNLIKELY(!rule)) {
        rule = slowRule(key);
        table = g_table.load(std::memory_order_acquire);
        if (!rule) return fallback(t, out);
      }
      t->hotKey[hot] = key;
      t->hotRule[hot] = rule;
    }
    if (rule & kUnknown) return fallback(t, out);
    // A frame of the last trace at this rsp whose step follows this rule reads the same slots:
    // the same function (often called from another of its call sites), with the same caller,
    // unless those slots changed. A caller's rbp counts only where the walk on uses it.
    if (r >= 0 && t->rev[r].rsp == rsp && t->rev[r].step == rule && (!t->rev[r].needsRbp || t->rev[r].rbp == rbp) &&
        r + 1 + j <= kTraceCap) {
      if (suffixHolds(t, r)) {
        if (t->rev[r].pc == pc) {
          keep = r + 1;
        } else {  // this frame is new, the ones outside it are not
          Frame& f = fresh[j++];
          f = t->rev[r];
          f.pc = pc;
          f.rbp = rbp;
          keep = r;
        }
        break;
      }
      // Not the caller it had (another call site at this depth), or the stack outside changed:
      // try further out, a few times (each try fails at its first changed slot).
      r = --retries > 0 ? r - 1 : -1;
    }
    Frame& f = fresh[j++];
    f.pc = pc;
    f.rsp = rsp;
    f.rbp = rbp;
    f.raSlot = f.rbpSlot = 0;
    f.step = 0;
    if (rule & kEnd) break;
    f.step = rule;
    uint64_t cfa = ((rule & kRbpBase) ? rbp : rsp) + static_cast<int64_t>(cfaOff(rule));
    if (cfa <= rsp) return fallback(t, out);  // the stack must grow towards the caller
    uint64_t raSlot = cfa + static_cast<int64_t>(raOff(rule));
    uint64_t ra = *reinterpret_cast<const uint64_t*>(raSlot);
    if (ra == 0) {  // the outermost frame (the step read the zero, so it is checked on reuse)
      f.raSlot = raSlot;
      break;
    }
    if (j == kTraceCap) {
      truncated = true;
      break;
    }
    f.raSlot = raSlot;
    if (rule & kRbpSaved) {
      f.rbpSlot = cfa + static_cast<int64_t>(rbpOff(rule));
      rbp = *reinterpret_cast<const uint64_t*>(f.rbpSlot);
    }
    pc = ra;
    rsp = cfa;
  }
  // rev = the kept outer frames, then the fresh ones outermost first; hashes from the outside in.
  uint64_t h = keep > 0 ? t->rev[keep - 1].hash : wire::kHashSeed;
  bool needs = keep > 0 && t->rev[keep - 1].needsRbp;
  for (int i = j - 1; i >= 0; --i) {
    Frame& dst = t->rev[keep + (j - 1 - i)];
    copyFrame(dst, fresh[i]);
    h = wire::hashStep(h, dst.pc);
    dst.hash = h;
    needs = (dst.step & kRbpBase) || (!(dst.step & kRbpSaved) && needs);
    dst.needsRbp = needs ? 1 : 0;
  }
  t->n = static_cast<uint32_t>(keep + j);
  t->truncated = truncated ? 1 : 0;
  t->gen = gen;
  Captured c = finish(t, out);
  if (ML_UNLIKELY(g_check)) {
    if (keep) g_reused.fetch_add(1, std::memory_order_relaxed);
    g_fresh.fetch_add(static_cast<uint64_t>(j), std::memory_order_relaxed);
    Captured seen = c;  // by address: c itself stays in registers (see Captured)
    checkAgainstLibunwind(t, seen, out);
  }
  return c;
}

void hex(char*& p, uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  char tmp[16];
  int n = 0;
  do tmp[n++] = digits[v & 15]; while ((v >>= 4) != 0);
  while (n) *p++ = tmp[--n];
}

void checkAgainstLibunwind(const Trace* t, const Captured& own, const uint64_t* ownOut) {
  uint64_t mine[wire::kMaxFrames];
  if (own.framesOut) memcpy(mine, ownOut, sizeof(uint64_t) * own.n);
  else framesOf(t, own, mine);
  uint64_t theirs[wire::kMaxFrames];
  int n = libunwindFrames(theirs, wire::kMaxFrames);
  g_checked.fetch_add(1, std::memory_order_relaxed);
  // libunwind's walk starts in this function: its innermost frame is the call site below,
  // ours is walk()'s caller. Compare from the first frame outside this library, which both drop.
  bool same = n == own.n && memcmp(mine, theirs, sizeof(uint64_t) * n) == 0;
  if (same) return;
  if (g_differ.fetch_add(1, std::memory_order_relaxed) >= 3) return;
  char line[4096];
  char* p = line;
  const char* head = "memledger: unwind check: own";
  memcpy(p, head, strlen(head));
  p += strlen(head);
  for (int i = 0; i < own.n && p < line + 1900; ++i) *p++ = ' ', hex(p, mine[i]);
  const char* mid = " | libunwind";
  memcpy(p, mid, strlen(mid));
  p += strlen(mid);
  for (int i = 0; i < n && p < line + 3900; ++i) *p++ = ' ', hex(p, theirs[i]);
  *p++ = '\n';
  *p = '\0';
  writeStderr(line);
}

}  // namespace

void init() {
  const char* mode = getenv("MEMLEDGER_UNWIND");
  g_own = !(mode && strcmp(mode, "libunwind") == 0);
  const char* check = getenv("MEMLEDGER_UNWIND_CHECK");
  g_check = check && strcmp(check, "1") == 0;
}

Captured capture(Trace* trace, uint64_t* out) {
  // libunwind is loaded by the first capture of the process, before the program has threads that
  // could all need the fallback at once: while one thread loads it, the others would get no stack
  // (64 threads racing on the rule lock each lost a stack that way).
  if (ML_UNLIKELY(g_unwState.load(std::memory_order_acquire) != kReady)) loadLibunwind();
  if (!trace || !g_own) return fallback(trace, out);
  return walk(trace, out);
}

void framesOf(const Trace* t, const Captured& c, uint64_t* out) {
  int n = static_cast<int>(t->n);
  int first = selfFrames(t);
  for (int i = 0; i < c.n; ++i) out[i] = t->rev[n - 1 - first - i].pc;
}

void codeUnloaded() {
  g_codeGen.fetch_add(1, std::memory_order_acq_rel);
  // Rules of the unloaded code must not serve new code mapped at its addresses: retire the table
  // (readers may still hold it, so it stays mapped) and the modules' open files.
  for (int spins = 0; !tryLock(); ++spins) {
    if (spins > 1000000) {  // held by a thread that no longer exists (fork): stop for good
      g_own = false;
      return;
    }
    __builtin_ia32_pause();
  }
  if (g_table.load(std::memory_order_relaxed)) {
    g_table.store(nullptr, std::memory_order_release);
    if (++g_retired >= kMaxRetired) g_own = false;
  }
  if (g_dwState == kReady) closeModules();
  unlock();
}

__attribute__((destructor)) void reportAtExit() { reportCheck(); }

void reportCheck() {
  if (!g_check) return;
  char line[160];
  snprintf(line, sizeof(line),
           "memledger: unwind check: %llu stacks compared, %llu differ (%llu reused a known outer part, "
           "%llu frames walked, %llu by libunwind alone)\n",
           static_cast<unsigned long long>(g_checked.load()), static_cast<unsigned long long>(g_differ.load()),
           static_cast<unsigned long long>(g_reused.load()), static_cast<unsigned long long>(g_fresh.load()),
           static_cast<unsigned long long>(g_fallbacks.load()));
  writeStderr(line);
}

}  // namespace memledger::preload::unwind
