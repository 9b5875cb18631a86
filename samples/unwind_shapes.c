// Call paths that make an unwinder's life hard, each leaking a known amount at the end:
//   - two callers with identical frames reaching the same leaf at the same stack depth
//     (path_a / path_b: a reused outer part of a stack must be checked, not assumed);
//   - a frame whose size changes from call to call (alloca: its CFA is rbp-based);
//   - recursion deeper than a stack record holds (150 frames > 128);
//   - a signal handler that allocates (the stack runs through the kernel's signal frame);
//   - threads doing the same at once.
// Built twice: -O0 with frame pointers (like every sample) and -O2 without (unwind_shapes_o2).
//
// Leaks (ground truth): path_a 3 x 1000 B, path_b 2 x 2000 B, with_alloca 1 x 3000 B,
// deep 150 levels 1 x 4000 B, deep 20 levels 1 x 5000 B, on_signal 1 x 777 B.
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int sink;

__attribute__((noinline)) static void* leaf(size_t n) {
  char* p = malloc(n);
  p[0] = 1;
  sink += p[0];
  return p;
}

__attribute__((noinline)) static void* with_alloca(size_t n, size_t pad) {
  char* buf = alloca(pad);
  memset(buf, 1, pad);
  void* p = leaf(n);
  sink += buf[pad - 1];
  return p;
}

__attribute__((noinline)) static void* path_a(size_t n) {
  void* p = with_alloca(n, 64);
  sink++;
  return p;
}

__attribute__((noinline)) static void* path_b(size_t n) {
  void* p = with_alloca(n, 64);
  sink--;
  return p;
}

__attribute__((noinline)) static void* deep(int d, size_t n) {
  if (d == 0) return leaf(n);
  void* p = deep(d - 1, n);
  sink += d;  // work after the call: no tail call
  return p;
}

static void* from_signal;
static void on_signal(int sig) {
  (void)sig;
  from_signal = leaf(777);
}

static void churn(int rounds) {
  for (int i = 0; i < rounds; ++i) {
    free(path_a(16));
    free(path_b(16));
    free(with_alloca(24, 16 + (size_t)(i % 7) * 32));
    free(deep(10 + i % 5, 40));
    if (i % 50 == 0) free(deep(150, 32));
  }
}

static void* worker(void* arg) {
  churn((int)(long)arg);
  return NULL;
}

int main(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, worker, (void*)500L);
  churn(1000);
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);

  signal(SIGUSR1, on_signal);
  raise(SIGUSR1);

  void* keep[9];
  keep[0] = path_a(1000);
  keep[1] = path_a(1000);
  keep[2] = path_a(1000);
  keep[3] = path_b(2000);
  keep[4] = path_b(2000);
  keep[5] = with_alloca(3000, 500);
  keep[6] = deep(150, 4000);
  keep[7] = deep(20, 5000);
  keep[8] = from_signal;
  printf("unwind_shapes: %p\n", keep[8] ? (void*)1 : NULL);
  return 0;
}
