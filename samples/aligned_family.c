/* Ground truth for the aligned allocators and strdup, each leaked once, in its own function,
 * with a size no other site uses (pvalloc's is a page multiple, so rounding cannot blur it):
 *   leak_posix_memalign  posix_memalign(64, 1111)   1111 bytes
 *   leak_aligned_alloc   aligned_alloc(128, 2304)   2304 bytes
 *   leak_memalign        memalign(256, 3333)        3333 bytes
 *   leak_valloc          valloc(4444)               4444 bytes
 *   leak_pvalloc         pvalloc(8192)              8192 bytes
 *   leak_strdup          strdup of 666 chars         667 bytes (through strdup's own malloc) */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* volatile g_keep[8];

static int aligned(void* p, uintptr_t alignment) { return ((uintptr_t)p % alignment) == 0; }

static int leak_posix_memalign(void) {
  void* p = NULL;
  if (posix_memalign(&p, 64, 1111) != 0) return 0;
  memset(p, 1, 1111);
  g_keep[0] = p;
  return aligned(p, 64);
}

static int leak_aligned_alloc(void) {
  void* p = aligned_alloc(128, 2304);
  memset(p, 2, 2304);
  g_keep[1] = p;
  return aligned(p, 128);
}

static int leak_memalign(void) {
  void* p = memalign(256, 3333);
  memset(p, 3, 3333);
  g_keep[2] = p;
  return aligned(p, 256);
}

static int leak_valloc(void) {
  void* p = valloc(4444);
  memset(p, 4, 4444);
  g_keep[3] = p;
  return aligned(p, 4096);
}

static int leak_pvalloc(void) {
  void* p = pvalloc(8192);
  memset(p, 5, 8192);
  g_keep[4] = p;
  return aligned(p, 4096);
}

static int leak_strdup(void) {
  char text[667];
  memset(text, 's', 666);
  text[666] = '\0';
  char* p = strdup(text);
  g_keep[5] = p;
  return strlen(p) == 666;
}

int main(void) {
  int ok = leak_posix_memalign() + leak_aligned_alloc() + leak_memalign() + leak_valloc() +
           leak_pvalloc() + leak_strdup();
  printf("aligned_family: %d of 6 ok\n", ok);
  return ok == 6 ? 0 : 1;
}
