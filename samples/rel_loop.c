/* Reliability ground truth for a recorder that fails while the program runs
 * (tests/integration/reliability_recorder_test.cpp).
 *
 *   rel_loop loop TICKS FILE    TICKS ticks of 100 ms; each leaks one 3333-byte block (tick_leak),
 *                               mallocs/frees 2,000 temporaries and prints "tick I". At the end it
 *                               writes "loop done TICKS" to FILE, prints "end" and exits 0. The
 *                               tests SIGKILL the recorder in the middle: all of this must still
 *                               happen.
 *   rel_loop flood COUNT FILE   leaks COUNT blocks from 64 distinct call stacks (recursion depth
 *                               1..64), so the recording grows fast (a full disk); then writes
 *                               "flood done COUNT" to FILE, prints "flood done" and exits 0.
 * Exit status 64 on a bad command line, 66 when FILE cannot be written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void* volatile g_sink;

__attribute__((noinline)) static void tick_leak(void) {
  char* p = malloc(3333);
  memset(p, 't', 3333);
  g_sink = p;
}

static int write_marker(const char* path, const char* what, long n) {
  FILE* f = fopen(path, "w");
  if (!f) return 66;
  fprintf(f, "%s %ld\n", what, n);
  return fclose(f) == 0 ? 0 : 66;
}

static int run_loop(long ticks, const char* marker) {
  for (long i = 0; i < ticks; i++) {
    tick_leak();
    for (int j = 0; j < 2000; j++) {
      char* p = malloc(16 + (size_t)(j % 300));
      p[0] = 1;
      free(p);
    }
    printf("tick %ld\n", i);
    fflush(stdout);
    usleep(100 * 1000);
  }
  if (write_marker(marker, "loop done", ticks) != 0) return 66;
  printf("end\n");
  return 0;
}

/* Each recursion depth is a distinct call stack, hence a distinct site in the recording. */
__attribute__((noinline)) static void flood_at(int depth, size_t size) {
  if (depth > 0) {
    flood_at(depth - 1, size);
    return;
  }
  char* p = malloc(size);
  memset(p, 'f', size);
  g_sink = p;
}

static int run_flood(long count, const char* marker) {
  for (long i = 0; i < count; i++) flood_at((int)(i % 64) + 1, 24 + (size_t)(i % 1000));
  if (write_marker(marker, "flood done", count) != 0) return 66;
  printf("flood done\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "loop") == 0) return run_loop(atol(argv[2]), argv[3]);
  if (argc == 4 && strcmp(argv[1], "flood") == 0) return run_flood(atol(argv[2]), argv[3]);
  fprintf(stderr, "usage: rel_loop loop TICKS FILE | flood COUNT FILE\n");
  return 64;
}
