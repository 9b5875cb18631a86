// Ground truth for operator new (site kind "new"):
//   leak_objects   5 x new Obj          leaked   sizeof(Obj) = 88   -> 5 blocks, 440 bytes
//   leak_arrays    2 x new char[777]    leaked                      -> 2 blocks, 1554 bytes
//   leak_aligned   1 x new Wide         leaked   alignas(64), 192   -> 1 block, 192 bytes
//   churn_objects  new/delete, new[]/delete[], aligned new/delete   -> nothing leaked
#include <cstdint>
#include <cstdio>
#include <cstring>

struct Obj {
  char payload[88];
};
static_assert(sizeof(Obj) == 88);

struct alignas(64) Wide {
  char payload[192];
};
static_assert(sizeof(Wide) == 192 && alignof(Wide) == 64);

static void* volatile g_sink;

static void leak_objects() {
  for (int i = 0; i < 5; i++) {
    Obj* o = new Obj;
    std::memset(o->payload, 'o', sizeof o->payload);
    g_sink = o;
  }
}

static void leak_arrays() {
  for (int i = 0; i < 2; i++) {
    char* a = new char[777];
    std::memset(a, 'a', 777);
    g_sink = a;
  }
}

static bool leak_aligned() {
  Wide* w = new Wide;
  std::memset(w->payload, 'w', sizeof w->payload);
  g_sink = w;
  return reinterpret_cast<uintptr_t>(w) % 64 == 0;
}

static void churn_objects() {
  for (int i = 0; i < 10; i++) {
    Obj* o = new Obj;
    g_sink = o;
    delete o;
    char* a = new char[1234];
    g_sink = a;
    delete[] a;
    Wide* w = new Wide;
    g_sink = w;
    delete w;
  }
}

int main() {
  leak_objects();
  leak_arrays();
  bool aligned = leak_aligned();
  churn_objects();
  std::printf("cxx_new: aligned=%d\n", aligned ? 1 : 0);
  return aligned ? 0 : 1;
}
