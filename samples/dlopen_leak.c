/* Ground truth: one leak of 4242 bytes made by dl_leaker in libdlleak.so, which is dlclose'd
 * before exit. The library is found next to this executable (both live in build/samples/). */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void* volatile g_keep;

int main(void) {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
  if (n <= 0) return 1;
  path[n] = '\0';
  char* slash = strrchr(path, '/');
  strcpy(slash ? slash + 1 : path, "libdlleak.so");

  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen_leak: %s\n", dlerror());
    return 1;
  }
  void* (*leaker)(void) = (void* (*)(void))dlsym(lib, "dl_leaker");
  if (!leaker) return 1;
  g_keep = leaker();
  if (dlclose(lib) != 0) return 1;
  printf("dlopen_leak: leaked through a library that is gone\n");
  return 0;
}
