/* Reliability ground truth for what a recording may hold (tests/integration/reliability_security_test.cpp).
 *
 *   rel_security   prints "dir=PATH mode=OCT" for the recorder's private directory (MEMLEDGER_DIR,
 *                  "dir=none" without one), writes a secret string into 200 heap blocks, keeps 10
 *                  of them (secret_holder leaks 10 x 256 bytes) and frees the rest; prints
 *                  "secret written" and exits 0. The secret is assembled at run time so that it is
 *                  in no file: only in memory. A recording must never contain memory contents. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void* g_kept[10];

__attribute__((noinline)) static char* secret_holder(const char* secret) {
  char* p = malloc(256);
  memset(p, 0, 256);
  for (size_t at = 0; at + strlen(secret) < 256; at += strlen(secret)) memcpy(p + at, secret, strlen(secret));
  return p;
}

int main(void) {
  const char* dir = getenv("MEMLEDGER_DIR");
  struct stat st;
  if (dir && stat(dir, &st) == 0)
    printf("dir=%s mode=%o\n", dir, (unsigned)(st.st_mode & 07777));
  else
    printf("dir=none\n");
  char secret[64];
  snprintf(secret, sizeof secret, "%s%s-%d-%s", "SEC", "RET", 4711, "ledger");
  for (int i = 0; i < 200; i++) {
    char* p = secret_holder(secret);
    if (i < 10)
      g_kept[i] = p;
    else
      free(p);
  }
  printf("secret written\n");
  return 0;
}
