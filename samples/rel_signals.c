/* Reliability ground truth for signals (tests/integration/reliability_signals_test.cpp).
 *
 *   rel_signals usr1 N        a helper thread sends SIGUSR1 to the main thread N times, one at a
 *                             time, while main mallocs and frees in a loop; the program's own
 *                             handler leaks one 40-byte block per signal (handler_leak).
 *                             Prints "usr1 handled N", exits 0 (3 when a signal got lost).
 *   rel_signals usr1safe N    the same, but main blocks SIGUSR1 around its malloc/free calls (as
 *                             a program must when its handler allocates: malloc is not
 *                             async-signal-safe), so every handler runs outside the allocator.
 *   rel_signals segv SIZE     leaks 3 blocks of SIZE (doomed_leak), prints "about to die", and
 *   rel_signals abort SIZE    dies of SIGSEGV (null write) / SIGABRT (abort()) / SIGKILL (kill -9
 *   rel_signals kill9 SIZE    of itself).
 *   rel_signals sigint SIZE   prints "ready", then mallocs/frees until SIGINT arrives (its handler
 *                             writes "got SIGINT"); then leaks one SIZE block (after_sigint_leak),
 *                             prints "bye" and exits 130, as an interrupted tool does. Exits 3 if no
 *                             SIGINT came within 20 s.
 * Exit status 64 on a bad command line. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void* volatile g_sink;
static void* g_handler_blocks[100000];
static atomic_int g_handled;
static int g_wanted;
static pthread_t g_main_thread;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Allocating in a signal handler is wrong, and programs do it anyway. 40 bytes is a different
 * tcache bin than the main loop's 64, so glibc itself cannot deadlock on this. */
__attribute__((noinline)) static void handler_leak(void) {
  int i = atomic_load(&g_handled);
  g_handler_blocks[i] = malloc(40);
  memset(g_handler_blocks[i], 'h', 40);
}

static void on_usr1(int sig) {
  (void)sig;
  handler_leak();
  atomic_fetch_add(&g_handled, 1);
}

static void* sender_main(void* arg) {
  (void)arg;
  for (int i = 0; i < g_wanted; i++) {
    pthread_kill(g_main_thread, SIGUSR1);
    double deadline = now_s() + 10.0;
    while (atomic_load(&g_handled) <= i) {
      if (now_s() > deadline) {
        printf("signal %d not handled\n", i);
        fflush(stdout);
        _exit(3);
      }
      usleep(200);
    }
  }
  return NULL;
}

static int run_usr1(int n, int safe) {
  if (n < 0 || n > 100000) return 64;
  g_wanted = n;
  g_main_thread = pthread_self();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);
  pthread_t sender;
  if (pthread_create(&sender, NULL, sender_main, NULL) != 0) return 65;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  while (atomic_load(&g_handled) < n) {
    if (safe) pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    char* p = malloc(64);
    p[0] = 1;
    free(p);
    if (safe) pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);  /* a pending SIGUSR1 runs here */
  }
  pthread_join(sender, NULL);
  printf("usr1 handled %d\n", atomic_load(&g_handled));
  return 0;
}

__attribute__((noinline)) static void doomed_leak(size_t size) {
  for (int i = 0; i < 3; i++) {
    char* p = malloc(size);
    memset(p, 'x', size);
    g_sink = p;
  }
}

static void die(const char* how) {
  printf("about to die\n");
  fflush(stdout);
  if (strcmp(how, "segv") == 0) {
    signal(SIGSEGV, SIG_DFL);
    int* volatile null_pointer = NULL;
    *null_pointer = 1;
  } else if (strcmp(how, "abort") == 0) {
    abort();
  } else {
    kill(getpid(), SIGKILL);
  }
  pause();
}

static volatile sig_atomic_t g_interrupted;

/* Prints once: a terminal's Ctrl-C and a recorder forwarding it may both deliver one. */
static void on_sigint(int sig) {
  (void)sig;
  if (g_interrupted) return;
  g_interrupted = 1;
  static const char msg[] = "got SIGINT\n";
  ssize_t ignored = write(1, msg, sizeof msg - 1);
  (void)ignored;
}

__attribute__((noinline)) static void after_sigint_leak(size_t size) {
  char* p = malloc(size);
  memset(p, 'i', size);
  g_sink = p;
}

static int run_sigint(size_t size) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  printf("ready\n");
  fflush(stdout);
  double deadline = now_s() + 20.0;
  while (!g_interrupted) {
    char* p = malloc(64);
    p[0] = 1;
    free(p);
    if (now_s() > deadline) return 3;
  }
  after_sigint_leak(size);
  printf("bye\n");
  fflush(stdout);
  exit(130);
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "usr1") == 0) return run_usr1(atoi(argv[2]), 0);
  if (argc == 3 && strcmp(argv[1], "usr1safe") == 0) return run_usr1(atoi(argv[2]), 1);
  if (argc == 3 && (strcmp(argv[1], "segv") == 0 || strcmp(argv[1], "abort") == 0 ||
                    strcmp(argv[1], "kill9") == 0)) {
    doomed_leak((size_t)atol(argv[2]));
    die(argv[1]);
    return 66;
  }
  if (argc == 3 && strcmp(argv[1], "sigint") == 0) return run_sigint((size_t)atol(argv[2]));
  fprintf(stderr, "usage: rel_signals usr1 N | usr1safe N | segv SIZE | abort SIZE | kill9 SIZE | sigint SIZE\n");
  return 64;
}
