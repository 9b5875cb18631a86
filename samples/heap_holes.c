/* Ground truth for the fragmentation map (analyzer/heap_map.h, the GUI's Fragmentation view):
 * holes of a known size at known addresses in glibc's main heap.
 *   make_blocks   64 x malloc(4000), one after another from a fresh heap (4016-byte chunks:
 *                 neighbours 4016 B apart, 16 B of rounding and header between two blocks)
 *   punch         frees every even one: 32 blocks live, 31 holes of 4032 B between them (the
 *                 freed chunk and the rounding of the block before it)
 *   make_larger   8 x malloc(9000): they fit no hole, so they go above the last 4000-byte block
 *   drop_larger   frees them again; the 32 small blocks stay live until exit (leaks, on purpose:
 *                 a default recording keeps rows for them, so its map is exact at the end)
 * Phases are marked ("allocated", "holes", "larger", "end") with 20 ms of quiet after each, so a
 * time 10 ms after a marker sees that phase's layout. Each block's address goes to stderr
 * ("small I 0xADDR", "large I 0xADDR") through write(2), which allocates nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <memledger/memledger.h>

enum { kSmall = 64, kSmallSize = 4000, kLarge = 8, kLargeSize = 9000 };

static char* g_small[kSmall];
static char* g_large[kLarge];

static void quiet(void) {
  struct timespec ts = {0, 20 * 1000000L};
  nanosleep(&ts, NULL);
}

static void tell(const char* what, int i, const void* p) {
  char line[64];
  int n = snprintf(line, sizeof line, "%s %d %p\n", what, i, p);
  if (n > 0) (void)!write(2, line, (size_t)n);
}

static void make_blocks(void) {
  for (int i = 0; i < kSmall; i++) {
    g_small[i] = malloc(kSmallSize);
    memset(g_small[i], 's', kSmallSize);
  }
}

static void punch(void) {
  for (int i = 0; i < kSmall; i += 2) {
    free(g_small[i]);
    g_small[i] = NULL;
  }
}

static void make_larger(void) {
  for (int i = 0; i < kLarge; i++) {
    g_large[i] = malloc(kLargeSize);
    memset(g_large[i], 'l', kLargeSize);
  }
}

static void drop_larger(void) {
  for (int i = 0; i < kLarge; i++) free(g_large[i]);
}

int main(void) {
  make_blocks();
  for (int i = 0; i < kSmall; i++) tell("small", i, g_small[i]);
  memledger_mark_phase("allocated");
  quiet();
  punch();
  memledger_mark_phase("holes");
  quiet();
  make_larger();
  for (int i = 0; i < kLarge; i++) tell("large", i, g_large[i]);
  memledger_mark_phase("larger");
  quiet();
  drop_larger();
  memledger_mark_phase("end");
  quiet();
  return 0;
}
