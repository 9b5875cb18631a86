// The own unwinder and its trace cache (unwinder.h says why and what makes reuse exact), and
// libunwind as the fallback. The per-pc rules it follows come from unwind_rules.cpp.
#include "unwinder.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime.h"
#include "unwind_rules.h"

namespace memledger::preload::unwind {

bool g_own = true;  // MEMLEDGER_UNWIND=libunwind turns the own walker off

namespace {

// ---- settings
bool g_check = false; // MEMLEDGER_UNWIND_CHECK=1
std::atomic<uint64_t> g_checked{0}, g_differ{0}, g_fallbacks{0}, g_reused{0}, g_fresh{0}, g_cacheHits{0};

// ---- libunwind, dlopen'ed (RTLD_LOCAL) so the program's _Unwind_*/backtrace stay libgcc's
// Walked with unw_init_local/unw_step, not unw_backtrace: unw_backtrace's trace cache lives in
// libunwind's dynamic TLS, which each thread gets from __tls_get_addr's malloc on its first walk.
// That block is allocated inside a hook (from the library's own heap) and freed by glibc when the
// thread exits; unw_backtrace's cache would cost that for every thread that ever fell back.
struct UnwCursor {
  uint64_t opaque[127];  // unw_cursor_t (UNW_TDEP_CURSOR_LEN words)
};
using UnwGetcontext = int (*)(ucontext_t*);
using UnwInitLocal = int (*)(UnwCursor*, ucontext_t*);
using UnwStep = int (*)(UnwCursor*);
using UnwGetReg = int (*)(UnwCursor*, int, uint64_t*);
constexpr int kUnwRegIp = 16;  // UNW_X86_64_RIP
enum : int { kUntried = 0, kLoading = 1, kReady = 2, kFailed = 3 };
std::atomic<int> g_unwState{kUntried};
UnwGetcontext g_unwGetcontext = nullptr;
UnwInitLocal g_unwInitLocal = nullptr;
UnwStep g_unwStep = nullptr;
UnwGetReg g_unwGetReg = nullptr;
constexpr int kUnwCachePerThread = 2;  // UNW_CACHE_PER_THREAD

// The loading itself, by the one thread that moved the state to kLoading.
bool loadNow() {
  void* h = R.dlopen ? R.dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL) : nullptr;
  g_unwGetcontext = h ? reinterpret_cast<UnwGetcontext>(dlsym(h, "_Ux86_64_getcontext")) : nullptr;
  g_unwInitLocal = h ? reinterpret_cast<UnwInitLocal>(dlsym(h, "_ULx86_64_init_local")) : nullptr;
  g_unwStep = h ? reinterpret_cast<UnwStep>(dlsym(h, "_ULx86_64_step")) : nullptr;
  g_unwGetReg = h ? reinterpret_cast<UnwGetReg>(dlsym(h, "_ULx86_64_get_reg")) : nullptr;
  if (!g_unwGetcontext || !g_unwInitLocal || !g_unwStep || !g_unwGetReg) {
    writeStderr("memledger: cannot load libunwind.so.8, recording without stacks\n");
    g_unwState.store(kFailed, std::memory_order_release);
    return false;
  }
  // Per-thread caches: the global one takes a lock with signals blocked on every walk.
  auto setPolicy = reinterpret_cast<int (*)(void*, int)>(dlsym(h, "_ULx86_64_set_caching_policy"));
  auto* space = static_cast<void**>(dlsym(h, "_ULx86_64_local_addr_space"));
  if (setPolicy && space) setPolicy(*space, kUnwCachePerThread);
  g_unwState.store(kReady, std::memory_order_release);
  return true;
}

// Loaded by the first capture the own walker cannot take, never at startup: a program whose
// stacks it follows never maps libunwind (nor the liblzma it brings). A thread that finds another
// one loading it waits up to 50 ms (the loader may be waiting for the loader lock this thread
// holds, inside one of the program's dlopen calls: then this capture goes without a stack).
bool loadLibunwind() {
  int state = g_unwState.load(std::memory_order_acquire);
  if (ML_LIKELY(state == kReady)) return true;
  int expected = kUntried;
  if (state == kUntried && g_unwState.compare_exchange_strong(expected, kLoading)) return loadNow();
  uint64_t deadline = nowNs() + 50'000'000;
  while ((state = g_unwState.load(std::memory_order_acquire)) == kLoading && nowNs() < deadline)
    sched_yield();
  return state == kReady;
}

// libunwind's frames (return addresses, as unw_backtrace gives them), this library's leading
// ones dropped. Returns the count kept.
__attribute__((noinline)) int libunwindFrames(uint64_t* out, int max) {
  if (!loadLibunwind()) return 0;
  ucontext_t context;
  UnwCursor cursor;
  if (g_unwGetcontext(&context) != 0 || g_unwInitLocal(&cursor, &context) != 0) return 0;
  int count = 0;
  for (int seen = 0; seen < kTraceCap && count < max; ++seen) {
    uint64_t ip = 0;
    if (g_unwGetReg(&cursor, kUnwRegIp, &ip) != 0 || ip == 0) break;
    if (count > 0 || !inSelf(ip)) out[count++] = ip;
    if (g_unwStep(&cursor) <= 0) break;
  }
  return count;
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

// The stack slots the walk read at rev[r] and every frame outside it, each with the value it
// read there: the return address (the caller's pc; 0 at the outermost frame) and, where the walk
// on uses it, the caller's saved rbp (a program's -O2 code keeps any value there otherwise).
// Calls f(slot, value) for each, innermost first; stops, returning false, when f does.
template <class F>
inline bool forEachSlotRead(const Frame* rev, int r, F&& f) {
  for (int i = r; i >= 0; --i) {
    const Frame& fr = rev[i];
    if (fr.raSlot && !f(fr.raSlot, i > 0 ? rev[i - 1].pc : 0)) return false;
    if (fr.rbpSlot && i > 0 && rev[i - 1].needsRbp && !f(fr.rbpSlot, rev[i - 1].rbp)) return false;
  }
  return true;
}

// The reads `rev[r]` and the frames outside it made still give what they gave.
inline bool suffixHolds(const Trace* t, int r) {
  return forEachSlotRead(t->rev, r, [](uint64_t slot, uint64_t value) {
    return *reinterpret_cast<const uint64_t*>(slot) == value;
  });
}

// Sets c from the trace `t` (n frames, all hashes set). The trace holds only program frames:
// walk() steps over this library's before its first frame.
Captured finish(const Trace* t, uint64_t* out) {
  Captured c;
  int n = static_cast<int>(t->n);
  if (n <= 0) return c;
  if (n <= wire::kMaxFrames) {
    c.n = n;
    c.hash = wire::finalHash(t->rev[n - 1].hash);
    return c;
  }
  // Deeper than a stack record holds: the innermost kMaxFrames, hashed as such.
  c.n = wire::kMaxFrames;
  for (int i = 0; i < c.n; ++i) out[i] = t->rev[n - 1 - i].pc;
  c.hash = wire::hashFrames(out, c.n);
  c.framesOut = true;
  return c;
}

void checkAgainstLibunwind(const Trace* trace, const Captured& own, const uint64_t* ownOut);

inline uint32_t cachedSlot(uint64_t pc, uint64_t rsp) {
  return static_cast<uint32_t>(((pc ^ (rsp << 16)) * 0x9e3779b97f4a7c15ull) >> (64 - kCachedTraceBits));
}

// The cached trace for a walk entering its first frame in this state, if every slot it read
// still holds what it held (CachedTrace says why that makes it exact).
inline const CachedTrace* cachedTrace(const Trace* t, uint64_t pc, uint64_t rsp, uint64_t rbp, uint32_t gen) {
  const CachedTrace* set = &t->cached[cachedSlot(pc, rsp) * kCachedTraceWays];
  for (int w = 0; w < kCachedTraceWays; ++w) {
    const CachedTrace& e = set[w];
    if (!e.n || e.pc != pc || e.rsp != rsp || e.gen != gen || (e.needsRbp && e.rbp != rbp)) continue;
    // In order, stopping at the first slot that changed: a slot is only read when the ones
    // inside it held, so it is one the walk would read too. The sentinel ends the loop.
    const uint64_t(*c)[2] = e.check;
    while (*reinterpret_cast<const uint64_t*>((*c)[0]) == (*c)[1]) ++c;
    if (c == e.check + e.checks) return &e;
  }
  return nullptr;
}

// What the last check pair of every cached trace reads: never what it expects.
constexpr uint64_t kSentinelSlot = 0;

// Keeps the trace just walked (t->rev, n frames, complete) by its innermost frame's state.
void keepTrace(Trace* t, uint64_t hash, uint32_t gen) {
  const int n = static_cast<int>(t->n);
  if (n <= 0 || n > kCachedFrames) return;
  const Frame& inner = t->rev[n - 1];
  uint64_t state = (inner.pc ^ (inner.rsp << 16)) * 0x9e3779b97f4a7c15ull;
  uint32_t& seen = t->seen[state >> (64 - Trace::kSeenBits)];
  uint32_t tag = static_cast<uint32_t>(state) | 1;  // 0: nothing seen
  if (seen != tag) {  // the first walk from this state (or one whose note another replaced)
    seen = tag;
    return;
  }
  seen = 0;
  uint32_t set = cachedSlot(inner.pc, inner.rsp);
  CachedTrace& e = t->cached[set * kCachedTraceWays + t->victim[set]];
  t->victim[set] = static_cast<uint8_t>((t->victim[set] + 1) % kCachedTraceWays);
  e.pc = inner.pc;
  e.rsp = inner.rsp;
  e.rbp = inner.rbp;
  e.needsRbp = static_cast<uint32_t>(inner.needsRbp);
  e.hash = hash;
  e.gen = gen;
  for (int i = 0; i < n; ++i) e.pcs[i] = t->rev[n - 1 - i].pc;
  // The slots suffixHolds() reads for the whole trace, innermost first (where a changed stack
  // differs first).
  uint32_t k = 0;
  forEachSlotRead(t->rev, n - 1, [&](uint64_t slot, uint64_t value) {
    e.check[k][0] = slot;
    e.check[k++][1] = value;
    return true;
  });
  e.checks = k;
  e.check[k][0] = reinterpret_cast<uint64_t>(&kSentinelSlot);
  e.check[k][1] = kSentinelSlot + 1;
  e.n = static_cast<uint32_t>(n);
}

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
  t->hit = cachedTrace(t, pc, rsp, rbp, gen);
  if (t->hit) {
    Captured c;
    c.n = static_cast<int>(t->hit->n);
    c.hash = t->hit->hash;
    if (ML_UNLIKELY(g_check)) {
      g_cacheHits.fetch_add(1, std::memory_order_relaxed);
      Captured seen = c;
      checkAgainstLibunwind(t, seen, out);
    }
    return c;
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
  if (!truncated) keepTrace(t, c.hash, gen);
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
  if (!trace || !g_own) return fallback(trace, out);
  return walk(trace, out);
}

void framesOf(const Trace* t, const Captured& c, uint64_t* out) {
  if (t->hit) {
    std::memcpy(out, t->hit->pcs, sizeof(uint64_t) * static_cast<size_t>(c.n));
    return;
  }
  int n = static_cast<int>(t->n);
  for (int i = 0; i < c.n; ++i) out[i] = t->rev[n - 1 - i].pc;
}

void forget(Trace* t) {
  t->n = 0;
  t->hit = nullptr;
  for (CachedTrace& e : t->cached) e.n = 0;
  memset(t->seen, 0, sizeof t->seen);
}

void resetAfterFork() {
  rulesResetAfterFork();
  // Forked while another thread was loading libunwind: that load never finishes here, and a new
  // one could wait for the loader lock that thread held. Stacks it would have taken go without.
  int loading = kLoading;
  g_unwState.compare_exchange_strong(loading, kFailed);
}

void codeUnloaded() {
  g_codeGen.fetch_add(1, std::memory_order_acq_rel);
  retireRules();
}

__attribute__((destructor)) void reportAtExit() { reportCheck(); }

void reportCheck() {
  if (!g_check) return;
  char line[240];
  snprintf(line, sizeof(line),
           "memledger: unwind check: %llu stacks compared, %llu differ (%llu reused a known outer part, "
           "%llu frames walked, %llu by libunwind alone, %llu whole from the trace cache)\n",
           static_cast<unsigned long long>(g_checked.load()), static_cast<unsigned long long>(g_differ.load()),
           static_cast<unsigned long long>(g_reused.load()), static_cast<unsigned long long>(g_fresh.load()),
           static_cast<unsigned long long>(g_fallbacks.load()), static_cast<unsigned long long>(g_cacheHits.load()));
  writeStderr(line);
}

}  // namespace memledger::preload::unwind
