/* Ground truth for realloc growth: grow_buffer grows one buffer by 16 bytes at a time, 10,000
 * times (16 -> 160000 bytes) with realloc at one line, then frees it: one chain of 10,000
 * reallocs, nothing leaked. Reserving the final capacity up front would remove all of them. */
#include <stdio.h>
#include <stdlib.h>

enum { kSteps = 10000, kStep = 16 };

static size_t grow_buffer(void) {
  char* buffer = NULL;
  size_t size = 0;
  for (int i = 0; i < kSteps; i++) {
    size += kStep;
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
  size_t final_size = grow_buffer();
  printf("realloc_growth: grew to %zu bytes\n", final_size);
  return final_size == (size_t)kSteps * kStep ? 0 : 1;
}
