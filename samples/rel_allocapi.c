/* Reliability ground truth for allocator extension APIs and foreign allocators
 * (tests/integration/reliability_allocators_test.cpp). The tests also link this same file against
 * jemalloc and tcmalloc, and run it with another LD_PRELOAD library (librel_shim.so).
 *
 *   rel_allocapi   leaks two 1111-byte blocks (usable_leak, each checked with malloc_usable_size)
 *                  and one calloc'ed 2 x 1111 block (calloc_leak); frees everything else (a realloc
 *                  chain, posix_memalign'ed blocks); calls malloc_trim(0) and mallinfo2(); when a
 *                  preloaded librel_shim.so is present, prints its answer. Prints LD_PRELOAD as it
 *                  saw it and "allocapi ok"; exits 0, or 1 when an allocator answer was wrong. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* g_keep[3];
static int g_bad;

__attribute__((noinline)) static void* usable_leak(void) {
  char* p = malloc(1111);
  size_t usable = malloc_usable_size(p);
  if (usable < 1111) {
    printf("malloc_usable_size %zu < 1111\n", usable);
    g_bad = 1;
  }
  /* The whole usable size is ours to write: an interposer must hand back the real block. */
  memset(p, 'u', usable);
  return p;
}

__attribute__((noinline)) static void* calloc_leak(void) {
  unsigned char* p = calloc(2, 1111);
  for (int i = 0; i < 2222; i++) {
    if (p[i] != 0) {
      printf("calloc byte %d not zero\n", i);
      g_bad = 1;
      break;
    }
  }
  return p;
}

__attribute__((noinline)) static void temporaries(void) {
  char* grow = NULL;
  for (size_t n = 16; n <= 65536; n *= 2) {
    char* next = realloc(grow, n);
    if (!next) {
      g_bad = 1;
      break;
    }
    grow = next;
    grow[n - 1] = 'r';
  }
  free(grow);
  for (size_t align = 16; align <= 4096; align *= 4) {
    void* p = NULL;
    if (posix_memalign(&p, align, 3000) != 0 || ((size_t)p % align) != 0) g_bad = 1;
    free(p);
  }
}

int main(void) {
  /* One call site, so both blocks are one site (one stack). */
  for (int i = 0; i < 2; i++) g_keep[i] = usable_leak();
  g_keep[2] = calloc_leak();
  temporaries();
  malloc_trim(0);
  struct mallinfo2 info = mallinfo2();
  printf("mallinfo2 arena %s\n", info.arena > 0 || info.hblkhd > 0 ? "nonzero" : "zero");
  int (*answer)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "rel_shim_answer");
  if (answer) printf("shim answer %d\n", answer());
  const char* preload = getenv("LD_PRELOAD");
  printf("LD_PRELOAD=%s\n", preload ? preload : "");
  printf("allocapi %s\n", g_bad ? "BAD" : "ok");
  return g_bad;
}
