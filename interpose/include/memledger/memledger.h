/* memledger's C API for programs that want to tell the profiler more: phase markers and custom
 * allocators (pools, arenas). Every function is a weak reference: a program built with this header
 * runs unchanged without memledger, and the calls are no-ops then.
 *
 *   memledger_mark("load");           // starts a phase named "load" on the timeline
 *   p = pool_get(pool);  memledger_alloc(p, size);  ...  memledger_free(p);
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

/* Safe to call whether or not the program runs under memledger. */
static inline void memledger_mark_phase(const char* name) { if (memledger_mark) memledger_mark(name); }
static inline void memledger_track_alloc(const void* p, size_t n) { if (memledger_alloc) memledger_alloc(p, n); }
static inline void memledger_track_free(const void* p) { if (memledger_free) memledger_free(p); }

#ifdef __cplusplus
}
#endif
#endif
