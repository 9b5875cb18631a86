// The preload library's own heap (arena.h).
#include "arena.h"

#include <sys/mman.h>

#include <atomic>
#include <cstring>

#include "runtime.h"

namespace memledger::preload::arena {

// Never matches a user-space pointer until the range is mapped (the top of the address space).
uintptr_t g_base = ~uintptr_t{0} - kBytes + 1;

namespace {

constexpr int kMinShift = 4;    // 16 B
constexpr int kMaxShift = 24;   // 16 MiB
constexpr int kSpanShift = 16;  // 64 KiB spans
constexpr size_t kSpans = kBytes >> kSpanShift;

std::atomic<bool> g_lock{false};
bool g_mapped = false, g_failed = false;
size_t g_nextSpan = 0;
uint8_t g_shiftOf[kSpans];                   // the block size (log2) of each span's blocks
void* g_free[kMaxShift + 1];                 // free lists, linked through the blocks' first word
uintptr_t g_bump[kMaxShift + 1];             // small sizes: the next block in the current span
uintptr_t g_bumpEnd[kMaxShift + 1];
__thread int t_inside;  // a signal handler re-entering on this thread must not wait for itself

struct Locked {
  bool held;
  Locked() : held(t_inside == 0) {
    if (!held) return;
    t_inside = 1;
    while (g_lock.exchange(true, std::memory_order_acquire)) __builtin_ia32_pause();
  }
  ~Locked() {
    if (!held) return;
    g_lock.store(false, std::memory_order_release);
    t_inside = 0;
  }
};

bool mapLocked() {
  if (g_mapped) return true;
  if (g_failed) return false;
  void* m = rawMmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    g_failed = true;
    return false;
  }
  __atomic_store_n(&g_base, reinterpret_cast<uintptr_t>(m), __ATOMIC_RELEASE);
  g_mapped = true;
  return true;
}

int shiftFor(size_t n, size_t align) {
  if (align > n) n = align;
  int s = kMinShift;
  while (s <= kMaxShift && (size_t{1} << s) < n) ++s;
  return s;
}

// `count` fresh spans for blocks of 2^shift; 0 when the range is full.
uintptr_t newSpans(size_t count, int shift) {
  if (g_nextSpan + count > kSpans) return 0;
  size_t first = g_nextSpan;
  g_nextSpan += count;
  for (size_t i = first; i < first + count; ++i) g_shiftOf[i] = static_cast<uint8_t>(shift);
  return g_base + (first << kSpanShift);
}

void* allocLocked(int shift) {
  if (void* p = g_free[shift]) {
    g_free[shift] = *static_cast<void**>(p);
    return p;
  }
  size_t size = size_t{1} << shift;
  if (shift >= kSpanShift) return reinterpret_cast<void*>(newSpans(size >> kSpanShift, shift));
  if (g_bump[shift] == g_bumpEnd[shift]) {
    uintptr_t span = newSpans(1, shift);
    if (!span) return nullptr;
    g_bump[shift] = span;
    g_bumpEnd[shift] = span + (uintptr_t{1} << kSpanShift);
  }
  uintptr_t p = g_bump[shift];
  g_bump[shift] += size;
  return reinterpret_cast<void*>(p);
}

int shiftOf(const void* p) {
  return g_shiftOf[(reinterpret_cast<uintptr_t>(p) - g_base) >> kSpanShift];
}

}  // namespace

void* alloc(size_t n, size_t align) {
  int shift = shiftFor(n, align);
  if (shift > kMaxShift || align > (size_t{1} << kSpanShift)) return nullptr;
  Locked l;
  if (!l.held || !mapLocked()) return nullptr;
  return allocLocked(shift);
}

void* zalloc(size_t n) {
  void* p = alloc(n, 16);
  if (p) std::memset(p, 0, n);  // a block from a free list holds its last owner's bytes
  return p;
}

void* resize(void* p, size_t n) {
  if (!p) return alloc(n, 16);
  size_t old = usable(p);
  if (n <= old && n > old / 2) return p;
  void* q = alloc(n, 16);
  if (!q) return nullptr;  // the old block stays (realloc's contract)
  std::memcpy(q, p, n < old ? n : old);
  release(p);
  return q;
}

void release(void* p) {
  int shift = shiftOf(p);
  Locked l;
  if (!l.held) return;  // re-entered from a signal handler: the block is lost, not corrupted
  *static_cast<void**>(p) = g_free[shift];
  g_free[shift] = p;
}

size_t usable(const void* p) { return size_t{1} << shiftOf(p); }

void resetAfterFork() {
  g_lock.store(false, std::memory_order_relaxed);
  t_inside = 0;
}

}  // namespace memledger::preload::arena
