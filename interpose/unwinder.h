// Stack capture for the hooks: our own .eh_frame unwinder with an exact per-thread trace cache,
// and libunwind's unw_backtrace as the fallback for anything it does not handle.
//
// Why not unw_backtrace alone: walking a frame costs ~7 ns whoever walks it (each step's load
// depends on the previous one), and a hook pays it for every frame of every allocation. Most
// allocations come from a call path the same thread walked a moment ago, so the walk keeps the
// thread's last trace: for each frame the state it was entered with (pc, rsp, rbp) and the stack
// slots its step read (return address, saved rbp). A new capture walks fresh frames from the top
// until it reaches a frame at the same rsp (and rbp, where used) as one of the last trace's frames
// whose step follows the same rule (the same function, called from another of its call sites, has
// the same CFA offset and save slots); from there on the walk is a function of that state and the
// slots it reads (the rules per pc are fixed while the code stays mapped), so when every one of
// those slots still holds the value read last time, the rest of the trace is the same and is
// reused. The check reads one or two words per frame, all independent loads. Whole traces are
// also kept by their innermost frame's state (CachedTrace): a capture that starts in a kept state
// with every slot unchanged is that trace, with no frame walked at all. Nothing is guessed: a
// mismatch, an unknown rule, a signal frame, a CFA expression, a frame outside any file-backed
// module all fall back to a full walk or to unw_backtrace.
//
// The rules (CFA = rsp|rbp + offset, where the return address and the caller's rbp are saved)
// come from each module's .eh_frame, read where the loader mapped it (eh_frame.cpp: no file
// opened, no library loaded), computed once per return address and kept in a lock-free table.
// Writers take a short lock that is never held across a call. dlclose retires the table
// (unloaded code's addresses can be reused). libunwind is dlopen'ed only by the first capture
// the own walker cannot take (unwinder.cpp, loadLibunwind): a program whose stacks it follows
// never has it mapped.
//
// MEMLEDGER_UNWIND=libunwind turns the own walker off; MEMLEDGER_UNWIND_CHECK=1 also runs
// unw_backtrace for every capture, compares, and prints the count of differences at exit.
#pragma once

#include <cstdint>

#include "wire.h"

namespace memledger::preload::unwind {

inline constexpr int kSkipRoom = 16;  // frames of this library above the program's frames
inline constexpr int kTraceCap = wire::kMaxFrames + kSkipRoom;

// One frame of a walk: the state it was entered with and the slots its step read (0: none).
// rbp is part of the state only when the walk from here on uses the value it came in with
// (a CFA based on rbp before some frame restores rbp from its save slot): with
// -fomit-frame-pointer code rbp holds whatever the program keeps in it, and would never match.
struct Frame {
  uint64_t pc, rsp, rbp;
  uint64_t raSlot, rbpSlot;
  uint64_t hash;      // wire::hashFrames of this frame and all outer ones (suffix hash)
  uint64_t step;      // the rule of the step taken here (0: none, the outermost frame)
  uint64_t needsRbp;  // the walk from here on depends on the incoming rbp
};

// A whole trace the thread walked before, kept by the state its innermost frame was entered with.
// A capture entered in the same state (pc, rsp, and rbp where the walk uses it) whose every slot
// read by that walk still holds the value read then would walk the same frames again (the rules
// per pc are fixed in one code generation), so it is that trace, checked with one independent load
// per slot and no rule lookups. Allocations alternate between a few call paths, and one innermost
// state has several callers (python3's allocator wrappers): 8 sets of 4 ways (83 KiB a thread)
// served 99.9% of sqlite_insert's and py_dict's stacks, 26% of torch_mlp's (deeper, more varied).
inline constexpr int kCachedFrames = 64;  // deeper traces are not kept
inline constexpr int kCachedTraceBits = 3;  // sets
inline constexpr int kCachedTraceWays = 4;  // traces per set: one innermost state, several callers
struct CachedTrace {
  uint64_t pc, rsp, rbp;  // the innermost frame's state; rbp compared only when needsRbp
  uint64_t hash;          // the capture's hash
  uint32_t n;             // frames in pcs, innermost first; 0: empty
  uint32_t checks;        // (slot, value) pairs in `check`
  uint32_t gen;           // code generation it was walked in
  uint32_t needsRbp;
  uint64_t pcs[kCachedFrames];
  // Then a sentinel pair that never holds (a zero compared with 1): the check loop needs no
  // bound test.
  uint64_t check[2 * kCachedFrames + 1][2];
};

// A thread's last trace, outermost frame first (so a reused outer part stays in place).
struct Trace {
  uint32_t n;          // frames; 0: nothing to reuse
  uint32_t truncated;  // the walk stopped at kTraceCap, not at the outermost frame
  uint64_t gen;        // code generation it was walked in (unloaded code makes it stale)
  Frame rev[kTraceCap];
  Frame fresh[kTraceCap];  // the walk in progress (here, not on the stack of a malloc call: 9 KiB)
  // The rules this thread used last, direct-mapped by pc (8 KiB, stays in L1/L2): the shared
  // table is 4 MiB probed at random. Cleared with the trace when code is unloaded.
  static constexpr uint32_t kHotBits = 9;
  uint64_t hotKey[1u << kHotBits];
  uint64_t hotRule[1u << kHotBits];
  // Whole traces by innermost state (direct-mapped), and the one the last capture was, if any.
  CachedTrace cached[(1u << kCachedTraceBits) * kCachedTraceWays];
  uint8_t victim[1u << kCachedTraceBits];  // the way the next new trace of each set replaces
  const CachedTrace* hit;
  // Innermost states (a hash of pc and rsp) whose walk was not kept yet, direct-mapped: a trace
  // is kept the second time its state is walked. Most stacks of an import or a static
  // initializer are walked once, and copying each into the cache (a few KiB of stores) was a
  // fifth of the walk's time on torch's import.
  static constexpr uint32_t kSeenBits = 8;
  uint32_t seen[1u << kSeenBits];
};

// 16 bytes: returned in two registers, not through memory written field by field and read back
// whole (a stalled store forward on every capture).
struct Captured {
  uint64_t hash = 0;      // wire::hashFrames of them; 0 when n == 0
  int n = 0;              // program frames (this library's dropped), at most wire::kMaxFrames
  bool framesOut = false; // `out` already holds them; otherwise framesOf() gives them
};
static_assert(sizeof(Captured) == 16);

void init();  // reads the settings (bootstrap, before any capture)

// Captures the caller's stack. `trace` may be null (no per-thread state): then unw_backtrace.
Captured capture(Trace* trace, uint64_t* out);
// The frames of the capture that just returned framesOut == false.
void framesOf(const Trace* trace, const Captured& c, uint64_t* out);

void forget(Trace* trace);  // the trace cache of a thread that exited, before another thread uses it
void codeUnloaded();  // after dlclose: rules for addresses that may now be reused go
void reportCheck();   // MEMLEDGER_UNWIND_CHECK: one stderr line with the comparison's counts
void resetAfterFork();  // a fork child: locks whose holders may not exist there

}  // namespace memledger::preload::unwind
