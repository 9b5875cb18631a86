/* Reliability ground truth for threads (tests/integration/reliability_threads_test.cpp).
 *
 *   rel_threads many K SIZE    64 threads start together (barrier) and each leaks exactly K blocks
 *                              of SIZE bytes at one site (thread_leak), churning malloc/free in
 *                              between; prints "many done 64" and exits 0.
 *   rel_threads churn N SIZE   N short-lived threads, at most 8 alive at a time, created and
 *                              exiting all the time; each leaks 1 block of SIZE (short_thread_leak);
 *                              prints "churn done N" and exits 0.
 *   rel_threads exit STATUS    8 threads allocate and free in a loop forever; another thread leaks
 *                              one 777-byte block (exiter_leak), prints "exiting" and calls
 *                              exit(STATUS) while the others are still allocating.
 * Exit status 64 on a bad command line, 65 when a thread cannot be created. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kManyThreads = 64, kChurnParallel = 8, kSpinners = 8 };

static size_t g_size;
static long g_count;
static pthread_barrier_t g_start;

/* Leaked blocks are kept reachable from a global so no compiler or checker calls them dead. */
static void* volatile g_sink;

__attribute__((noinline)) static void thread_leak(size_t size) {
  char* p = malloc(size);
  memset(p, 't', size);
  g_sink = p;
}

__attribute__((noinline)) static void short_thread_leak(size_t size) {
  char* p = malloc(size);
  memset(p, 's', size);
  g_sink = p;
}

__attribute__((noinline)) static void exiter_leak(void) {
  char* p = malloc(777);
  memset(p, 'e', 777);
  g_sink = p;
}

/* Temporary allocations of varying size between the leaks, so rings see interleaved traffic. */
__attribute__((noinline)) static void churn(int rounds) {
  for (int i = 0; i < rounds; i++) {
    char* p = malloc(16 + (size_t)(i % 200));
    p[0] = (char)i;
    free(p);
  }
}

static void* many_main(void* arg) {
  (void)arg;
  pthread_barrier_wait(&g_start);
  for (long i = 0; i < g_count; i++) {
    thread_leak(g_size);
    churn(50);
  }
  return NULL;
}

static int run_many(long k, size_t size) {
  g_count = k;
  g_size = size;
  pthread_t threads[kManyThreads];
  pthread_barrier_init(&g_start, NULL, kManyThreads);
  for (int i = 0; i < kManyThreads; i++) {
    if (pthread_create(&threads[i], NULL, many_main, NULL) != 0) return 65;
  }
  for (int i = 0; i < kManyThreads; i++) pthread_join(threads[i], NULL);
  pthread_barrier_destroy(&g_start);
  printf("many done %d\n", kManyThreads);
  return 0;
}

static void* short_main(void* arg) {
  (void)arg;
  short_thread_leak(g_size);
  churn(5);
  return NULL;
}

static int run_churn(long n, size_t size) {
  g_size = size;
  pthread_t threads[kChurnParallel];
  for (long done = 0; done < n;) {
    int wave = (int)(n - done < kChurnParallel ? n - done : kChurnParallel);
    for (int i = 0; i < wave; i++) {
      if (pthread_create(&threads[i], NULL, short_main, NULL) != 0) return 65;
    }
    for (int i = 0; i < wave; i++) pthread_join(threads[i], NULL);
    done += wave;
  }
  printf("churn done %ld\n", n);
  return 0;
}

static atomic_int g_spinning;

static void* spinner_main(void* arg) {
  (void)arg;
  atomic_fetch_add(&g_spinning, 1);
  for (unsigned i = 0;; i++) {
    char* p = malloc(32 + i % 512);
    p[0] = 1;
    free(p);
  }
  return NULL;
}

static int g_exit_status;

static void* exiter_main(void* arg) {
  (void)arg;
  while (atomic_load(&g_spinning) < kSpinners) usleep(1000);
  usleep(50 * 1000);
  exiter_leak();
  printf("exiting\n");
  fflush(stdout);
  exit(g_exit_status);
}

static int run_exit(int status) {
  g_exit_status = status;
  pthread_t t;
  for (int i = 0; i < kSpinners; i++) {
    if (pthread_create(&t, NULL, spinner_main, NULL) != 0) return 65;
  }
  if (pthread_create(&t, NULL, exiter_main, NULL) != 0) return 65;
  pthread_join(t, NULL); /* never returns: exiter_main calls exit() */
  return 66;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "many") == 0) return run_many(atol(argv[2]), (size_t)atol(argv[3]));
  if (argc == 4 && strcmp(argv[1], "churn") == 0) return run_churn(atol(argv[2]), (size_t)atol(argv[3]));
  if (argc == 3 && strcmp(argv[1], "exit") == 0) return run_exit(atoi(argv[2]));
  fprintf(stderr, "usage: rel_threads many K SIZE | churn N SIZE | exit STATUS\n");
  return 64;
}
