// The unwind rules (unwind_rules.h): libdw loaded on the first rule computed, the modules whose
// .eh_frame is open, and the DWARF CFI of a pc turned into the few rules the walker follows.
// Everything runs inside a hook's guard: libdw's and libelf's own mallocs pass through untracked.
#include "unwind_rules.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "runtime.h"

namespace memledger::preload::unwind {

std::atomic<Table*> g_table{nullptr};
std::atomic<uint32_t> g_codeGen{1};

namespace {

enum : int { kUntried = 0, kReady = 2, kFailed = 3 };
uint32_t g_tableUsed = 0;  // under g_lock
int g_retired = 0;               // tables given up after dlclose (never unmapped: a reader may
constexpr int kMaxRetired = 16;  // still hold one); past this the own walker stops

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


}  // namespace

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

void retireRules() {
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

}  // namespace memledger::preload::unwind
