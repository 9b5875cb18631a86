/* Ground truth for the malloc family, one site per function:
 *   leak_malloc   3 x malloc(1000)          leaked  -> 3 blocks, 3000 bytes
 *   leak_calloc   2 x calloc(10, 100)       leaked  -> 2 blocks, 2000 bytes
 *   leak_realloc  malloc(100) -> realloc 200 -> realloc 300, leaked
 *                 -> 1 block of 300 at the realloc line (the malloc line leaks nothing)
 *   no_leak       malloc/calloc/realloc, all freed -> no leak site
 * Every block is written to so the compiler and the allocator cannot skip it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Leaked pointers stay reachable here, as a real leak often does. */
static void* volatile g_keep[16];
static int g_kept;

static void keep(void* p) { g_keep[g_kept++ % 16] = p; }

static void leak_malloc(void) {
  for (int i = 0; i < 3; i++) {
    char* p = malloc(1000);
    memset(p, 'm', 1000);
    keep(p);
  }
}

static void leak_calloc(void) {
  for (int i = 0; i < 2; i++) keep(calloc(10, 100));
}

static void leak_realloc(void) {
  char* p = malloc(100);
  memset(p, 'r', 100);
  /* One realloc line, so the chain ends at one site. */
  for (size_t size = 200; size <= 300; size += 100) p = realloc(p, size);
  memset(p, 'r', 300);
  keep(p);
}

static void no_leak(void) {
  char* a = malloc(5000);
  char* b = calloc(7, 13);
  memset(a, 'n', 5000);
  b = realloc(b, 900);
  free(a);
  free(b);
}

int main(void) {
  leak_malloc();
  leak_calloc();
  leak_realloc();
  no_leak();
  printf("leak_chains: kept %d blocks\n", g_kept);
  return 0;
}
