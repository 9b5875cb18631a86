// Asks dlerror() before any dl call of its own: nothing to report, "(none)". The preload
// library's own failed lookups at startup (libstdc++'s operators, absent in a C program) must
// leave no message behind (one made this program crash under memledger).
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
  const char* e = dlerror();
  printf("dlerror: %s\n", e ? e : "(none)");
  return 0;
}
