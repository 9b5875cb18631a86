/* The entry point for collectors other than the preload library's own hooks: the CUDA collector
 * (CUPTI callbacks), a Python-side hook, an allocator's trace callback. An event goes into the
 * same ring as the hooks' records, with the host stack of the calling thread captured by the same
 * unwinder, so it lands in the same stack tables and the same recording.
 *
 * Resolve it at run time (dlsym(RTLD_DEFAULT, "memledger_collector_record")): it exists only in a
 * process that memledger records. Kind and op codes are those of memledger's kind registry
 * (schemas/kinds.h in memledger's source; listed below for the kinds collectors report).
 */
#ifndef MEMLEDGER_COLLECTOR_H
#define MEMLEDGER_COLLECTOR_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

enum memledger_event_type { MEMLEDGER_EVENT_ALLOC = 1, MEMLEDGER_EVENT_FREE = 2 };
/* Kind codes (schemas/kinds.h). */
enum memledger_kind_code {
  MEMLEDGER_KIND_CUSTOM = 3, MEMLEDGER_KIND_DEVICE = 4, MEMLEDGER_KIND_PINNED = 5,
  MEMLEDGER_KIND_MANAGED = 6, MEMLEDGER_KIND_POOL = 7, MEMLEDGER_KIND_VMM = 8,
  MEMLEDGER_KIND_TORCH_BLOCK = 9, MEMLEDGER_KIND_PYOBJECT = 10
};

struct memledger_event {
  uint32_t struct_size; /* sizeof(struct memledger_event): the struct may grow at its end */
  uint8_t type;         /* memledger_event_type */
  uint8_t kind;         /* a kind code; not mmap (ranges come from the hooks only) */
  uint16_t op;          /* an op code of schemas/kinds.h (e.g. cuMemAlloc); 0: generic */
  uint32_t device;      /* device number for device kinds; pool id for pool blocks */
  uint32_t reserved;    /* 0 */
  uint64_t address;
  uint64_t bytes;       /* allocations: the size; frees: 0 */
  uint64_t stream;      /* CUDA stream, 0: none */
  uint64_t time_ns;     /* CLOCK_MONOTONIC of the event (late activity records); 0: now */
};

/* 0: recorded; -1: not recording, or an event memledger cannot take (unknown kind, mmap, bad
 * struct_size). Never blocks longer than the hooks do, never allocates through the program's heap. */
int memledger_collector_record(const struct memledger_event* event) __attribute__((weak));

/* A collector's own fact, "key" = "value" (e.g. "cupti.status" = "active", "cupti.dropped" =
 * "3"): the recording keeps it in its meta table as collector.KEY; integer values add up over
 * calls and processes, others keep the last one told. Key and value: printable, no '='; together
 * at most 4 KiB. 0: recorded; -1: not recording or not a valid note. */
int memledger_collector_note(const char* key, const char* value) __attribute__((weak));

#ifdef __cplusplus
}
#endif
#endif
