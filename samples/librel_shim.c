/* A harmless LD_PRELOAD library of the kind programs already run with (a shim of their own): its
 * constructor allocates one 4242-byte block it keeps for the life of the process (shim_leak), and
 * it exports rel_shim_answer() for rel_allocapi to find. Under memledger it must keep working, and
 * its allocation — made before memledger's own constructor may have run — must be recorded. */
#include <stdlib.h>
#include <string.h>

static void* volatile g_shim_block;

__attribute__((noinline)) static void shim_leak(void) {
  char* p = malloc(4242);
  memset(p, 's', 4242);
  g_shim_block = p;
}

__attribute__((constructor)) static void shim_init(void) { shim_leak(); }

int rel_shim_answer(void) { return g_shim_block ? 42 : -1; }
