/* The README demo: a small "service" that loads its config (leaking it), builds an index that
 * makes a clear 64 MiB peak and is then dropped, and leaves a cache behind at exit.
 *   load_config     leaks 3 x 256 bytes
 *   fill_cache      leaks 20 x 1024 bytes
 *   build_index     64 x 1 MiB live at once (the peak), all freed
 * Phases are marked with memledger_mark_phase, a no-op when not running under memledger. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memledger/memledger.h>

enum { kMiB = 1024 * 1024, kIndexBlocks = 64 };

static void* volatile g_sink;

static void load_config(void) {
  for (int i = 0; i < 3; i++) {
    char* entry = malloc(256);
    snprintf(entry, 256, "option_%d=on", i);
    g_sink = entry;
  }
}

static size_t build_index(void) {
  char* blocks[kIndexBlocks];
  size_t checksum = 0;
  for (int i = 0; i < kIndexBlocks; i++) {
    blocks[i] = malloc(kMiB);
    memset(blocks[i], i, kMiB);
  }
  for (int i = 0; i < kIndexBlocks; i++) checksum += (unsigned char)blocks[i][i];
  for (int i = 0; i < kIndexBlocks; i++) free(blocks[i]);
  return checksum;
}

static void fill_cache(void) {
  for (int i = 0; i < 20; i++) {
    char* item = malloc(1024);
    memset(item, 'c', 1024);
    g_sink = item;
  }
}

int main(void) {
  memledger_mark_phase("load");
  load_config();
  memledger_mark_phase("index");
  size_t checksum = build_index();
  memledger_mark_phase("serve");
  fill_cache();
  printf("demo: index checksum %zu\n", checksum);
  return 0;
}
