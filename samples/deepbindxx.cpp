// Loads libdeepboundxx.so with RTLD_DEEPBIND from a C++ program (libstdc++ already loaded, as in
// any C++ program) and calls it; samples/libdeepboundxx.cpp has the known truth.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

int main() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
  if (n <= 0) return 2;
  path[n] = '\0';
  std::strcpy(std::strrchr(path, '/') + 1, "libdeepboundxx.so");
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!h) {
    std::fprintf(stderr, "deepbindxx: %s\n", dlerror());
    return 1;
  }
  auto churn = reinterpret_cast<void (*)()>(dlsym(h, "deepboundxx_churn"));
  auto leak = reinterpret_cast<void (*)()>(dlsym(h, "deepboundxx_leak"));
  if (!churn || !leak) return 1;
  for (int i = 0; i < 3; ++i) churn();
  leak();
  std::string done = "deepbindxx: done";
  std::puts(done.c_str());
  return 0;
}
