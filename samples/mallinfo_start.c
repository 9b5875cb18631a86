// Prints mallinfo2().uordblks (bytes the program's heap has in use) at the start of main, after a
// malloc/free, and with one block of 777 bytes live. Under memledger the numbers must be the same
// as without it: the preload library's own memory never comes from the program's heap.
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  size_t atStart = mallinfo2().uordblks;
  void* p = malloc(100);
  free(p);
  size_t afterFree = mallinfo2().uordblks;
  void* kept = malloc(777);
  size_t withBlock = mallinfo2().uordblks;
  printf("uordblks %zu %zu %zu\n", atStart, afterFree, withBlock);
  free(kept);
  return 0;
}
