/* memledger's C API for programs that want to tell the profiler more: phase markers, memory pools
 * and custom allocators. Every function is a weak reference: a program built with this header
 * runs unchanged without memledger, and the calls are no-ops then (use the memledger_track_*
 * wrappers below, which check).
 *
 *   memledger_mark("load");                       // starts a phase named "load" on the timeline
 *
 *   // A pool: memory the program already got (malloc, mmap) and hands out in blocks of its own.
 *   // The pool's memory counts once, where it came from; its blocks count as "in use" of the pool.
 *   unsigned pool = memledger_track_pool_create("tensors", base, 64 << 20);
 *   p = my_pool_get(...);  memledger_track_pool_alloc(pool, p, size);  ...  memledger_track_pool_free(pool, p);
 *   memledger_track_pool_destroy(pool);           // blocks still in it go with it
 *
 *   // The older calls: blocks of an unnamed pool (pool 0), counted as in use, not again as heap.
 *   memledger_alloc(p, size);  ...  memledger_free(p);
 */
#ifndef MEMLEDGER_MEMLEDGER_H
#define MEMLEDGER_MEMLEDGER_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

void memledger_mark(const char* name) __attribute__((weak));
void memledger_alloc(const void* ptr, size_t size) __attribute__((weak));
void memledger_free(const void* ptr) __attribute__((weak));
/* Returns the pool's id (> 0), or 0 when nothing records. size: the bytes the pool reserved. */
unsigned memledger_pool_create(const char* name, const void* base, size_t size) __attribute__((weak));
void memledger_pool_destroy(unsigned pool) __attribute__((weak));
void memledger_pool_alloc(unsigned pool, const void* ptr, size_t size) __attribute__((weak));
void memledger_pool_free(unsigned pool, const void* ptr) __attribute__((weak));

/* Safe to call whether or not the program runs under memledger. */
static inline void memledger_mark_phase(const char* name) { if (memledger_mark) memledger_mark(name); }
static inline void memledger_track_alloc(const void* p, size_t n) { if (memledger_alloc) memledger_alloc(p, n); }
static inline void memledger_track_free(const void* p) { if (memledger_free) memledger_free(p); }
static inline unsigned memledger_track_pool_create(const char* name, const void* base, size_t size) {
  return memledger_pool_create ? memledger_pool_create(name, base, size) : 0;
}
static inline void memledger_track_pool_destroy(unsigned pool) { if (memledger_pool_destroy) memledger_pool_destroy(pool); }
static inline void memledger_track_pool_alloc(unsigned pool, const void* p, size_t n) {
  if (memledger_pool_alloc) memledger_pool_alloc(pool, p, n);
}
static inline void memledger_track_pool_free(unsigned pool, const void* p) {
  if (memledger_pool_free) memledger_pool_free(pool, p);
}

#ifdef __cplusplus
}
#endif
#endif
