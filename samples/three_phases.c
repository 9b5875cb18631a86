/* Ground truth for phases and the exact peak. Three phases, each ramping up in 1 MiB blocks from
 * one line (ramp), touching every block, then freeing all of them:
 *   phase 1: 100 MiB    phase 2: 300 MiB (the peak)    phase 3: 50 MiB
 * Nothing else is allocated before the end (the block table is static, nothing is printed
 * before the last phase), so the heap peak is exactly 300 MiB = 314572800 bytes, 300 blocks
 * live at the ramp's site. Between phases the heap is empty for ~20 ms. No phase markers: the
 * phases must be found from the timeline alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMiB = 1024 * 1024, kMaxBlocks = 300 };

static char* g_blocks[kMaxBlocks];

static void pause_ms(long ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

static int ramp(int mib) {
  for (int i = 0; i < mib; i++) {
    g_blocks[i] = malloc(kMiB);
    if (!g_blocks[i]) return 0;
    memset(g_blocks[i], i, kMiB);
  }
  return 1;
}

static void release(int mib) {
  for (int i = 0; i < mib; i++) free(g_blocks[i]);
}

static int phase(int mib) {
  if (!ramp(mib)) return 0;
  pause_ms(5);
  release(mib);
  pause_ms(20);
  return 1;
}

int main(void) {
  int ok = phase(100) && phase(300) && phase(50);
  printf("three_phases: %s\n", ok ? "done" : "out of memory");
  return ok ? 0 : 1;
}
