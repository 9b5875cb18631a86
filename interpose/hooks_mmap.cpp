// Anonymous memory maps (kind Mmap). Only MAP_ANONYMOUS mappings are recorded as allocations;
// every munmap/mremap records an Unmap of its range (the recorder intersects it with the
// anonymous ranges it knows). glibc's malloc maps through internal calls and is not seen here.
#include <sys/mman.h>

#include <cstdarg>

#include "runtime.h"

using namespace memledger::preload;
using memledger::wire::AllocKind;
using memledger::wire::Op;

namespace {
template <typename Fn, typename Off>
void* mapVia(Fn real, void* addr, size_t len, int prot, int flags, int fd, Off off) {
  if (!enter()) return real ? real(addr, len, prot, flags, fd, off) : rawMmap(addr, len, prot, flags, fd, off);
  void* p = real(addr, len, prot, flags, fd, off);
  if (p != MAP_FAILED && (flags & MAP_ANONYMOUS)) recordAlloc(p, len, AllocKind::Mmap, Op::Mmap);
  leave();
  return p;
}
}  // namespace

ML_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mapVia(R.mmap, addr, len, prot, flags, fd, off);
}

ML_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  return mapVia(R.mmap64, addr, len, prot, flags, fd, off);
}

ML_EXPORT int munmap(void* addr, size_t len) {
  if (!enter()) return R.munmap ? R.munmap(addr, len) : rawMunmap(addr, len);
  Reservation r = reserveRelease();
  int rc = R.munmap(addr, len);
  if (rc == 0) publishRelease(r, addr, len, AllocKind::Mmap, Op::Munmap);
  else publishNop(r);
  leave();
  return rc;
}

ML_EXPORT void* mremap(void* old, size_t oldLen, size_t newLen, int flags, ...) {
  void* target = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    target = va_arg(ap, void*);
    va_end(ap);
  }
  if (!enter()) return R.mremap(old, oldLen, newLen, flags, target);
  Reservation r = reserveRelease();
  void* p = R.mremap(old, oldLen, newLen, flags, target);
  if (p != MAP_FAILED) {
    publishRelease(r, old, oldLen, AllocKind::Mmap, Op::Mremap);
    recordAlloc(p, newLen, AllocKind::Mmap, Op::Mremap);
  } else {
    publishNop(r);
  }
  leave();
  return p;
}
