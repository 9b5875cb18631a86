/* Reliability ground truth for processes (tests/integration/reliability_process_test.cpp).
 *
 *   rel_fork mtfork N          a helper thread mallocs/frees in a tight loop (so malloc's locks are
 *                              held at random instants) while main forks N times; each child
 *                              mallocs, frees and _exit(0)s. A child that does not end within 10 s
 *                              is a deadlock: it is killed, "child hung" printed and the status is 3.
 *                              Prints "mtfork ok N", exits 0.
 *   rel_fork leakchild SIZE    main allocates a 5555-byte block (inherited_block), forks; the child
 *                              leaks one SIZE block (child_leak) and _exit(0)s without freeing the
 *                              inherited block; main waits, frees its block, prints
 *                              "leakchild status 0", exits 0. Only the child leaks.
 *   rel_fork spawn SIZE        posix_spawn of this program as "leaf SIZE 7"; exits with its status.
 *   rel_fork vfork SIZE        vfork + execv of this program as "leaf SIZE 7"; exits with its status.
 *   rel_fork leaf SIZE STATUS  leaks one SIZE block (leaf_leak), exits STATUS.
 *   rel_fork daemon SIZE FILE  daemonizes: fork, the parent prints "parent exits" and returns 0 at
 *                              once; the child calls setsid and forks again, the middle process
 *                              _exit(0)s; the daemon closes its stdio, waits 300 ms (its ancestors
 *                              are gone by then), leaks one SIZE block (daemon_leak), writes
 *                              "daemon done" to FILE and exits 0.
 * Exit status 64 on a bad command line, 65 when a process cannot be created. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static void* volatile g_sink;

__attribute__((noinline)) static void child_leak(size_t size) {
  char* p = malloc(size);
  memset(p, 'c', size);
  g_sink = p;
}

__attribute__((noinline)) static void leaf_leak(size_t size) {
  char* p = malloc(size);
  memset(p, 'l', size);
  g_sink = p;
}

__attribute__((noinline)) static void daemon_leak(size_t size) {
  char* p = malloc(size);
  memset(p, 'd', size);
  g_sink = p;
}

__attribute__((noinline)) static char* inherited_block(void) {
  char* p = malloc(5555);
  memset(p, 'i', 5555);
  return p;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* waitpid with a deadline: a child that never ends is a deadlock we must report, not wait on. */
static int wait_deadline(pid_t pid, double seconds, int* status) {
  double deadline = now_s() + seconds;
  for (;;) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return 0;
    if (r < 0) return -1;
    if (now_s() > deadline) return 1;
    usleep(1000);
  }
}

static atomic_int g_stop;

static void* malloc_hog(void* arg) {
  (void)arg;
  for (unsigned i = 0; !atomic_load(&g_stop); i++) {
    void* p = malloc(24 + i % 4000);
    free(p);
  }
  return NULL;
}

static int run_mtfork(int n) {
  pthread_t hog;
  if (pthread_create(&hog, NULL, malloc_hog, NULL) != 0) return 65;
  int result = 0;
  for (int i = 0; i < n && result == 0; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      result = 65;
      break;
    }
    if (pid == 0) {
      void* p = malloc(100 + (size_t)i);
      free(p);
      _exit(0);
    }
    int status = 0;
    int r = wait_deadline(pid, 10.0, &status);
    if (r == 1) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      printf("child %d hung\n", i);
      result = 3;
    } else if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      printf("child %d ended with status 0x%x\n", i, status);
      result = 4;
    }
  }
  atomic_store(&g_stop, 1);
  pthread_join(hog, NULL);
  if (result == 0) printf("mtfork ok %d\n", n);
  return result;
}

static int run_leakchild(size_t size) {
  char* inherited = inherited_block();
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 65;
  if (pid == 0) {
    child_leak(size);
    _exit(inherited[0] == 'i' ? 0 : 1);
  }
  int status = 0;
  if (wait_deadline(pid, 20.0, &status) != 0) return 3;
  free(inherited);
  printf("leakchild status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

static int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 70;
}

static int run_spawn(const char* size) {
  char* argv[] = {"rel_fork", "leaf", (char*)size, "7", NULL};
  pid_t pid;
  fflush(stdout);
  if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0) return 65;
  int status = 0;
  if (wait_deadline(pid, 20.0, &status) != 0) return 3;
  return exit_status_of(status);
}

static int run_vfork(const char* size) {
  /* Everything execv needs is prepared before vfork: the child may only exec or _exit. */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 65;
  self[n] = '\0';
  char* argv[] = {"rel_fork", "leaf", (char*)size, "7", NULL};
  fflush(stdout);
  pid_t pid = vfork();
  if (pid < 0) return 65;
  if (pid == 0) {
    execv(self, argv);
    _exit(127);
  }
  int status = 0;
  if (wait_deadline(pid, 20.0, &status) != 0) return 3;
  return exit_status_of(status);
}

static int run_daemon(size_t size, const char* marker) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 65;
  if (pid > 0) {
    printf("parent exits\n");
    return 0;
  }
  setsid();
  pid = fork();
  if (pid < 0) _exit(65);
  if (pid > 0) _exit(0);
  int devnull = open("/dev/null", O_RDWR);
  dup2(devnull, 0);
  dup2(devnull, 1);
  dup2(devnull, 2);
  if (devnull > 2) close(devnull);
  usleep(300 * 1000);
  daemon_leak(size);
  FILE* f = fopen(marker, "w");
  if (!f) _exit(66);
  fputs("daemon done\n", f);
  fclose(f);
  exit(0);
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "mtfork") == 0) return run_mtfork(atoi(argv[2]));
  if (argc == 3 && strcmp(argv[1], "leakchild") == 0) return run_leakchild((size_t)atol(argv[2]));
  if (argc == 3 && strcmp(argv[1], "spawn") == 0) return run_spawn(argv[2]);
  if (argc == 3 && strcmp(argv[1], "vfork") == 0) return run_vfork(argv[2]);
  if (argc == 4 && strcmp(argv[1], "leaf") == 0) {
    leaf_leak((size_t)atol(argv[2]));
    return atoi(argv[3]);
  }
  if (argc == 4 && strcmp(argv[1], "daemon") == 0) return run_daemon((size_t)atol(argv[2]), argv[3]);
  fprintf(stderr, "usage: rel_fork mtfork N | leakchild SIZE | spawn SIZE | vfork SIZE | "
                  "leaf SIZE STATUS | daemon SIZE FILE\n");
  return 64;
}
