/* Ground truth for a crash: leak_pages leaks 5 x 4096 bytes, then the program writes through a
 * null pointer and dies of SIGSEGV (exit status 139 under a shell). The leaks were published to
 * the ring before the crash, so the recording must still hold them. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void* volatile g_keep[5];

static void leak_pages(void) {
  for (int i = 0; i < 5; i++) {
    char* p = malloc(4096);
    memset(p, 'p', 4096);
    g_keep[i] = p;
  }
}

static void crash(void) {
  int* volatile null_pointer = NULL;
  *null_pointer = 42;
}

int main(void) {
  leak_pages();
  printf("segv_leak: about to crash\n");
  fflush(stdout);
  /* The default action even if the parent left SIGSEGV ignored or handled; no core file, which
   * would only litter the working folder (and can take seconds to write). */
  signal(SIGSEGV, SIG_DFL);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  crash();
  return 0;
}
