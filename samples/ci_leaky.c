/* Ground truth for `memledger check`: one program whose leaks, peak and exit status the
 * command line sets, so the integration tests can make it pass, fail and crash.
 *
 *   ci_leaky clean            allocates and frees everything, exit 0
 *   ci_leaky leak N           leaks N blocks of 1000 bytes from ci_leak_block(), exit 0
 *   ci_leaky peak BYTES       holds BYTES at once (ci_hold_peak), frees them, exit 0
 *   ci_leaky exit N           no leaks, exits with status N
 *   ci_leaky abort            no leaks, dies of SIGABRT
 * It always prints a line first, so stdio's own buffer is allocated (a built-in suppression).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void* ci_leak_block(size_t n) {
  char* p = malloc(n);
  memset(p, 1, n);
  return p;
}

__attribute__((noinline)) void ci_hold_peak(size_t bytes) {
  char* p = malloc(bytes);
  memset(p, 2, bytes);
  free(p);
}

int main(int argc, char** argv) {
  printf("ci_leaky %s\n", argc > 1 ? argv[1] : "clean");
  fflush(stdout);
  void* scratch = malloc(64);
  free(scratch);
  if (argc > 2 && strcmp(argv[1], "leak") == 0) {
    int n = atoi(argv[2]);
    for (int i = 0; i < n; ++i) ci_leak_block(1000);
  } else if (argc > 2 && strcmp(argv[1], "peak") == 0) {
    ci_hold_peak((size_t)atol(argv[2]));
  } else if (argc > 2 && strcmp(argv[1], "exit") == 0) {
    return atoi(argv[2]);
  } else if (argc > 1 && strcmp(argv[1], "abort") == 0) {
    abort();
  }
  return 0;
}
