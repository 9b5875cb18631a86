// The malloc family. Each hook: bootstrap on first use, take the per-thread guard (enter), call
// the real function, record. Calls made while the guard is held are the library's own (or those
// of what it calls: dlsym, the loader, pthread, libunwind) and are served by its own heap
// (arena.h), never by the program's allocator; calls made while not recording go straight to
// the real function. Blocks of the own heap are recognised by address wherever they are freed.
#include <cstring>

#include "arena.h"
#include "runtime.h"

using namespace memledger::preload;
using memledger::wire::AllocKind;
using memledger::wire::Op;

namespace {

// enter() said no: the library's own call (guard held), or not recording.
inline bool own() { return t_state.busy != 0 && t_state.busy != kForwarding; }

// The own heap, or the real allocator when it is full (or re-entered by a signal handler).
void* ownAlloc(size_t n, size_t align) {
  void* p = arena::alloc(n, align);
  if (p || !R.malloc) return p;
  if (align <= 16) return R.malloc(n);
  void* q = nullptr;
  return R.posix_memalign(&q, align, n) == 0 ? q : nullptr;
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
  if (!enter()) return own() ? ownAlloc(n, 16) : R.malloc(n);
  void* p = R.malloc(n);
  if (p) recordAlloc(p, n, AllocKind::Malloc, Op::Malloc);
  leave();
  return p;
}

ML_EXPORT void* calloc(size_t n, size_t m) {
  if (!enter()) {
    if (!own()) return R.calloc(n, m);
    size_t bytes;
    if (__builtin_mul_overflow(n, m, &bytes)) return nullptr;
    void* p = arena::zalloc(bytes);
    return p || !R.calloc ? p : R.calloc(n, m);
  }
  void* p = R.calloc(n, m);
  if (p) recordAlloc(p, n * m, AllocKind::Malloc, Op::Calloc);
  leave();
  return p;
}

ML_EXPORT void free(void* p) {
  if (!p) return;  // free(NULL) makes no record
  if (arena::contains(p)) return arena::release(p);
  if (!enter()) {
    if (R.free) R.free(p);
    return;
  }
  Reservation r = reserveRelease();
  R.free(p);
  publishRelease(r, p, 0, AllocKind::Malloc, Op::Free);
  leave();
}

// A block of the own heap stays there, whoever resizes it (glibc's own tables).
ML_EXPORT void* realloc(void* p, size_t n) {
  if (arena::contains(p)) return arena::resize(p, n);
  if (!enter()) {
    if (!own()) return R.realloc(p, n);
    return p ? R.realloc(p, n) : ownAlloc(n, 16);
  }
  void* q = trackedResize(p, n, 1, Op::Realloc);
  leave();
  return q;
}

ML_EXPORT void* reallocarray(void* p, size_t n, size_t m) {
  size_t bytes;
  if (arena::contains(p)) return __builtin_mul_overflow(n, m, &bytes) ? nullptr : arena::resize(p, bytes);
  if (!enter()) {
    if (!own() || p) return R.reallocarray(p, n, m);
    return __builtin_mul_overflow(n, m, &bytes) ? nullptr : ownAlloc(bytes, 16);
  }
  void* q = trackedResize(p, n, m, Op::Reallocarray);
  leave();
  return q;
}

ML_EXPORT int posix_memalign(void** out, size_t align, size_t n) {
  if (!enter()) {
    if (!own()) return R.posix_memalign(out, align, n);
    if (align < sizeof(void*) || (align & (align - 1))) return 22;  // EINVAL
    *out = ownAlloc(n, align);
    return *out ? 0 : 12;  // ENOMEM
  }
  int rc = R.posix_memalign(out, align, n);
  if (rc == 0 && *out) recordAlloc(*out, n, AllocKind::Malloc, Op::PosixMemalign);
  leave();
  return rc;
}

namespace {
template <typename Fn, typename... Args>
void* alignedVia(Fn real, Op op, size_t align, size_t n, size_t ownBytes, Args... args) {
  if (!enter()) return own() ? ownAlloc(ownBytes, align) : real(args...);
  void* p = real(args...);
  if (p) recordAlloc(p, n, AllocKind::Malloc, op);
  leave();
  return p;
}
}  // namespace

ML_EXPORT void* aligned_alloc(size_t align, size_t n) {
  return alignedVia(R.aligned_alloc, Op::AlignedAlloc, align, n, n, align, n);
}
ML_EXPORT void* memalign(size_t align, size_t n) {
  return alignedVia(R.memalign, Op::Memalign, align, n, n, align, n);
}
ML_EXPORT void* valloc(size_t n) { return alignedVia(R.valloc, Op::Valloc, 4096, n, n, n); }
ML_EXPORT void* pvalloc(size_t n) {
  return alignedVia(R.pvalloc, Op::Pvalloc, 4096, n, (n + 4095) & ~size_t{4095}, n);
}

// A block of the own heap has no chunk header for glibc to read.
ML_EXPORT size_t malloc_usable_size(void* p) {
  if (arena::contains(p)) return arena::usable(p);
  if (ML_UNLIKELY(!bootstrapped())) bootstrap();
  return R.malloc_usable_size ? R.malloc_usable_size(p) : 0;
}
