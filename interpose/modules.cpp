// The loaded objects, as Module / ModuleGone records, so the recorder can symbolize stacks after
// the process is gone. A sorted table of what was last reported; a rescan (dl_iterate_phdr)
// reports the difference. Rescans happen at registration, after dlclose, and before a new Stack
// record whose frames fall outside every known module (that is how modules loaded by dlopen are
// found: the dlopen hook must stay a plain tail call, see hooks_process.cpp).
#include <link.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstring>

#include "runtime.h"

namespace memledger::preload {

uint64_t g_selfStart = 0, g_selfEnd = 0;

std::atomic<uint32_t> g_dlopenCount{0};

namespace {

struct Module {
  uint64_t start;  // lowest PT_LOAD address (load bias applied)
  uint64_t end;
  uint64_t bias;
  uint64_t nameHash;
  uint32_t seen;   // scan generation that last saw it
};

constexpr uint32_t kMaxModules = 8192;
Module* g_modules = nullptr;  // sorted by start; raw-mmapped
uint32_t g_count = 0;
uint32_t g_scanGen = 0;
uint32_t g_scannedDlopens = 0;
unsigned long long g_adds = ~0ull, g_subs = ~0ull;  // loader counters at the last full scan
std::atomic<bool> g_lock{false};
const char* g_exe = "";

struct LockGuard {
  LockGuard() {
    while (g_lock.exchange(true, std::memory_order_acquire)) __builtin_ia32_pause();
  }
  ~LockGuard() { g_lock.store(false, std::memory_order_release); }
};

uint64_t hashName(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return h;
}

bool extent(const dl_phdr_info* info, uint64_t* start, uint64_t* end) {
  uint64_t lo = ~0ull, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t s = info->dlpi_addr + ph.p_vaddr;
    if (s < lo) lo = s;
    if (s + ph.p_memsz > hi) hi = s + ph.p_memsz;
  }
  *start = lo;
  *end = hi;
  return lo < hi;
}

// Index of the first module whose start is > ip.
uint32_t upperBound(uint64_t ip) {
  uint32_t lo = 0, hi = g_count;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (g_modules[mid].start <= ip) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The module that covered the last ip looked up (an index into g_modules; the table changes only
// in rescanLocked, which resets it): a new stack's fresh frames mostly lie in one library, so
// most lookups end here instead of in a binary search over hundreds of modules.
uint32_t g_lastHit = 0;

bool covered(uint64_t ip) {
  if (g_lastHit < g_count && ip >= g_modules[g_lastHit].start && ip < g_modules[g_lastHit].end) return true;
  uint32_t i = upperBound(ip);
  if (i > 0 && ip < g_modules[i - 1].end) {
    g_lastHit = i - 1;
    return true;
  }
  return false;
}

int onObject(dl_phdr_info* info, size_t, void* data) {
  bool* first = static_cast<bool*>(data);
  bool isMain = *first;
  *first = false;
  uint64_t start, end;
  if (!extent(info, &start, &end)) return 0;
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  if (!*name) {
    if (!isMain) return 0;  // nameless objects other than the program have nothing to symbolize
    name = g_exe;
  }
  uint64_t nh = hashName(name);
  uint32_t i = upperBound(start);
  if (i > 0 && g_modules[i - 1].start == start && g_modules[i - 1].bias == info->dlpi_addr &&
      g_modules[i - 1].nameHash == nh) {
    g_modules[i - 1].seen = g_scanGen;
    return 0;
  }
  if (g_count == kMaxModules) return 0;
  std::memmove(&g_modules[i + 1], &g_modules[i], (g_count - i) * sizeof(Module));
  g_modules[i] = Module{start, end, info->dlpi_addr, nh, g_scanGen};
  ++g_count;
  recordText(wire::RecordType::Module, info->dlpi_addr, start, end, name, strlen(name));
  return 0;
}

int readCounters(dl_phdr_info* info, size_t size, void* data) {
  auto* out = static_cast<unsigned long long*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    out[0] = info->dlpi_adds;
    out[1] = info->dlpi_subs;
  }
  return 1;  // the counters are the same in every entry: stop after the first
}

bool loaderChanged() {
  unsigned long long c[2] = {~0ull - 1, ~0ull - 1};
  dl_iterate_phdr(&readCounters, c);
  return c[0] != g_adds || c[1] != g_subs;
}

void rescanLocked() {
  if (!g_modules) return;
  unsigned long long c[2] = {0, 0};
  dl_iterate_phdr(&readCounters, c);
  g_adds = c[0];
  g_subs = c[1];
  g_scannedDlopens = g_dlopenCount.load(std::memory_order_relaxed);
  ++g_scanGen;
  bool first = true;
  dl_iterate_phdr(&onObject, &first);
  uint32_t kept = 0;
  for (uint32_t i = 0; i < g_count; ++i) {
    if (g_modules[i].seen == g_scanGen) {
      g_modules[kept++] = g_modules[i];
    } else {
      recordSimple(wire::RecordType::ModuleGone, g_modules[i].bias, g_modules[i].start, 0, 0);
    }
  }
  g_count = kept;
  g_lastHit = 0;
}

int findSelf(dl_phdr_info* info, size_t, void*) {
  uint64_t start, end;
  auto here = reinterpret_cast<uint64_t>(&findSelf);
  if (!extent(info, &start, &end) || here < start || here >= end) return 0;
  g_selfStart = start;
  g_selfEnd = end;
  return 1;
}

}  // namespace

void modulesInit(const char* exePath) {
  g_exe = exePath;
  dl_iterate_phdr(&findSelf, nullptr);
  void* m = rawMmap(nullptr, kMaxModules * sizeof(Module), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_modules = m == MAP_FAILED ? nullptr : static_cast<Module*>(m);
}

void modulesRescan() {
  LockGuard lock;
  rescanLocked();
}

void modulesEnsureCover(const uint64_t* ips, int n) {
  LockGuard lock;
  bool stale = g_dlopenCount.load(std::memory_order_relaxed) != g_scannedDlopens;
  for (int i = 0; i < n && !stale; ++i) stale = !covered(ips[i]);
  // Frames outside every module (JIT code) would rescan on every new stack: only rescan when
  // the loader's add/remove counters moved since the last scan.
  if (!stale) return;
  if (loaderChanged()) rescanLocked();
  else g_scannedDlopens = g_dlopenCount.load(std::memory_order_relaxed);
}

void modulesResetAfterFork() {
  g_lock.store(false, std::memory_order_relaxed);  // its holder may not exist in the child
  g_count = 0;
  g_lastHit = 0;
  g_adds = g_subs = ~0ull;
}

}  // namespace memledger::preload
