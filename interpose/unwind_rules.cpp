// The unwind rules (unwind_rules.h): the modules seen, the table, and the rule of a pc computed
// from its module's .eh_frame where the loader mapped it (eh_frame.cpp). Nothing here allocates
// or loads a library.
#include "unwind_rules.h"

#include <link.h>
#include <sys/mman.h>

#include "eh_frame.h"
#include "runtime.h"

namespace memledger::preload::unwind {

std::atomic<Table*> g_table{nullptr};
std::atomic<uint32_t> g_codeGen{1};

namespace {

uint32_t g_tableUsed = 0;  // under g_lock
int g_retired = 0;               // tables given up after dlclose (never unmapped: a reader may
constexpr int kMaxRetired = 16;  // still hold one); past this the own walker stops

// Guards the table's writers and the module list. Held only around a few loads and stores,
// never across a call (a rule is computed outside it), so a thread waits at most for another
// one's short copy: no fallback to libunwind for a busy lock. A fork child resets it.
std::atomic<bool> g_lock{false};
void lock() {
  while (g_lock.exchange(true, std::memory_order_acquire)) __builtin_ia32_pause();
}
void unlock() { g_lock.store(false, std::memory_order_release); }

// Only while g_tableUsed < kTableMaxUsed (slowRule checks): past that, pcs without a rule go
// to libunwind.
void insert(Table* t, uint64_t key, uint64_t rule) {
  uint32_t i = slotOf(key);
  while (t->slots[i].key.load(std::memory_order_relaxed) != 0) i = (i + 1) & (kTableSlots - 1);
  t->slots[i].rule.store(rule, std::memory_order_relaxed);
  t->slots[i].key.store(key, std::memory_order_release);
  ++g_tableUsed;
}

// ---- modules whose .eh_frame_hdr was looked up (under g_lock)
constexpr int kMaxModules = 512;
EhModule* g_mods = nullptr;
int g_modCount = 0;

struct Found {
  uint64_t pc;
  bool found;
  EhModule m;
};

int findObject(struct dl_phdr_info* info, size_t, void* arg) {
  auto* f = static_cast<Found*>(arg);
  uint64_t lo = UINT64_MAX, hi = 0;
  bool covers = false;
  const uint8_t* hdr = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_GNU_EH_FRAME) hdr = reinterpret_cast<const uint8_t*>(a);
    if (ph.p_type != PT_LOAD) continue;
    if (a < lo) lo = a;
    if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
    if (f->pc >= a && f->pc < a + ph.p_memsz) covers = true;
  }
  if (!covers) return 0;
  f->found = true;
  f->m = EhModule{lo, hi, hdr && reinterpret_cast<uint64_t>(hdr) >= lo ? hdr : nullptr};
  return 1;
}

bool knownModule(uint64_t pc, EhModule* out) {
  for (int i = 0; i < g_modCount; ++i) {
    if (pc >= g_mods[i].lo && pc < g_mods[i].hi) {
      *out = g_mods[i];
      return true;
    }
  }
  return false;
}

// The module holding pc. Its code is on the calling thread's stack, so it stays mapped while
// the rule is computed from it.
bool moduleFor(uint64_t pc, EhModule* out) {
  lock();
  bool known = knownModule(pc, out);
  unlock();
  if (known) return true;
  Found f;
  f.pc = pc;
  f.found = false;
  dl_iterate_phdr(&findObject, &f);
  if (!f.found) return false;  // code outside every module (JIT)
  *out = f.m;
  lock();
  if (!g_mods) {
    void* m = rawMmap(nullptr, kMaxModules * sizeof(EhModule), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) g_mods = static_cast<EhModule*>(m);
  }
  EhModule seen;
  if (g_mods && g_modCount < kMaxModules && !knownModule(pc, &seen)) g_mods[g_modCount++] = f.m;
  unlock();
  return true;
}

// The table to insert into, created on first use (under g_lock).
Table* tableLocked() {
  Table* t = g_table.load(std::memory_order_relaxed);
  if (t || !g_own) return t;
  void* m = rawMmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  t = static_cast<Table*>(m);
  g_tableUsed = 0;
  g_table.store(t, std::memory_order_release);
  return t;
}

}  // namespace

__attribute__((noinline)) uint64_t slowRule(uint64_t key) {
  lock();
  Table* t = tableLocked();
  uint64_t rule = t ? lookup(t, key) : 0;  // another thread may have just added it
  bool full = g_tableUsed >= kTableMaxUsed;
  unlock();
  if (!t || rule || full) return rule;  // full: pcs without a rule go to libunwind
  EhModule m;
  rule = moduleFor(key, &m) ? ehFrameRule(m, key) : uint64_t{kUnknown};
  lock();
  // Not into a table retired meanwhile (dlclose): the rule may be of code unloaded since.
  if (g_table.load(std::memory_order_relaxed) == t && !lookup(t, key) && g_tableUsed < kTableMaxUsed)
    insert(t, key, rule);
  unlock();
  return rule;
}

uint64_t ruleAt(uint64_t pc) {
  EhModule m;
  return moduleFor(pc, &m) ? ehFrameRule(m, pc) : uint64_t{kUnknown};
}

bool fdeRange(uint64_t pc, uint64_t* begin, uint64_t* end) {
  EhModule m;
  return moduleFor(pc, &m) && ehFrameRange(m, pc, begin, end);
}

void retireRules() {
  // Rules of the unloaded code must not serve new code mapped at its addresses: retire the table
  // (readers may still hold it, so it stays mapped) and the modules seen.
  lock();
  if (g_table.load(std::memory_order_relaxed)) {
    g_table.store(nullptr, std::memory_order_release);
    if (++g_retired >= kMaxRetired) g_own = false;
  }
  g_modCount = 0;
  unlock();
}

void rulesResetAfterFork() { g_lock.store(false, std::memory_order_relaxed); }

}  // namespace memledger::preload::unwind
