/* Ground truth for pools (the ledger model): one 64 MiB arena from malloc, handed out as sixteen
 * 4 MiB blocks that are reported to memledger, first through the older memledger_alloc calls, then
 * through a named pool. The heap holds 64 MiB at most (the arena), never 128: blocks inside a pool
 * count as in use of the pool. Expected:
 *   heap peak 64 MiB + the small bookkeeping below; pool "tensors" reserved 64 MiB, in use at its
 *   peak 64 MiB (16 blocks); the unnamed pool "custom" in use at its peak 64 MiB;
 *   after pool_free of 8 blocks the pool's in use drops to 32 MiB, the heap does not move;
 *   leaks: the arena is freed; 2 blocks left in the unnamed pool at exit (8 MiB "custom" leaks). */
#include <stdlib.h>
#include <string.h>

#include "memledger/memledger.h"

#define ARENA (64u << 20)
#define BLOCK (4u << 20)
#define BLOCKS 16

static char* arena_get(void) { return malloc(ARENA); }

static void old_api(char* arena) {
  for (int i = 0; i < BLOCKS; ++i) memledger_track_alloc(arena + (size_t)i * BLOCK, BLOCK);
  for (int i = 0; i < BLOCKS - 2; ++i) memledger_track_free(arena + (size_t)i * BLOCK);
}

static void named_pool(char* arena) {
  unsigned pool = memledger_track_pool_create("tensors", arena, ARENA);
  for (int i = 0; i < BLOCKS; ++i) memledger_track_pool_alloc(pool, arena + (size_t)i * BLOCK, BLOCK);
  for (int i = 0; i < BLOCKS / 2; ++i) memledger_track_pool_free(pool, arena + (size_t)i * BLOCK);
  memledger_track_pool_destroy(pool); /* the other 8 go with it: released, not leaked */
}

int main(void) {
  char* arena = arena_get();
  if (!arena) return 1;
  memset(arena, 1, 4096);
  old_api(arena);
  named_pool(arena);
  free(arena);
  return 0;
}
