/* Ground truth for geometric growth: grow_doubling doubles one buffer with realloc at one line,
 * from 16 bytes to 1 MiB (16 reallocs of one block), then frees it. It already grows the way
 * `reserve_capacity` would advise, so no suggestion may tell it to; realloc_growth.c is the
 * constant-step counterpart that must still get one. Nothing leaks. */
#include <stdio.h>
#include <stdlib.h>

enum { kStart = 16, kDoublings = 16 };

static size_t grow_doubling(void) {
  size_t size = kStart;
  char* buffer = realloc(NULL, size);
  if (!buffer) return 0;
  for (int i = 0; i < kDoublings; i++) {
    size *= 2;
    char* grown = realloc(buffer, size);
    if (!grown) {
      free(buffer);
      return 0;
    }
    buffer = grown;
    buffer[size - 1] = (char)i;
  }
  free(buffer);
  return size;
}

int main(void) {
  size_t final_size = grow_doubling();
  printf("realloc_doubling: grew to %zu bytes\n", final_size);
  return final_size == ((size_t)kStart << kDoublings) ? 0 : 1;
}
