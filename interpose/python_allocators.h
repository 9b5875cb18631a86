// Python's small objects (`record --python-allocators`, MEMLEDGER_PYTHON_ALLOCATORS=1; docs/python.md).
//
// CPython serves requests of up to 512 bytes through PyMem_Malloc/PyObject_Malloc from pymalloc,
// its own allocator inside arenas it maps itself (recorded as mmap), and never calls malloc for
// them. With the option on, the preload library wraps the MEM and OBJ domains' allocators
// (PyMem_SetAllocator, as tracemalloc does), forwarding every call to the allocator it replaced,
// and records each block pymalloc served as kind pyobject: a block in use of the pool "pymalloc",
// whose memory (the arenas) is counted once, in the mmap space. A request the wrapped allocator
// sent on to malloc (larger than 512 bytes, zero bytes, an arena it could not map,
// PYTHONMALLOC=malloc) is already recorded as heap by the malloc hooks and is not counted again:
// while the wrapped call runs, the hooks note the heap block they recorded (runtime.h,
// ThreadState::pyWrap), and the wrapper records only a block the heap did not hand out.
//
// Installed once the interpreter is initialized, by the first recorded event of a thread that
// holds the GIL (Py_IsInitialized, then PyGILState_Check: neither locks nor allocates): the
// documented way to wrap the allocators of a running interpreter, and one that PYTHONMALLOC and
// -X dev, which replace the allocators while the interpreter starts, cannot undo. Objects made before that and
// freed later are unknown frees of the process (processes.unknown_frees), not an error.
//
// Why the wrapper's records are made after the wrapped call returned (a free too, where the
// hooks reserve before): MEM and OBJ calls hold the GIL, so no other thread can be handed a
// pymalloc block between the call and its record.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime.h"

namespace memledger::preload::pyalloc {

// Asked for and not installed yet: every recorded event tries (checkInstall) until it is.
extern std::atomic<bool> g_pending;
void init();  // at bootstrap, after py::init(): reads the option, finds the interpreter's API
void tryInstall();
inline void checkInstall() {
  if (ML_UNLIKELY(g_pending.load(std::memory_order_relaxed))) tryInstall();
}

// The hooks' notes while a wrapped call runs (recorder.cpp): the heap block they recorded, the
// heap block they released.
inline void noteHeapAlloc(wire::AllocKind kind, const void* p, size_t size) {
  if (ML_LIKELY(!t_state.pyWrap) || (kind != wire::AllocKind::Malloc && kind != wire::AllocKind::New)) return;
  t_state.pyHeapAlloc = reinterpret_cast<uint64_t>(p);
  t_state.pyHeapAllocEnd = t_state.pyHeapAlloc + (size ? size : 1);
}
inline void noteHeapFree(wire::AllocKind kind, const void* p) {
  if (ML_LIKELY(!t_state.pyWrap) || (kind != wire::AllocKind::Malloc && kind != wire::AllocKind::New)) return;
  t_state.pyHeapFree = reinterpret_cast<uint64_t>(p);
}

// Removes this library's frames (a wrapper's, under the hooks it called) from ips; returns n.
inline int dropOwnFrames(uint64_t* ips, int n) {
  int k = 0;
  for (int i = 0; i < n; ++i)
    if (!inSelf(ips[i])) ips[k++] = ips[i];
  return k;
}

}  // namespace memledger::preload::pyalloc
