/* Ground truth for the collector entry point (memledger/collector.h): a program that reports
 * device-like memory the way the CUDA collector will, resolved at run time with dlsym. Expected:
 *   device:0: 3 allocations of 1, 2 and 4 MiB from device_alloc(), peak 7 MiB, 1 MiB freed and
 *   6 MiB live at exit (leaks of kind device); device:1: one 8 MiB block, freed, peak 8 MiB;
 *   pinned: 256 KiB, freed; the host heap's own peak is the 100 bytes of one malloc, untouched by
 *   any of it. Without memledger the function is absent and the program prints "no collector". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "memledger/collector.h"

typedef int (*record_fn)(const struct memledger_event*);
static record_fn record_event;

static void event(int type, int kind, unsigned device, unsigned long long address, unsigned long long bytes) {
  struct memledger_event e = {0};
  e.struct_size = sizeof e;
  e.type = (unsigned char)type;
  e.kind = (unsigned char)kind;
  e.device = device;
  e.address = address;
  e.bytes = bytes;
  e.stream = 7;
  record_event(&e);
}

static void device_alloc(unsigned long long address, unsigned long long bytes) {
  event(MEMLEDGER_EVENT_ALLOC, MEMLEDGER_KIND_DEVICE, 0, address, bytes);
}

int main(void) {
  record_event = (record_fn)dlsym(RTLD_DEFAULT, "memledger_collector_record");
  if (!record_event) {
    puts("no collector");
    return 0;
  }
  char* host = malloc(100);
  device_alloc(0x7f0000000000ull, 1u << 20);
  device_alloc(0x7f0000100000ull, 2u << 20);
  device_alloc(0x7f0000300000ull, 4u << 20);
  event(MEMLEDGER_EVENT_FREE, MEMLEDGER_KIND_DEVICE, 0, 0x7f0000000000ull, 0);
  event(MEMLEDGER_EVENT_ALLOC, MEMLEDGER_KIND_DEVICE, 1, 0x7f1000000000ull, 8u << 20);
  event(MEMLEDGER_EVENT_FREE, MEMLEDGER_KIND_DEVICE, 1, 0x7f1000000000ull, 0);
  event(MEMLEDGER_EVENT_ALLOC, MEMLEDGER_KIND_PINNED, 0, 0x7f2000000000ull, 256u << 10);
  event(MEMLEDGER_EVENT_FREE, MEMLEDGER_KIND_PINNED, 0, 0x7f2000000000ull, 0);
  free(host);
  puts("events sent");
  return 0;
}
