// Loaded by deepbind.c with RTLD_DEEPBIND: its own calls to malloc and free bind to libc first
// (deep binding), so only relocations pointed at the hooks make them visible. Known truth:
// deepbound_churn() allocates 5 blocks and frees all of them (a strdup of a 34-character string,
// 35 bytes, among them) and maps and unmaps 2 pages; deepbound_leak() leaves 3 blocks of
// 1000 + 2000 + 35 bytes and one anonymous mapping of 65536 bytes.
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const char kText[] = "a string of thirty-four characters";  // 34 + NUL

void deepbound_churn(void) {
  char* a = malloc(100);
  char* b = calloc(10, 30);
  a = realloc(a, 5000);  // moves: one allocation and one free more
  char* s = strdup(kText);
  memset(a, 1, 5000);
  memset(b, 2, 300);
  free(s);
  free(b);
  free(a);
  void* aligned = NULL;
  if (posix_memalign(&aligned, 64, 640) == 0) free(aligned);
  void* pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages != MAP_FAILED) munmap(pages, 8192);
}

void* deepbound_kept[4];

void deepbound_leak(void) {
  deepbound_kept[0] = malloc(1000);
  deepbound_kept[1] = malloc(2000);
  deepbound_kept[2] = strdup(kText);
  deepbound_kept[3] = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}
