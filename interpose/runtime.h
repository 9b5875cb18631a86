// Internal state of libmemledger_preload.so shared by the hook files. Nothing here is exported:
// the target builds with -fvisibility=hidden and only ML_EXPORT symbols (the hooks and the C API)
// are visible to the program.
//
// Layers (memray's split): hooks_*.cpp (forwarding, one recipe each) → recorder.cpp (what to
// record: stacks, modules) → ring_writer.cpp (how a record goes into the ring) → the shared
// memfd ring (the sink, read by the recorder process).
#pragma once

#include <dlfcn.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "wire.h"

#define ML_EXPORT extern "C" __attribute__((visibility("default")))
#define ML_LIKELY(x) __builtin_expect(!!(x), 1)
#define ML_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace memledger::preload {

// The real functions, resolved once with dlsym(RTLD_NEXT) during bootstrap(). A null entry means
// "not resolved yet" (only while bootstrap runs): callers fall back (own heap, raw syscalls).
struct Reals {
  void* (*malloc)(size_t);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  void* (*reallocarray)(void*, size_t, size_t);
  void (*free)(void*);
  size_t (*malloc_usable_size)(void*);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
  void* (*mmap)(void*, size_t, int, int, int, off_t);
  void* (*mmap64)(void*, size_t, int, int, int, off64_t);
  int (*munmap)(void*, size_t);
  void* (*mremap)(void*, size_t, size_t, int, ...);
  void* (*dlopen)(const char*, int);
  int (*dlclose)(void*);
  void (*exit)(int) __attribute__((noreturn));
  void (*_exit)(int) __attribute__((noreturn));
  void (*_Exit)(int) __attribute__((noreturn));
  pid_t (*wait)(int*);
  pid_t (*waitpid)(pid_t, int*, int);
  pid_t (*wait4)(pid_t, int*, int, struct rusage*);
  int (*waitid)(idtype_t, id_t, siginfo_t*, int);
  pid_t (*fork)();
  pid_t (*_Fork)();
  // malloc/free/posix_memalign as the program's global scope resolves them (usually our own
  // hooks, which pass through while the guard is held). operator new/delete use these, so a
  // program that brings its own allocator in the executable keeps new and free paired.
  void* (*globalMalloc)(size_t);
  void (*globalFree)(void*);
  int (*globalPosixMemalign)(void**, size_t, size_t);
  // libstdc++'s operators, used only when an allocation failed: they run the new_handler loop
  // and throw std::bad_alloc, which this library (built without exceptions) cannot do itself.
  void* (*opNew)(size_t);
  void* (*opNewArray)(size_t);
  void* (*opNewAligned)(size_t, size_t);
  void* (*opNewArrayAligned)(size_t, size_t);
  void* (*opNewNothrow)(size_t, const std::nothrow_t&);
  void* (*opNewArrayNothrow)(size_t, const std::nothrow_t&);
  void* (*opNewAlignedNothrow)(size_t, size_t, const std::nothrow_t&);
  void* (*opNewArrayAlignedNothrow)(size_t, size_t, const std::nothrow_t&);
};
extern Reals R;

// Signals: the guard is per thread and covers the whole hook (real call, stack capture, ring
// append). A signal handler that allocates while its thread is inside a hook therefore is
// served untracked, like the library's own calls, from the library's own heap (arena.h; its
// blocks work with free, realloc and malloc_usable_size from anywhere): the ring it interrupted
// is never touched twice from one thread (no torn record, no reservation the interrupted writer
// could be made to wait behind), at the price of not recording the handler's allocation. To the
// program that handler re-entered malloc/free, which are not async-signal-safe: undefined
// behaviour that this keeps harmless. A handler that interrupts code outside any hook records
// normally with its own slots and its own stack walk (the per-thread trace cache is only used
// under the guard). A handler that longjmps out of a hook leaves the guard set: that thread stops
// recording (and allocates from the own heap until it is full, then from the real allocator).
// (tests/integration/reliability_signals_test.cpp)
//
// vfork: a vfork child shares the parent's memory and TLS until exec; whatever it allocates
// (nothing, if it follows POSIX) is recorded as the parent's. Its _exit after a failed exec
// (Python's subprocess does this) is not: the exit hooks check the pid (one syscall, rare call).
// posix_spawn children allocate nothing.
//
// Per-thread state. `__thread` on a POD (no TLS wrapper function) with the initial-exec model
// (set for the whole target): an access is one %fs-relative load, never __tls_get_addr.
struct StackCache;
struct ThreadState {
  uint32_t busy;     // recursion guard: inside a hook (or bootstrap); see kForwarding
  uint32_t tid;      // gettid() cache, 0 = not fetched (reset in a fork child)
  uint32_t inFork;   // fork() in progress on this thread: the next hook checks whether it is the child
  StackCache* cache; // hashes of the stacks this thread already sent on the current ring
  // The lane this thread writes on `laneRing` (wire.h): laneRing null = none chosen on the
  // current ring yet; lane null = the shared lane 0. laneHead is the lane's head as this thread
  // last set it; slots below roomUntil were known free (tail + capacity, from a tail read
  // earlier): reserving below it needs no read of the tail, a line the recorder keeps writing.
  // Slots below populatedUntil are in pages this thread already faulted in (the lane's first
  // lap maps them ahead, many pages per call); roomUntil never passes it.
  wire::RingHeader* laneRing;
  wire::LaneHeader* lane;
  wire::Record* laneRecords;
  uint32_t laneCapacity;
  uint64_t laneHead;
  uint64_t roomUntil;
  uint64_t populatedUntil;
  // Inside a pymalloc wrapper's call to the allocator it wraps (python_allocators.h): how deep,
  // and the last heap block the hooks recorded ([pyHeapAlloc, pyHeapAllocEnd)) and released
  // during that call, which tell a block malloc handed out from one pymalloc did.
  uint32_t pyWrap;
  uint64_t pyHeapAlloc, pyHeapAllocEnd, pyHeapFree;
};
extern __thread ThreadState t_state;
// t_state.busy while operator new calls the program's malloc with the guard held: the nested
// malloc is the program's (the real allocator, unrecorded). Any other nonzero value: the nested
// call is the library's own, served by its own heap (arena.h).
inline constexpr uint32_t kForwarding = 2;

uint32_t fetchTid();  // gettid() into t_state.tid
// Every record carries it: inline, a thread-local load once fetched.
inline uint32_t currentTid() { return ML_LIKELY(t_state.tid != 0) ? t_state.tid : fetchTid(); }

// The ring this process image writes to; null when not recording (no MEMLEDGER_DIR, no
// recorder, detached, or a fork child that has not registered). The mapping itself outlives a
// detach so writers that already hold a reservation finish safely.
extern std::atomic<wire::RingHeader*> g_active;
extern std::atomic<uint32_t> g_ringGen;  // bumped for every new ring (fork child): caches reset
// After a detach: the abandoned ring, whose `lost` counts the calls no longer recorded.
extern wire::RingHeader* g_detachedRing;
void noteLost();

void bootstrap();        // resolves R and starts recording; idempotent, safe to call from any hook
extern std::atomic<int> g_bootState;  // 2 once bootstrap finished
inline bool bootstrapped() { return g_bootState.load(std::memory_order_acquire) == 2; }
void forkCheck();        // t_state.inFork was set: if this is a fork child, switch rings
bool sameProcess();      // getpid() is the pid this image registered as (false in a vfork child)
void childAfterFork();   // stop writing the parent's ring, register a ring of our own

// Entering a hook: true when this call should be recorded (guard taken, leave() must follow).
inline bool enter() {
  if (ML_UNLIKELY(!bootstrapped())) bootstrap();
  if (t_state.busy) return false;
  if (ML_UNLIKELY(t_state.inFork)) forkCheck();
  if (!g_active.load(std::memory_order_acquire)) {
    if (ML_UNLIKELY(g_detachedRing != nullptr)) noteLost();
    return false;
  }
  t_state.busy = 1;
  return true;
}
inline void leave() { t_state.busy = 0; }

// Raw system calls for the library's own memory: never through the program's (hooked) mmap.
// Every mapping they make is in the own-mappings table the exit scan leaves out (hooks_scan.cpp).
void* rawMmap(void* addr, size_t len, int prot, int flags, int fd, off_t off);
int rawMunmap(void* addr, size_t len);
void noteOwnMapping(const void* p, size_t len);
void noteOwnUnmap(const void* p, size_t len);
void noteRecorderPid(uint32_t pid);  // the recorder's pid, for Yama's PR_SET_PTRACER at exit
uint64_t nowNs();        // CLOCK_MONOTONIC
extern bool g_clockTsc;  // records are stamped with the TSC (wire.h RingClock)
extern bool g_rdtscp;    // the CPU has rdtscp
// A record's stamp. Fenced (wire.h, "fences"): read after every earlier instruction executed and
// every earlier load completed, so an allocation's stamp comes after the allocator's loads that
// handed out the block. clock_gettime's own TSC read is ordered that way.
inline uint64_t stampNow(bool fenced) {
  if (!g_clockTsc) return nowNs();
  if (!fenced) return __builtin_ia32_rdtsc();
  if (g_rdtscp) {
    unsigned int cpu;
    return __builtin_ia32_rdtscp(&cpu);
  }
  __builtin_ia32_lfence();
  return __builtin_ia32_rdtsc();
}
void writeStderr(const char* msg);  // one line, write(2), no stdio

// Record helpers (recorder.cpp). All of them are called inside enter()/leave().
struct Reservation {
  wire::Record* records = nullptr;  // the lane's slots; null: nothing reserved (not recording)
  uint32_t mask = 0;                // capacity - 1
  uint64_t index = 0;               // the first slot reserved
  uint64_t ts = 0;                  // the stamp of the records written into these slots
};
// Allocations reserve their slots after the real call returned; frees and unmaps reserve one
// slot before the real call and publish after it (a Nop when the call failed). With that order an
// address is never seen allocated again before it was seen freed (wire.h). realloc and mremap
// are a release (reserved before) followed by an allocation (reserved after): reserving the
// allocation's slot before the call too would let another thread's free of the address the
// call returns land after it.
// tag: the device number or pool id (wire.h); extra: a collector's event time and stream, sent
// in one more slot.
void recordAlloc(const void* p, size_t size, wire::AllocKind kind, wire::Op op, uint32_t tag = 0,
                 const wire::EventExtra* extra = nullptr);
// Makes sure this thread's exit hands back its stack cache and its lane (recorder.cpp).
void ensureThreadExitHook();
// slots: 2 when the release will carry an EventExtra.
Reservation reserveRelease(uint32_t slots = 1);
void publishRelease(const Reservation& r, const void* p, uint64_t length, wire::AllocKind kind,
                    wire::Op op, uint32_t tag = 0,
                    const wire::EventExtra* extra = nullptr);  // Free, or Unmap for kind Mmap
void publishNop(const Reservation& r);
void recordSimple(wire::RecordType type, uint64_t a, uint64_t b, uint64_t c, uint16_t aux,
                  uint32_t tag = 0);
// A record with text in continuation slots (Module: path, Marker: name); text is truncated to
// kMaxText bytes.
inline constexpr size_t kMaxText = 4096;
void recordText(wire::RecordType type, uint64_t a, uint64_t b, uint64_t c, const char* text,
                size_t len, uint32_t tag = 0);

// Modules (modules.cpp): the loaded objects, as Module/ModuleGone records.
void modulesInit(const char* exePath);
void modulesRescan();                         // diff against dl_iterate_phdr, emit changes
void modulesEnsureCover(const uint64_t* ips, int n);  // rescan when a frame is in no known module
void modulesResetAfterFork();
void resetCachesAfterFork();
extern std::atomic<uint32_t> g_dlopenCount;   // bumped by the dlopen hook: rescan at next new stack
// dlopen with RTLD_DEEPBIND (deepbind.cpp): loads `file` as `caller`'s dlopen would, then binds
// the allocator symbols of the libraries it loaded to the hooks.
void* deepbindOpen(const char* file, int mode, const void* caller);

// The preload library's own text range: leading frames inside it are dropped from stacks.
// Inline: every capture asks it of each frame it skips (the hook, the capture, the walk).
extern uint64_t g_selfStart, g_selfEnd;
inline bool inSelf(uint64_t ip) { return ip >= g_selfStart && ip < g_selfEnd; }

}  // namespace memledger::preload
