/* Ground truth for anonymous mmap (site kind "mmap"), all made at one line in map_regions:
 *   3 x mmap(64 KiB); region 0 unmapped fully, region 1 unmapped in its upper half, region 2 kept
 *   -> leaked: 2 regions, 64 KiB + 32 KiB = 98304 bytes; mmap peak 192 KiB. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

enum { kRegion = 64 * 1024, kRegions = 3 };

static char* g_regions[kRegions];

static int map_regions(void) {
  for (int i = 0; i < kRegions; i++) {
    void* p = mmap(NULL, kRegion, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 0;
    g_regions[i] = p;
    memset(p, 'm', kRegion);
  }
  return 1;
}

static int unmap_some(void) {
  if (munmap(g_regions[0], kRegion) != 0) return 0;
  return munmap(g_regions[1] + kRegion / 2, kRegion / 2) == 0;
}

int main(void) {
  if (!map_regions() || !unmap_some()) return 1;
  printf("mmap_leak: %d bytes still mapped\n", kRegion + kRegion / 2);
  return 0;
}
