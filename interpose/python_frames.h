// Python frames in the stacks of a CPython process (docs/python.md says why this mechanism).
//
// At each recorded allocation the hook reads the calling thread's own interpreter frame chain
// (no Python API, no lock: the thread state comes from the interpreter's thread-specific key in
// _PyRuntime, read with pthread_getspecific) and puts the Python frames into the stack in place
// of the evaluation loop's native frames: each native _PyEval_EvalFrameDefault frame stands for
// the Python frames up to the next entry frame (3.11: is_entry; 3.12/3.13: the C-stack shim
// frame; 3.10: every frame). A return address in the loop's cold part (GCC's
// _PyEval_EvalFrameDefault.cold, found at bootstrap from the code's jumps and .eh_frame) is an
// evaluation frame too. Where the counts differ (a PEP 523 evaluator, a cut native stack) the
// native frames inside the innermost evaluation frame are followed by the Python frames alone:
// never a wrong merge.
//
// A Python frame travels as one 64-bit "address" with bit 63 set (no user-space code address has
// it): (serial of its code object) << 32 | instruction offset in code units. Each code object is
// sent once per ring (RecordType::PyCode: name, file, first line, line table); lines are resolved
// by the recorder. The whole-trace cache stays exact: the stack's hash folds the Python frames
// into the native hash, so a new Python line under the same native frames is a new stack.
//
// Layouts are per minor version (3.10 to 3.13, x86-64, release builds; python_layouts.cpp), found
// from the interpreter's own exported symbols (_PyRuntime, PyCode_Type, Py_Version or
// Py_GetVersion, _PyEval_EvalFrameDefault). Any other version: one stderr line, native frames
// only. MEMLEDGER_PYTHON=0 (`record --no-python`) turns it off.
#pragma once

#include <cstdint>

#include "wire.h"

namespace memledger::preload::py {

inline constexpr uint64_t kPyFrameBit = 1ull << 63;
inline constexpr int kMaxPyFrames = 96;
inline constexpr int kThreadCodeSlots = 256;

// Per-thread: code object address -> serial, so most frames cost no shared lookup.
struct ThreadCodes {
  uint32_t gen;  // ring generation the entries were filled for (a new ring clears them)
  uint64_t key[kThreadCodeSlots];
  uint64_t fp[kThreadCodeSlots];
  uint32_t serial[kThreadCodeSlots];
};

// A walk of the current thread's frames, innermost first.
struct PyStack {
  int n = 0;
  int groups = 0;                // evaluation-loop invocations the frames belong to
  uint64_t frames[kMaxPyFrames];  // encoded (kPyFrameBit | serial << 32 | offset)
  uint8_t group[kMaxPyFrames];    // the invocation (0: innermost) each frame belongs to
  uint64_t hash = 0;              // walk(): foldHash(seed, *this), folded while walking
  // Code objects this walk met that the current ring was not told about yet.
  int unsent = 0;
  uint64_t unsentCode[8];
  uint32_t unsentSerial[8];
};

extern bool g_on;  // a known CPython was found and frames are read
void init();       // at bootstrap, once: finds the interpreter, chooses the layout
void resetAfterFork();  // a fork child: locks whose holders may not exist there

// Reads the current thread's frames into `out` (out.n == 0: none, e.g. not a Python thread),
// and sets out.hash to foldHash(seed, out): folded frame by frame as they are read, the hash's
// chain of multiplies overlaps the walk's loads instead of following them (0.04 s of torch's
// import).
void walk(ThreadCodes* codes, PyStack& out, uint64_t seed);
// The stack's hash with the Python frames folded in (0 frames: the native hash unchanged).
uint64_t foldHash(uint64_t nativeHash, const PyStack& ps);
// Where the evaluation-loop frames were in the native stack merge() last saw, as distances
// from its outermost frame (innermost first). A stack that shares its outer frames with that one
// has its evaluation frames there at the same distances: merge() then reads only the frames
// below them (a new stack of torch's import shares all but ~5 of ~50).
struct EvalMemo {
  int valid;  // 0: none (the last checked stack was not merged)
  int count;
  uint8_t dist[wire::kMaxFrames];
};
// Native frames (innermost first) merged with the Python ones into out (at most max); returns n.
// memo (may be null): the evaluation frames of the stack whose outer native frames this one
// shares, all but its innermost `fresh`; set to this stack's on return.
int merge(const uint64_t* native, int n, const PyStack& ps, uint64_t* out, int max,
          EvalMemo* memo = nullptr, int fresh = 0);
// Sends the PyCode records of ps.unsent (inside a hook, before the Stack record using them).
void sendCodes(const PyStack& ps);

// Interpreter finalization: _PyRuntime's _finalizing pointer, read at every recorded event until
// it is seen set; then one PyFinalize record.
extern const uint64_t* g_finalizing;
extern bool g_finalSent;
void noteFinalizing();
inline void checkFinalizing() {
  if (__builtin_expect(g_finalizing != nullptr && !g_finalSent, 0) && *g_finalizing) noteFinalizing();
}

}  // namespace memledger::preload::py
