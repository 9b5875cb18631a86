// measure: runs a command and reports its wall time and peak memory, for the bench scripts.
//
//   measure [-o FILE] -- PROGRAM ARGS...
//
// Appends one line to FILE (default stderr):
//   wall_s=<s> status=<exit code, 128+N for signal N> hwm_kb=<VmHWM of PROGRAM's own process>
//   tree_maxrss_kb=<largest ru_maxrss of PROGRAM and everything it waited for>
//   signals=<signals relayed to PROGRAM while traced>
// and exits with PROGRAM's status. stdin/stdout/stderr pass through.
//
// Why ptrace: a recorder's own peak RSS is what we want, but wait4's ru_maxrss is the maximum
// over the process and all its waited-for descendants (the traced program included), and a
// process's VmHWM disappears with its address space before the parent can reap it. Stopping the
// direct child at PTRACE_EVENT_EXIT (its mm still exists) reads the exact high-water mark. Only
// the direct child is traced (no PTRACE_O_TRACEFORK): its children run untraced, so a recorder
// that forks the program is not disturbed beyond having its signals pass through us.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long readHwmKb(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  fclose(f);
  return kb;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  const char* out = NULL;
  int i = 1;
  for (; i < argc; ++i) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "--") == 0) {
      ++i;
      break;
    } else {
      break;
    }
  }
  if (i >= argc) {
    fprintf(stderr, "usage: measure [-o FILE] -- PROGRAM ARGS...\n");
    return 2;
  }
  double start = now();
  pid_t pid = fork();
  if (pid < 0) {
    perror("measure: fork");
    return 2;
  }
  if (pid == 0) {
    // Tracing may be refused (a seccomp'd container): run untraced; hwm_kb is then -1.
    ptrace(PTRACE_TRACEME, 0, NULL, NULL);
    execvp(argv[i], argv + i);
    fprintf(stderr, "measure: cannot run %s: %s\n", argv[i], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  // The Ctrl-C of a terminal reaches the whole group; we only wait for the child's end.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  long hwm = -1;
  int traced = 0, status = 0;
  long forwarded = 0;  // signal stops we relayed: each one costs the child a round trip through us
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  for (;;) {
    if (wait4(pid, &status, 0, &ru) < 0) {
      if (errno == EINTR) continue;
      perror("measure: wait4");
      return 2;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) break;
    if (!WIFSTOPPED(status)) continue;
    int sig = WSTOPSIG(status);
    int event = status >> 16;
    if (!traced && sig == SIGTRAP) {  // the stop after exec: the child now runs PROGRAM
      traced = 1;
      ptrace(PTRACE_SETOPTIONS, pid, NULL, (void*)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL));
      ptrace(PTRACE_CONT, pid, NULL, NULL);
    } else if (sig == SIGTRAP && event == PTRACE_EVENT_EXIT) {
      hwm = readHwmKb(pid);
      ptrace(PTRACE_CONT, pid, NULL, NULL);
    } else {  // a signal on its way to the child: deliver it unchanged
      ++forwarded;
      ptrace(PTRACE_CONT, pid, NULL, (void*)(long)sig);
    }
  }
  double wall = now() - start;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // wait4 gives the child's own usage; RUSAGE_CHILDREN also holds its reaped descendants'.
  struct rusage all;
  getrusage(RUSAGE_CHILDREN, &all);
  long tree = all.ru_maxrss > ru.ru_maxrss ? all.ru_maxrss : ru.ru_maxrss;
  FILE* f = out ? fopen(out, "a") : stderr;
  if (!f) {
    fprintf(stderr, "measure: cannot write %s: %s\n", out, strerror(errno));
    return code;
  }
  // CPU time (user + system) of the whole tree: the child's own and its reaped descendants'
  // (RUSAGE_CHILDREN holds the child too, once reaped). A profiler's helper process or thread
  // working beside the program shows here, not in the wall time of an idle machine.
  double cpu = (double)all.ru_utime.tv_sec + all.ru_utime.tv_usec / 1e6 + (double)all.ru_stime.tv_sec +
               all.ru_stime.tv_usec / 1e6;
  fprintf(f, "wall_s=%.4f status=%d hwm_kb=%ld tree_maxrss_kb=%ld signals=%ld cpu_s=%.3f\n", wall, code, hwm,
          tree, forwarded, cpu);
  if (out) fclose(f);
  return code;
}
