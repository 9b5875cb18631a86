/* Ground truth for threads: 4 threads, each
 *   thread_leak    leaks 10 x malloc(512)            -> one site: 40 blocks, 20480 bytes
 *   thread_churn   10,000 malloc(64)/free pairs      -> nothing leaked
 * All threads run the same code, so each function is one site across all threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kThreads = 4, kLeaksPerThread = 10, kChurn = 10000 };

static void* volatile g_sink;

static void thread_leak(void) {
  for (int i = 0; i < kLeaksPerThread; i++) {
    char* p = malloc(512);
    memset(p, 't', 512);
    g_sink = p;
  }
}

static void thread_churn(void) {
  for (int i = 0; i < kChurn; i++) {
    char* p = malloc(64);
    p[0] = (char)i;
    g_sink = p;
    free(p);
  }
}

static void* worker(void* arg) {
  (void)arg;
  thread_leak();
  thread_churn();
  return NULL;
}

int main(void) {
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; i++)
    if (pthread_create(&threads[i], NULL, worker, NULL) != 0) return 1;
  for (int i = 0; i < kThreads; i++) pthread_join(threads[i], NULL);
  printf("threads_leak: %d threads done\n", kThreads);
  return 0;
}
