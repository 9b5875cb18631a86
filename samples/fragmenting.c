/* Ground truth for fragmentation: 200,000 x malloc(1000) (all touched), every other one freed,
 * then 100,000 x malloc(3000) (touched), which cannot reuse the 1000-byte holes. At the end
 * ~400 MB are live in ~500 MB of resident heap: a fragmentation ratio (1 - live/resident) of
 * about 0.2. Everything stays live for ~250 ms so RSS is sampled at that plateau. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kSmall = 200000, kSmallSize = 1000, kLarge = 100000, kLargeSize = 3000 };

static char** g_small;
static char** g_large;

static void allocate_small(void) {
  for (int i = 0; i < kSmall; i++) {
    g_small[i] = malloc(kSmallSize);
    memset(g_small[i], 's', kSmallSize);
  }
}

static void punch_holes(void) {
  for (int i = 0; i < kSmall; i += 2) {
    free(g_small[i]);
    g_small[i] = NULL;
  }
}

static void allocate_large(void) {
  for (int i = 0; i < kLarge; i++) {
    g_large[i] = malloc(kLargeSize);
    memset(g_large[i], 'l', kLargeSize);
  }
}

int main(void) {
  g_small = calloc(kSmall, sizeof *g_small);
  g_large = calloc(kLarge, sizeof *g_large);
  if (!g_small || !g_large) return 1;
  allocate_small();
  punch_holes();
  allocate_large();
  // Long enough for several resident-memory samples (the recorder reads anonymous RSS every 50 ms).
  struct timespec plateau = {0, 250 * 1000000L};
  nanosleep(&plateau, NULL);
  printf("fragmenting: %d small, %d large live\n", kSmall / 2, kLarge);
  return 0;
}
