/* The driver's part of CUDA_INJECTION64_PATH without a driver: load the collector named there and
 * call its InitializeInjection (as cuInit does), then run on as a program: one leaked malloc in
 * probe_leak() and exit status 7. With the real libcupti and no GPU driver, CUPTI refuses to
 * subscribe: the collector must print one warning and change nothing else. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void* probe_leak(void) { return malloc(1000); }

int main(void) {
  const char* path = getenv("CUDA_INJECTION64_PATH");
  if (path) {
    void* h = dlopen(path, RTLD_NOW);
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
    if (!init) {
      fprintf(stderr, "probe: cannot load %s\n", path);
      return 99;
    }
    if (init() != 1) return 98;
  }
  volatile void* p = probe_leak();
  (void)p;
  puts("probe ran");
  return 7;
}
