/* Ground truth for a process tree (one leak site per process, sizes unique):
 *   parent     leaks 111 (parent_leak, before forking: children must not inherit it), exit 0
 *   child 1    leaks 222 (child_exit_leak), exit(0)
 *   child 2    leaks 333 (child_underscore_exit_leak), _exit(3)
 *   child 3    execs this program with --exec-child; the new image leaks 444 (exec_child_leak)
 *              and returns 5
 * The parent waits for all three and exits 0 only when each ended as described (1 otherwise). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void* volatile g_keep;

static void leak(size_t size) {
  char* p = malloc(size);
  memset(p, 'f', size);
  g_keep = p;
}

/* Each wrapper is its own frame, so every site's stack names who leaked. */
static void parent_leak(void) { leak(111); }
static void child_exit_leak(void) { leak(222); }
static void child_underscore_exit_leak(void) { leak(333); }
static void exec_child_leak(void) { leak(444); }

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--exec-child") == 0) {
    exec_child_leak();
    return 5;
  }
  parent_leak();
  fflush(stdout);

  pid_t children[3];
  if ((children[0] = fork()) == 0) {
    child_exit_leak();
    exit(0);
  }
  if ((children[1] = fork()) == 0) {
    child_underscore_exit_leak();
    _exit(3);
  }
  if ((children[2] = fork()) == 0) {
    execl("/proc/self/exe", argv[0], "--exec-child", (char*)NULL);
    _exit(126);
  }
  const int expected[3] = {0, 3, 5};
  int ok = 1;
  for (int i = 0; i < 3; i++) {
    int status = 0;
    if (children[i] < 0 || waitpid(children[i], &status, 0) != children[i]) ok = 0;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != expected[i]) ok = 0;
  }
  printf("fork_tree: children %s\n", ok ? "ended as expected" : "did NOT end as expected");
  return ok ? 0 : 1;
}
