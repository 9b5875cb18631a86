/* Ground truth for temporaries: storm makes 1,000,000 malloc(48)/free pairs, each block freed
 * before anything else is allocated -> 1,000,000 temporaries of 48 bytes at one site, none
 * leaked. An object pool or a stack buffer would remove all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kPairs = 1000000 };

static volatile unsigned g_checksum;

static void storm(void) {
  for (int i = 0; i < kPairs; i++) {
    unsigned char* p = malloc(48);
    memset(p, i & 0xff, 48);
    g_checksum += p[47];
    free(p);
  }
}

int main(void) {
  storm();
  printf("temp_storm: %d pairs\n", kPairs);
  return 0;
}
