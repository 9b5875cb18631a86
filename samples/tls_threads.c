// Threads still running when the process exits, each with glibc's TLS tables (its DTV, and a
// dynamic TLS block of libtlsmod.so, dlopen'ed: __tls_get_addr mallocs it on first use) and a
// malloc'ed block of its own in a __thread pointer: all live at exit. Known truth: 4 threads,
// each 256 bytes of its own and libtlsmod's block; nothing freed by the program.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kThreads = 4 };
static __thread void* t_mine;
static pthread_barrier_t g_started;
static int* (*tlsmod_counter)(void);

static void* body(void* arg) {
  (void)arg;
  t_mine = malloc(256);
  memset(t_mine, 3, 256);
  ++*tlsmod_counter();  // the first access allocates this thread's block of the module's TLS
  pthread_barrier_wait(&g_started);
  for (;;) pause();
  return NULL;
}

int main(void) {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
  if (n <= 0) return 2;
  path[n] = '\0';
  strcpy(strrchr(path, '/') + 1, "libtlsmod.so");
  void* h = dlopen(path, RTLD_NOW);
  if (!h || !(tlsmod_counter = (int* (*)(void))dlsym(h, "tlsmod_counter"))) return 1;
  pthread_barrier_init(&g_started, NULL, kThreads + 1);
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i) pthread_create(&t[i], NULL, body, NULL);
  pthread_barrier_wait(&g_started);
  printf("tls_threads: %d threads live\n", kThreads);
  fflush(stdout);
  exit(0);
}
