// The malloc family. Each hook: bootstrap on first use, take the per-thread guard (enter), call
// the real function, record. Nested calls (the guard is held) and calls made while the real
// functions are still being resolved pass straight through; the boot heap stands in for a real
// allocator that is not known yet (dlsym's calloc).
#include <cstring>

#include "runtime.h"

using namespace memledger::preload;
using memledger::wire::AllocKind;
using memledger::wire::Op;

namespace {

void* untrackedMalloc(size_t n) { return R.malloc ? R.malloc(n) : bootAlloc(n, 16); }

// A boot-heap block being resized: its size is unknown, so copy what fits before the heap's end.
void* moveFromBootHeap(void* p, size_t n) {
  void* q = untrackedMalloc(n);
  if (q && n) {
    size_t avail = 0;
    while (avail < n && isBootPointer(static_cast<char*>(p) + avail)) ++avail;
    std::memcpy(q, p, avail);
  }
  return q;
}

// realloc and reallocarray: a release of the old block reserved before the call, the new block
// recorded after it (runtime.h explains why not both before).
void* trackedResize(void* p, size_t n, size_t m, Op op) {
  size_t bytes = 0;
  bool overflow = __builtin_mul_overflow(n, m, &bytes);
  if (!p) {
    void* q = op == Op::Realloc ? R.realloc(nullptr, n) : R.reallocarray(nullptr, n, m);
    if (q) recordAlloc(q, bytes, AllocKind::Malloc, op);
    return q;
  }
  Reservation r = overflow ? Reservation{} : reserveRelease();
  void* q = op == Op::Realloc ? R.realloc(p, n) : R.reallocarray(p, n, m);
  if (q || bytes == 0) {
    publishRelease(r, p, 0, AllocKind::Malloc, op);  // size 0 frees the block (glibc)
    if (q) recordAlloc(q, bytes, AllocKind::Malloc, op);
  } else {
    publishNop(r);  // failed: the old block is still live
  }
  return q;
}

}  // namespace

ML_EXPORT void* malloc(size_t n) {
  if (!enter()) return untrackedMalloc(n);
  void* p = R.malloc(n);
  if (p) recordAlloc(p, n, AllocKind::Malloc, Op::Malloc);
  leave();
  return p;
}

ML_EXPORT void* calloc(size_t n, size_t m) {
  if (!enter()) {
    if (R.calloc) return R.calloc(n, m);
    size_t bytes;
    return __builtin_mul_overflow(n, m, &bytes) ? nullptr : bootAlloc(bytes, 16);
  }
  void* p = R.calloc(n, m);
  if (p) recordAlloc(p, n * m, AllocKind::Malloc, Op::Calloc);
  leave();
  return p;
}

ML_EXPORT void free(void* p) {
  if (!p || isBootPointer(p)) return;  // free(NULL) makes no record
  if (!enter()) {
    if (R.free) R.free(p);
    return;
  }
  Reservation r = reserveRelease();
  R.free(p);
  publishRelease(r, p, 0, AllocKind::Malloc, Op::Free);
  leave();
}

ML_EXPORT void* realloc(void* p, size_t n) {
  if (p && isBootPointer(p)) {
    void* q = moveFromBootHeap(p, n);
    if (q && enter()) {
      recordAlloc(q, n, AllocKind::Malloc, Op::Realloc);
      leave();
    }
    return q;
  }
  if (!enter()) return R.realloc ? R.realloc(p, n) : moveFromBootHeap(p, n);
  void* q = trackedResize(p, n, 1, Op::Realloc);
  leave();
  return q;
}

ML_EXPORT void* reallocarray(void* p, size_t n, size_t m) {
  if (!enter()) {
    if (R.reallocarray) return R.reallocarray(p, n, m);
    size_t bytes;
    return __builtin_mul_overflow(n, m, &bytes) ? nullptr : moveFromBootHeap(p, bytes);
  }
  void* q = trackedResize(p, n, m, Op::Reallocarray);
  leave();
  return q;
}

ML_EXPORT int posix_memalign(void** out, size_t align, size_t n) {
  if (!enter()) {
    if (R.posix_memalign) return R.posix_memalign(out, align, n);
    *out = bootAlloc(n, align);
    return *out ? 0 : 12;  // ENOMEM
  }
  int rc = R.posix_memalign(out, align, n);
  if (rc == 0 && *out) recordAlloc(*out, n, AllocKind::Malloc, Op::PosixMemalign);
  leave();
  return rc;
}

namespace {
template <typename Fn, typename... Args>
void* alignedVia(Fn real, Op op, size_t align, size_t n, Args... args) {
  if (!enter()) return real ? real(args...) : bootAlloc(n, align);
  void* p = real(args...);
  if (p) recordAlloc(p, n, AllocKind::Malloc, op);
  leave();
  return p;
}
}  // namespace

ML_EXPORT void* aligned_alloc(size_t align, size_t n) {
  return alignedVia(R.aligned_alloc, Op::AlignedAlloc, align, n, align, n);
}
ML_EXPORT void* memalign(size_t align, size_t n) {
  return alignedVia(R.memalign, Op::Memalign, align, n, align, n);
}
ML_EXPORT void* valloc(size_t n) { return alignedVia(R.valloc, Op::Valloc, 4096, n, n); }
ML_EXPORT void* pvalloc(size_t n) { return alignedVia(R.pvalloc, Op::Pvalloc, 4096, n, n); }
