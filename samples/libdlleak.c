/* Loaded by dlopen_leak, which calls dl_leaker and dlclose's this library before exiting: the
 * leak's stack then points into a module that is gone at the end of the run, and the report must
 * still name dl_leaker (the recorder has to symbolize with the module as it was loaded). */
#include <stdlib.h>
#include <string.h>

void* dl_leaker(void);

void* dl_leaker(void) {
  char* p = malloc(4242);
  memset(p, 'd', 4242);
  return p;
}
