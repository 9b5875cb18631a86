/* Ground truth for the simultaneous peak over a process tree:
 *   parent   holds 1 MiB (parent_hold) for the whole run
 *   child 1  allocates 2 MiB (child_two) and keeps it until told to exit: a leak of 2 MiB
 *   child 2  allocates 3 MiB (child_three) while child 1 still holds its 2: a leak of 3 MiB
 *            -> at that instant 1 + 2 + 3 = 6 MiB are live at once: the recording's heap peak
 *   both exit; then child 3 waits 200 ms and allocates 4 MiB (child_four), leaked at exit:
 *            1 + 4 = 5 MiB live at once. Summing every process's last value, exited ones
 *            included, would claim 10 MiB.
 * The parent exits 0 when every child exited 0. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1u << 20)
static void* volatile g_keep;

static void hold(size_t n) {
  char* p = malloc(n);
  memset(p, 1, 4096);
  g_keep = p;
}
static void parent_hold(void) { hold(1 * MiB); }
static void child_two(void) { hold(2 * MiB); }
static void child_three(void) { hold(3 * MiB); }
static void child_four(void) { hold(4 * MiB); }

/* Forks a child that runs f, says so on `ready`, and exits once `go` reaches EOF (the parent
 * closes its write end `go_out`, which the child must not hold open itself). */
static pid_t holder(void (*f)(void), int ready, int go, int go_out) {
  pid_t pid = fork();
  if (pid == 0) {
    close(go_out);
    f();
    char c = 'r';
    if (write(ready, &c, 1) != 1) _exit(2);
    while (read(go, &c, 1) > 0) {
    }
    exit(0);
  }
  return pid;
}

int main(void) {
  parent_hold();
  int ready[2], go[2];
  if (pipe(ready) || pipe(go)) return 1;
  char c;
  pid_t a = holder(child_two, ready[1], go[0], go[1]);
  if (read(ready[0], &c, 1) != 1) return 1;
  pid_t b = holder(child_three, ready[1], go[0], go[1]);
  if (read(ready[0], &c, 1) != 1) return 1;
  close(go[1]);  /* both exit now */
  int ok = 1, st;
  if (waitpid(a, &st, 0) != a || !WIFEXITED(st) || WEXITSTATUS(st)) ok = 0;
  if (waitpid(b, &st, 0) != b || !WIFEXITED(st) || WEXITSTATUS(st)) ok = 0;
  pid_t c3 = fork();
  if (c3 == 0) {
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    child_four();
    exit(0);
  }
  if (waitpid(c3, &st, 0) != c3 || !WIFEXITED(st) || WEXITSTATUS(st)) ok = 0;
  return ok ? 0 : 1;
}
