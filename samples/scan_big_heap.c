/* For bench/leak_scan_bench.sh: builds argv[1] MiB (default 1024) of live heap as 1 KiB blocks in
 * one linked list held by a global (each block: a next pointer, then data words), so the exit
 * scan reads every byte and follows a pointer per block; exits normally. */
#include <stdlib.h>
#include <string.h>

static void* volatile g_head;

int main(int argc, char** argv) {
  long mib = argc > 1 ? atol(argv[1]) : 1024;
  long blocks = mib * 1024;
  void** head = NULL;
  for (long i = 0; i < blocks; i++) {
    void** b = malloc(1024);
    memset(b, 0x5a, 1024);
    b[0] = head;
    head = b;
  }
  g_head = head;
  exit(0);
}
