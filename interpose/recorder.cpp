// What goes into the ring: stacks (captured with libunwind, sent once per thread and ring) and
// the records the hooks make. Every function here runs inside enter()/leave().
#include <pthread.h>
#include <sys/mman.h>

#include <cstring>

#include "ring_writer.h"
#include "python_allocators.h"
#include "python_frames.h"
#include "unwinder.h"

namespace memledger::preload {

// Per thread, in memory mapped with the raw syscall (never the heap being observed): the hashes
// of the stacks the thread already sent on the current ring (an open-addressed set; full →
// cleared, the stacks are simply sent again and the recorder dedups by hash), and the thread's
// last stack walk, which the unwinder reuses when the outer part of the stack did not change.
struct StackCache {
  static constexpr uint32_t kSlots = 4096 - 2;
  uint32_t gen;
  uint32_t count;
  uint64_t last;
  uint64_t slots[kSlots];
  unwind::Trace trace;
  // The stack of the thread's last Stack record on the current ring: the next one sends only
  // the frames it does not share with it at the outer end (wire.h, "Stack records").
  uint32_t sentN;
  uint64_t sentHash;
  uint64_t sent[wire::kMaxFrames];
  // The native frames of the thread's last stack whose modules were checked: outer frames it
  // shares with them are still covered (a module can only go while no frame of it runs).
  uint32_t checkedN;
  uint64_t checked[wire::kMaxFrames];
  // Python frames (python_frames.h): the thread's code serials and its last walk.
  py::ThreadCodes codes;
  py::PyStack py;
  uint64_t merged[wire::kMaxFrames];
  py::EvalMemo evals;  // the evaluation frames of `checked`, when it was merged
};

namespace {

// ---- per-thread stack caches, recycled through a free list when threads exit
std::atomic<bool> g_cacheLock{false};
StackCache* g_freeCaches = nullptr;  // linked through slots[0] while free
pthread_key_t g_cacheKey;
std::atomic<int> g_cacheKeyState{0};  // 0 none, 1 creating, 2 ready

void lockCaches() {
  while (g_cacheLock.exchange(true, std::memory_order_acquire)) __builtin_ia32_pause();
}
void unlockCaches() { g_cacheLock.store(false, std::memory_order_release); }

// The key's destructor: the exiting thread hands back its table and its lane.
void releaseCache(void* p) {
  auto* c = static_cast<StackCache*>(p);
  if (t_state.cache == c) t_state.cache = nullptr;
  ring::releaseLane();
  lockCaches();
  c->slots[0] = reinterpret_cast<uint64_t>(g_freeCaches);
  g_freeCaches = c;
  unlockCaches();
}

StackCache* acquireCache() {
  lockCaches();
  StackCache* c = g_freeCaches;
  if (c) g_freeCaches = reinterpret_cast<StackCache*>(c->slots[0]);
  unlockCaches();
  if (c) {
    c->gen = 0;  // forces a clear below
    unwind::forget(&c->trace);  // another thread's stack: nothing of it may be read
  } else {
    void* m = rawMmap(nullptr, sizeof(StackCache), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    c = static_cast<StackCache*>(m);
  }
  int expected = 0;
  if (g_cacheKeyState.compare_exchange_strong(expected, 1)) {
    pthread_key_create(&g_cacheKey, &releaseCache);
    g_cacheKeyState.store(2, std::memory_order_release);
  }
  // The key's destructor hands the table back when the thread exits; a thread allocating in a
  // later TLS destructor gets a table again and the destructor runs once more.
  if (g_cacheKeyState.load(std::memory_order_acquire) == 2) pthread_setspecific(g_cacheKey, c);
  return c;
}

}  // namespace

void ensureThreadExitHook() {
  if (!t_state.cache) t_state.cache = acquireCache();
}

namespace {

// True when `hash` was not sent by this thread on the current ring yet (and marks it sent).
bool firstSight(StackCache* c, uint64_t hash) {
  if (ML_UNLIKELY(!c)) return true;  // no table (mmap failed): send it
  uint32_t gen = g_ringGen.load(std::memory_order_relaxed);
  if (ML_UNLIKELY(c->gen != gen || c->count >= StackCache::kSlots * 3 / 4)) {
    std::memset(c->slots, 0, sizeof(c->slots));
    c->count = 0;
    c->last = 0;
    c->sentN = 0;  // a new ring's reader has no base for a delta
    c->checkedN = 0;  // a fork child's modules are sent on its own ring
    c->gen = gen;
  }
  if (c->last == hash) return false;
  c->last = hash;
  uint32_t i = static_cast<uint32_t>(hash ^ (hash >> 29)) % StackCache::kSlots;
  for (;;) {
    if (c->slots[i] == hash) return false;
    if (c->slots[i] == 0) {
      c->slots[i] = hash;
      ++c->count;
      return true;
    }
    if (++i == StackCache::kSlots) i = 0;
  }
}

uint16_t opAux(wire::Op op) { return static_cast<uint16_t>(op); }

}  // namespace

void recordAlloc(const void* p, size_t size, wire::AllocKind kind, wire::Op op, uint32_t tag,
                 const wire::EventExtra* extra) {
  pyalloc::noteHeapAlloc(kind, p, size);
  wire::RingHeader* h = g_active.load(std::memory_order_acquire);
  if (!h) return;
  StackCache* cache = t_state.cache;
  if (ML_UNLIKELY(!cache)) cache = t_state.cache = acquireCache();
  py::checkFinalizing();
  pyalloc::checkInstall();
  uint64_t ips[wire::kMaxFrames];
  unwind::Captured st = unwind::capture(cache ? &cache->trace : nullptr, ips);
  int n = st.n;
  uint64_t hash = st.hash;
  // Inside a pymalloc wrapper's call (python_allocators.h) the wrapper's own frame is in the
  // middle of the stack: without it the stack is the one recorded without the option.
  if (ML_UNLIKELY(t_state.pyWrap) && n > 0) {
    if (!st.framesOut) unwind::framesOf(cache ? &cache->trace : nullptr, st, ips);
    st.framesOut = true;
    n = pyalloc::dropOwnFrames(ips, n);
    hash = n > 0 ? wire::hashFrames(ips, n) : 0;
  }
  // Python frames: folded into the hash (a new line under the same native frames is a new
  // stack), merged into the frames only when the stack is sent.
  py::PyStack* ps = nullptr;
  if (py::g_on && cache) {
    ps = &cache->py;
    py::walk(&cache->codes, *ps, n ? hash : wire::kHashSeed);
    if (ps->unsent) py::sendCodes(*ps);
    if (ps->n) hash = ps->hash;
    else ps = nullptr;
  }
  bool sendStack = (n > 0 || ps) && firstSight(cache, hash);
  if (sendStack && n > 0 && !st.framesOut) unwind::framesOf(&cache->trace, st, ips);
  // Module records for code the stack runs in go before the Stack record that needs them.
  // Outer frames shared with the thread's last Stack record are not sent again.
  int shared = 0;
  uint64_t base = 0;
  const uint64_t* frames = ips;  // what the Stack record carries: the merged frames, with Python's
  if (sendStack) {
    // Only the frames below those the last checked stack shares at its outer end: a deep
    // stack shares all but a few, and a binary search per frame over hundreds of modules was
    // a quarter of the hook's time on torch's import (600k new stacks of ~50 frames).
    int fresh = n;
    if (cache) {
      int m = static_cast<int>(cache->checkedN);
      for (int s = 0; s < n && s < m && ips[n - 1 - s] == cache->checked[m - 1 - s]; ++s) --fresh;
    }
    modulesEnsureCover(ips, fresh);
    // The evaluation frames of the last checked stack stand for this one's in the outer frames
    // both share; none known when it was not merged (or the table was just cleared).
    int sharedWithChecked = cache && cache->checkedN ? n - fresh : 0;
    if (cache) {
      std::memcpy(cache->checked, ips, static_cast<size_t>(n) * sizeof(uint64_t));
      cache->checkedN = static_cast<uint32_t>(n);
    }
    if (ps) {
      if (sharedWithChecked == 0) cache->evals.valid = 0;
      n = py::merge(ips, n, *ps, cache->merged, wire::kMaxFrames, &cache->evals, n - sharedWithChecked);
      frames = cache->merged;
    } else if (cache) {
      cache->evals.valid = 0;
    }
    if (cache && cache->sentN) {
      int m = static_cast<int>(cache->sentN);
      while (shared < n && shared < m && frames[n - 1 - shared] == cache->sent[m - 1 - shared]) ++shared;
      if (shared == n) --shared;  // a record carries at least one frame
      base = cache->sentHash;
    }
  }
  int carried = n - shared;
  uint32_t conts = sendStack ? wire::continuationSlotsForFrames(static_cast<uint32_t>(carried)) : 0;
  uint32_t slots = (sendStack ? 1 + conts : 0) + 1 + (extra ? 1 : 0);
  Reservation r;
  if (!ring::reserve(h, slots, &r)) return;
  uint64_t i = r.index;
  if (sendStack) {
    ring::writeFrameContinuations(r, i + 1, frames, static_cast<size_t>(carried));
    ring::write(r, i, wire::RecordType::Stack, kind, static_cast<uint16_t>(carried), hash,
                static_cast<uint64_t>(shared), shared ? base : 0);
    i += 1 + conts;
    if (cache) {
      std::memcpy(cache->sent, frames, static_cast<size_t>(n) * sizeof(uint64_t));
      cache->sentN = static_cast<uint32_t>(n);
      cache->sentHash = hash;
    }
  }
  if (ML_UNLIKELY(extra)) ring::writeContinuations(r, i + 1, extra, sizeof *extra);
  ring::write(r, i, wire::RecordType::Alloc, kind, opAux(op) | (extra ? wire::kAuxExtra : 0),
              reinterpret_cast<uint64_t>(p), size, hash, tag);
}

Reservation reserveRelease(uint32_t slots) {
  py::checkFinalizing();
  pyalloc::checkInstall();
  Reservation r;
  wire::RingHeader* h = g_active.load(std::memory_order_acquire);
  if (h) ring::reserve(h, slots, &r);  // leaves r empty when nothing was reserved
  return r;
}

void publishRelease(const Reservation& r, const void* p, uint64_t length, wire::AllocKind kind,
                    wire::Op op, uint32_t tag, const wire::EventExtra* extra) {
  pyalloc::noteHeapFree(kind, p);
  if (!r.records) return;
  auto type = kind == wire::AllocKind::Mmap ? wire::RecordType::Unmap : wire::RecordType::Free;
  if (ML_UNLIKELY(extra)) ring::writeContinuations(r, r.index + 1, extra, sizeof *extra);
  ring::write(r, r.index, type, kind, opAux(op) | (extra ? wire::kAuxExtra : 0),
              reinterpret_cast<uint64_t>(p), length, 0, tag);
}

void publishNop(const Reservation& r) {
  if (!r.records) return;
  ring::write(r, r.index, wire::RecordType::Nop, wire::AllocKind::Malloc, 0, 0, 0, 0);
}

void recordSimple(wire::RecordType type, uint64_t a, uint64_t b, uint64_t c, uint16_t aux,
                  uint32_t tag) {
  wire::RingHeader* h = g_active.load(std::memory_order_acquire);
  Reservation r;
  if (!h || !ring::reserve(h, 1, &r)) return;
  ring::write(r, r.index, type, wire::AllocKind::Malloc, aux, a, b, c, tag);
}

void recordText(wire::RecordType type, uint64_t a, uint64_t b, uint64_t c, const char* text,
                size_t len, uint32_t tag) {
  wire::RingHeader* h = g_active.load(std::memory_order_acquire);
  if (!h) return;
  if (len > kMaxText) len = kMaxText;
  uint32_t conts = wire::continuationSlotsForText(static_cast<uint32_t>(len));
  Reservation r;
  if (!ring::reserve(h, 1 + conts, &r)) return;
  ring::writeContinuations(r, r.index + 1, text, len);
  ring::write(r, r.index, type, wire::AllocKind::Malloc, static_cast<uint16_t>(len), a, b, c, tag);
}

// A fork child inherits the forking thread's table: the generation bump clears it on next use.
// The free list's lock may have been held by a thread that does not exist in the child.
void resetCachesAfterFork() { g_cacheLock.store(false, std::memory_order_relaxed); }

}  // namespace memledger::preload
