// Loads libdeepbound.so with RTLD_DEEPBIND and calls it (samples/libdeepbound.c has the known
// truth). `deepbind bare` loads it by its bare name, found through this program's RUNPATH
// ($ORIGIN), which the dlopen hook must search as this program's own dlopen would.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  char path[4096];
  const char* name = "libdeepbound.so";
  if (argc < 2 || strcmp(argv[1], "bare") != 0) {
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
    if (n <= 0) return 2;
    path[n] = '\0';
    strcpy(strrchr(path, '/') + 1, "libdeepbound.so");
    name = path;
  }
  void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!h) {
    fprintf(stderr, "deepbind: %s\n", dlerror());
    return 1;
  }
  void (*churn)(void) = (void (*)(void))dlsym(h, "deepbound_churn");
  void (*leak)(void) = (void (*)(void))dlsym(h, "deepbound_leak");
  if (!churn || !leak) return 1;
  for (int i = 0; i < 4; ++i) churn();
  leak();
  printf("deepbind: done\n");
  return 0;
}
