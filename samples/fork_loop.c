/* Ground truth for one site across processes: the parent starts kChildren children; children
 * 0 and 2 are plain forks, 1 and 3 exec this program again with --child (a new image at another
 * ASLR base). Every child reaches child_work() from the same line of main, and child_work leaks
 * kBlocks blocks of kBlockSize bytes through leak_block(): one site (the same code), leaked in
 * 4 processes, 4 x 3 x 500 = 6000 bytes in 12 blocks. The parent leaks nothing of its own and
 * exits 0 only when every child exited 0. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kChildren = 4, kBlocks = 3, kBlockSize = 500 };

static void* volatile g_keep;

static void leak_block(void) {
  char* p = malloc(kBlockSize);
  memset(p, 'c', kBlockSize);
  g_keep = p;
}

static void child_work(void) {
  for (int i = 0; i < kBlocks; i++) leak_block();
}

int main(int argc, char** argv) {
  int child = argc > 1 && strcmp(argv[1], "--child") == 0;
  pid_t pids[kChildren];
  for (int i = 0; !child && i < kChildren; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      if (i % 2 == 1) {
        execl("/proc/self/exe", argv[0], "--child", (char*)NULL);
        _exit(126);
      }
      child = 1;
    }
  }
  if (child) {
    child_work();
    return 0;
  }
  int ok = 1;
  for (int i = 0; i < kChildren; i++) {
    int status = 0;
    if (pids[i] < 0 || waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      ok = 0;
  }
  return ok ? 0 : 1;
}
