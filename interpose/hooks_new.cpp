// operator new / delete, every libstdc++ variant. new allocates through malloc (or
// posix_memalign for aligned new) as the global scope resolves it, exactly as libstdc++'s
// operators do, so one record of kind New
// is made and the guard is never held across code that can throw. Only when memory runs out do
// we defer to libstdc++'s own operator: it runs the new_handler loop and throws std::bad_alloc.
#include <new>

#include "arena.h"
#include "runtime.h"

using namespace memledger::preload;
using memledger::wire::AllocKind;
using memledger::wire::Op;

#define ML_CXX_EXPORT __attribute__((visibility("default")))

namespace {

void* newPlain(size_t n, Op op) {
  size_t bytes = n ? n : 1;
  bool rec = enter();
  if (rec) t_state.busy = kForwarding;
  void* p = R.globalMalloc ? R.globalMalloc(bytes) : arena::alloc(bytes, 16);
  if (rec) {
    t_state.busy = 1;
    if (p) recordAlloc(p, n, AllocKind::New, op);
    leave();
  }
  return p;
}

void* newAligned(size_t n, std::align_val_t al, Op op) {
  size_t align = static_cast<size_t>(al);
  if (align < sizeof(void*)) align = sizeof(void*);
  size_t bytes = n ? n : 1;
  bool rec = enter();
  if (rec) t_state.busy = kForwarding;
  void* p = nullptr;
  if (R.globalPosixMemalign) {
    if (R.globalPosixMemalign(&p, align, bytes) != 0) p = nullptr;
  } else {
    p = arena::alloc(bytes, align);
  }
  if (rec) {
    t_state.busy = 1;
    if (p) recordAlloc(p, n, AllocKind::New, op);
    leave();
  }
  return p;
}

void deleteAny(void* p, Op op) {
  if (!p) return;
  if (arena::contains(p)) return arena::release(p);
  if (!enter()) {
    if (R.globalFree) R.globalFree(p);
    return;
  }
  Reservation r = reserveRelease();
  R.globalFree(p);
  publishRelease(r, p, 0, AllocKind::New, op);
  leave();
}

}  // namespace

// A failed allocation goes to libstdc++ (new_handler, bad_alloc); if it succeeds after the
// handler freed memory, its inner malloc is recorded with kind Malloc: rare and still paired.
ML_CXX_EXPORT void* operator new(size_t n) {
  void* p = newPlain(n, Op::New);
  return p || !R.opNew ? p : R.opNew(n);
}
ML_CXX_EXPORT void* operator new[](size_t n) {
  void* p = newPlain(n, Op::NewArray);
  return p || !R.opNewArray ? p : R.opNewArray(n);
}
ML_CXX_EXPORT void* operator new(size_t n, const std::nothrow_t& nt) noexcept {
  void* p = newPlain(n, Op::New);
  return p || !R.opNewNothrow ? p : R.opNewNothrow(n, nt);
}
ML_CXX_EXPORT void* operator new[](size_t n, const std::nothrow_t& nt) noexcept {
  void* p = newPlain(n, Op::NewArray);
  return p || !R.opNewArrayNothrow ? p : R.opNewArrayNothrow(n, nt);
}
ML_CXX_EXPORT void* operator new(size_t n, std::align_val_t al) {
  void* p = newAligned(n, al, Op::New);
  return p || !R.opNewAligned ? p : R.opNewAligned(n, static_cast<size_t>(al));
}
ML_CXX_EXPORT void* operator new[](size_t n, std::align_val_t al) {
  void* p = newAligned(n, al, Op::NewArray);
  return p || !R.opNewArrayAligned ? p : R.opNewArrayAligned(n, static_cast<size_t>(al));
}
ML_CXX_EXPORT void* operator new(size_t n, std::align_val_t al, const std::nothrow_t& nt) noexcept {
  void* p = newAligned(n, al, Op::New);
  return p || !R.opNewAlignedNothrow ? p : R.opNewAlignedNothrow(n, static_cast<size_t>(al), nt);
}
ML_CXX_EXPORT void* operator new[](size_t n, std::align_val_t al, const std::nothrow_t& nt) noexcept {
  void* p = newAligned(n, al, Op::NewArray);
  return p || !R.opNewArrayAlignedNothrow ? p
                                          : R.opNewArrayAlignedNothrow(n, static_cast<size_t>(al), nt);
}

ML_CXX_EXPORT void operator delete(void* p) noexcept { deleteAny(p, Op::Delete); }
ML_CXX_EXPORT void operator delete[](void* p) noexcept { deleteAny(p, Op::DeleteArray); }
ML_CXX_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept { deleteAny(p, Op::Delete); }
ML_CXX_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept {
  deleteAny(p, Op::DeleteArray);
}
ML_CXX_EXPORT void operator delete(void* p, size_t) noexcept { deleteAny(p, Op::Delete); }
ML_CXX_EXPORT void operator delete[](void* p, size_t) noexcept { deleteAny(p, Op::DeleteArray); }
ML_CXX_EXPORT void operator delete(void* p, std::align_val_t) noexcept { deleteAny(p, Op::Delete); }
ML_CXX_EXPORT void operator delete[](void* p, std::align_val_t) noexcept {
  deleteAny(p, Op::DeleteArray);
}
ML_CXX_EXPORT void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  deleteAny(p, Op::Delete);
}
ML_CXX_EXPORT void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  deleteAny(p, Op::DeleteArray);
}
ML_CXX_EXPORT void operator delete(void* p, size_t, std::align_val_t) noexcept {
  deleteAny(p, Op::Delete);
}
ML_CXX_EXPORT void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  deleteAny(p, Op::DeleteArray);
}
