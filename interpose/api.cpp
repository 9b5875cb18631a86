// The C API of include/memledger/memledger.h: phase markers and custom allocators.
// (The header is not included: it declares these weak for the program's side.)
#include <cstring>

#include "runtime.h"

using namespace memledger::preload;
using memledger::wire::AllocKind;
using memledger::wire::Op;
using memledger::wire::RecordType;

ML_EXPORT void memledger_mark(const char* name) {
  if (!name || !enter()) return;
  recordText(RecordType::Marker, 0, 0, 0, name, strlen(name));
  leave();
}

ML_EXPORT void memledger_alloc(const void* ptr, size_t size) {
  if (!ptr || !enter()) return;
  recordAlloc(ptr, size, AllocKind::Custom, Op::CustomAlloc);
  leave();
}

ML_EXPORT void memledger_free(const void* ptr) {
  if (!ptr || !enter()) return;
  Reservation r = reserveRelease();
  publishRelease(r, ptr, 0, AllocKind::Custom, Op::CustomFree);
  leave();
}
