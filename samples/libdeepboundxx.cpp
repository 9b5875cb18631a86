// Loaded by deepbindxx.cpp with RTLD_DEEPBIND: its operator new and delete bind to libstdc++'s
// first (deep binding), past the hooks, unless its relocations are pointed at them. Known truth:
// deepboundxx_churn() news and deletes a vector of 100 ints (its 400-byte buffer too) and an
// array of 50 ints; deepboundxx_leak() keeps a new char[123] and an aligned new of 256 bytes.
#include <new>
#include <vector>

extern "C" void deepboundxx_churn() {
  auto* v = new std::vector<int>(100);
  delete v;
  int* a = new int[50];
  delete[] a;
}

static void* g_kept[2];

extern "C" void deepboundxx_leak() {
  g_kept[0] = new char[123];
  g_kept[1] = ::operator new(256, std::align_val_t{64});
}
