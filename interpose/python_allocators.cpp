// The pymalloc wrappers of `record --python-allocators` (python_allocators.h says what and why).
// The interpreter's API is looked up with dlsym at bootstrap and called only from tryInstall();
// the wrappers call nothing of Python's but the allocator they wrap.
#include "python_allocators.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

namespace memledger::preload::pyalloc {

std::atomic<bool> g_pending{false};

namespace {

using wire::AllocKind;
using wire::Op;

// CPython's PyMemAllocatorEx (3.5 and later; the layout is part of the stable C API).
struct PyMemAllocatorEx {
  void* ctx;
  void* (*malloc)(void* ctx, size_t size);
  void* (*calloc)(void* ctx, size_t nelem, size_t elsize);
  void* (*realloc)(void* ctx, void* ptr, size_t size);
  void (*free)(void* ctx, void* ptr);
};
enum Domain : int { kDomainMem = 1, kDomainObj = 2 };  // PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ

void (*g_getAllocator)(int, PyMemAllocatorEx*) = nullptr;
void (*g_setAllocator)(int, PyMemAllocatorEx*) = nullptr;
int (*g_isInitialized)() = nullptr;
int (*g_gilCheck)() = nullptr;

// One wrapped domain: the allocator it replaced and the ops its records carry.
struct Wrapped {
  PyMemAllocatorEx prev;
  Op malloc, calloc, realloc, free;
};
Wrapped g_mem{{}, Op::PyMemMalloc, Op::PyMemCalloc, Op::PyMemRealloc, Op::PyMemFree};
Wrapped g_obj{{}, Op::PyObjectMalloc, Op::PyObjectCalloc, Op::PyObjectRealloc, Op::PyObjectFree};

// A wrapped call: the thread is marked so that the hooks note the heap blocks it makes and
// releases (runtime.h, ThreadState::pyWrap); notes of an earlier call are cleared.
struct Watch {
  Watch() {
    ++t_state.pyWrap;
    t_state.pyHeapAlloc = t_state.pyHeapAllocEnd = t_state.pyHeapFree = 0;
  }
  ~Watch() { --t_state.pyWrap; }
  // The block at p came from malloc (with PYTHONMALLOC=debug p is inside it, past a header).
  static bool heapMade(const void* p) {
    auto a = reinterpret_cast<uint64_t>(p);
    return a >= t_state.pyHeapAlloc && a < t_state.pyHeapAllocEnd;
  }
  // The block at p went back to free (the debug hooks free it from 16 bytes before p).
  static bool heapReleased(const void* p) {
    auto a = reinterpret_cast<uint64_t>(p);
    return t_state.pyHeapFree != 0 && a >= t_state.pyHeapFree && a - t_state.pyHeapFree <= 64;
  }
};

void recordMade(void* p, size_t size, Op op) {
  if (!enter()) return;
  recordAlloc(p, size, AllocKind::PyObject, op);
  leave();
}

void recordReleased(void* p, Op op) {
  if (!enter()) return;
  Reservation r = reserveRelease();
  publishRelease(r, p, 0, AllocKind::PyObject, op);
  leave();
}

// The library's own calls (the guard held) pass straight through, as in the malloc hooks.
void* wrapMalloc(void* ctx, size_t size) {
  auto* w = static_cast<Wrapped*>(ctx);
  if (t_state.busy) return w->prev.malloc(w->prev.ctx, size);
  void* p;
  bool heap;
  {
    Watch watch;
    p = w->prev.malloc(w->prev.ctx, size);
    heap = Watch::heapMade(p);
  }
  if (p && !heap) recordMade(p, size, w->malloc);
  return p;
}

void* wrapCalloc(void* ctx, size_t n, size_t each) {
  auto* w = static_cast<Wrapped*>(ctx);
  if (t_state.busy) return w->prev.calloc(w->prev.ctx, n, each);
  void* p;
  bool heap;
  {
    Watch watch;
    p = w->prev.calloc(w->prev.ctx, n, each);
    heap = Watch::heapMade(p);
  }
  if (p && !heap) recordMade(p, n * each, w->calloc);  // p: n * each did not overflow
  return p;
}

// A realloc may keep a pymalloc block in place, move it to another one or out to malloc, or
// resize a malloc'ed block (which stays there): the old block is released unless the heap
// released it, the new one made unless the heap made it.
void* wrapRealloc(void* ctx, void* old, size_t size) {
  auto* w = static_cast<Wrapped*>(ctx);
  if (t_state.busy) return w->prev.realloc(w->prev.ctx, old, size);
  void* p;
  bool heapOld, heapNew;
  {
    Watch watch;
    p = w->prev.realloc(w->prev.ctx, old, size);
    heapOld = Watch::heapReleased(old);
    heapNew = Watch::heapMade(p);
  }
  if (!p) return p;  // failed: the old block is still live
  if (old && !heapOld) recordReleased(old, w->realloc);
  if (!heapNew) recordMade(p, size, w->realloc);
  return p;
}

void wrapFree(void* ctx, void* p) {
  auto* w = static_cast<Wrapped*>(ctx);
  if (t_state.busy || !p) return w->prev.free(w->prev.ctx, p);
  bool heap;
  {
    Watch watch;
    w->prev.free(w->prev.ctx, p);
    heap = Watch::heapReleased(p);
  }
  if (!heap) recordReleased(p, w->free);
}

void wrap(int domain, Wrapped& w) {
  g_getAllocator(domain, &w.prev);
  PyMemAllocatorEx mine{&w, wrapMalloc, wrapCalloc, wrapRealloc, wrapFree};
  g_setAllocator(domain, &mine);
}

// PY_VERSION_HEX >> 16 of the interpreter (0x30b for 3.11), 0 when unknown.
unsigned versionOf() {
  if (auto* v = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"))) return static_cast<unsigned>(*v >> 16);
  auto getVersion = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
  if (!getVersion) return 0;
  const char* s = getVersion();  // "3.10.13 (main, ...": a static buffer
  char* end = nullptr;
  unsigned long major = strtoul(s, &end, 10);
  unsigned long minor = end && *end == '.' ? strtoul(end + 1, &end, 10) : 0;
  return static_cast<unsigned>(major << 8 | minor);
}

}  // namespace

void init() {
  const char* env = getenv("MEMLEDGER_PYTHON_ALLOCATORS");
  if (!env || strcmp(env, "1") != 0) return;
  g_getAllocator = reinterpret_cast<decltype(g_getAllocator)>(dlsym(RTLD_DEFAULT, "PyMem_GetAllocator"));
  g_setAllocator = reinterpret_cast<decltype(g_setAllocator)>(dlsym(RTLD_DEFAULT, "PyMem_SetAllocator"));
  g_isInitialized = reinterpret_cast<decltype(g_isInitialized)>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  g_gilCheck = reinterpret_cast<decltype(g_gilCheck)>(dlsym(RTLD_DEFAULT, "PyGILState_Check"));
  bool found = g_getAllocator && g_setAllocator && g_isInitialized && g_gilCheck;
  unsigned version = found ? versionOf() : 0;
  dlerror();  // a failed lookup (not Python) is ours, not the program's
  if (!found) return;  // not a Python process
  // PyMemAllocatorEx (with calloc) is 3.5's; 2.7 has no PyMem_SetAllocator at all.
  if (version < 0x305) {
    writeStderr("memledger: --python-allocators needs Python 3.5 or later; small objects are not recorded\n");
    return;
  }
  g_pending.store(true, std::memory_order_relaxed);
}

// From a recorded event (the guard held): wraps both domains once the interpreter is initialized
// and this thread holds the GIL, which every MEM and OBJ call also holds.
void tryInstall() {
  if (!g_isInitialized() || !g_gilCheck()) return;
  bool pending = true;  // PyGILState_Check says 1 to every thread once subinterpreters exist
  if (!g_pending.compare_exchange_strong(pending, false, std::memory_order_relaxed)) return;
  wrap(kDomainMem, g_mem);
  wrap(kDomainObj, g_obj);
}

}  // namespace memledger::preload::pyalloc
