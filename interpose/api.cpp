// The C API of include/memledger/memledger.h (phase markers, pools, custom allocators) and of
// include/memledger/collector.h (events from other collectors). The headers are not included:
// they declare these weak for the program's side.
#include <atomic>
#include <cstring>

#include "include/memledger/collector.h"
#include "runtime.h"

using namespace memledger::preload;
using memledger::wire::AllocKind;
using memledger::wire::Op;
using memledger::wire::RecordType;
namespace kinds = memledger::kinds;

namespace {
std::atomic<uint32_t> g_nextPool{1};  // pool ids of this process image; 0 is the unnamed pool
}

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

ML_EXPORT unsigned memledger_pool_create(const char* name, const void* base, size_t size) {
  if (!enter()) return 0;
  uint32_t id = g_nextPool.fetch_add(1, std::memory_order_relaxed);
  if (!name) name = "";
  recordText(RecordType::PoolCreate, reinterpret_cast<uint64_t>(base), size, 0, name, strlen(name), id);
  leave();
  return id;
}

ML_EXPORT void memledger_pool_destroy(unsigned pool) {
  if (!pool || !enter()) return;
  recordSimple(RecordType::PoolDestroy, 0, 0, 0, 0, pool);
  leave();
}

ML_EXPORT void memledger_pool_alloc(unsigned pool, const void* ptr, size_t size) {
  if (!ptr || !enter()) return;
  recordAlloc(ptr, size, AllocKind::Custom, Op::PoolAlloc, pool);
  leave();
}

ML_EXPORT void memledger_pool_free(unsigned pool, const void* ptr) {
  if (!ptr || !enter()) return;
  Reservation r = reserveRelease();
  publishRelease(r, ptr, 0, AllocKind::Custom, Op::PoolFree, pool);
  leave();
}

ML_EXPORT int memledger_collector_record(const memledger_event* ev) {
  if (!ev || ev->struct_size < sizeof(memledger_event)) return -1;
  const kinds::KindInfo* k = kinds::info(ev->kind);
  if (!k || k->shape == kinds::Shape::Range || ev->op >= static_cast<uint16_t>(Op::Count)) return -1;
  bool alloc = ev->type == MEMLEDGER_EVENT_ALLOC;
  if (!alloc && ev->type != MEMLEDGER_EVENT_FREE) return -1;
  if (!enter()) return -1;
  memledger::wire::EventExtra extra{ev->time_ns, ev->stream, 0};
  const memledger::wire::EventExtra* x = (ev->time_ns || ev->stream) ? &extra : nullptr;
  Op op = ev->op ? static_cast<Op>(ev->op) : (alloc ? Op::CollectorAlloc : Op::CollectorFree);
  if (alloc) {
    recordAlloc(reinterpret_cast<const void*>(ev->address), ev->bytes, k->kind, op, ev->device, x);
  } else {
    Reservation r = reserveRelease(x ? 2 : 1);
    publishRelease(r, reinterpret_cast<const void*>(ev->address), 0, k->kind, op, ev->device, x);
  }
  leave();
  return 0;
}

ML_EXPORT int memledger_collector_note(const char* key, const char* value) {
  if (!key || !value || !*key || strchr(key, '=')) return -1;
  size_t kl = strlen(key), vl = strlen(value);
  if (kl + 1 + vl > kMaxText) return -1;
  char text[kMaxText];
  memcpy(text, key, kl);
  text[kl] = '=';
  memcpy(text + kl + 1, value, vl);
  if (!enter()) return -1;
  recordText(RecordType::CollectorNote, 0, 0, 0, text, kl + 1 + vl);
  leave();
  return 0;
}
