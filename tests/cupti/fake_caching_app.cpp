// A caching device allocator without a GPU, for the fragmentation map of device memory: segments
// come from cudaMalloc over the fake libcupti (fake_cupti.cpp), so `memledger record` sees them
// through the real CUDA collector; the blocks the allocator carves out of a segment are reported
// with memledger's pool API (interpose/include/memledger/memledger.h), one pool per segment, as a
// caching allocator that tells memledger its blocks would (PyTorch's segments and blocks).
// Ground truth (tests/cupti/heap_map_device_test.cpp, gui/tests/fragmentation_test.cpp):
//   segment0   cudaMalloc 20 MiB (device:0), pool "segment0": 8 blocks of 2 MiB from its start,
//              then blocks 1, 3 and 5 freed: three 2 MiB holes and 4 MiB free at the end
//   segment1   a 6 MiB block fits no hole of segment0 (10 MiB free, largest piece 4 MiB): a new
//              cudaMalloc of 8 MiB right after segment0, pool "segment1", the block at its start
// Everything stays live at exit. Prints "fake caching done".
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "../../cupti/driver_params.h"
#include "memledger/memledger.h"

namespace P = memledger::cupti::params;

extern "C" {
void fakecupti_callback(int domain, uint32_t cbid, int site, const void* params, const char* name, int* result,
                        uint32_t correlationId, uint32_t device);
uint32_t fakecupti_next_correlation();
}

#define NOINLINE __attribute__((noinline))

namespace {
constexpr uint64_t MiB = 1 << 20;
uint64_t g_next = 0x7f5000000000ull;

NOINLINE void fake_cuInit() {
  const char* path = getenv("CUDA_INJECTION64_PATH");
  if (!path) return;
  void* h = dlopen(path, RTLD_NOW);
  if (!h) return (void)fprintf(stderr, "fake driver: cannot load %s\n", path);
  if (auto init = reinterpret_cast<int (*)()>(dlsym(h, "InitializeInjection"))) init();
}

// cudaMalloc: the runtime call around the driver's cuMemAlloc_v2, with their callbacks.
NOINLINE CUdeviceptr fake_cudaMalloc(size_t bytes) {
  CUdeviceptr p = 0;
  uint32_t outer = fakecupti_next_correlation(), inner = fakecupti_next_correlation();
  int result = 0;
  fakecupti_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_ENTER, nullptr,
                     "cudaMalloc", &result, outer, 0);
  P::MemAlloc a{&p, bytes};
  fakecupti_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_ENTER, &a,
                     "cuMemAlloc_v2", &result, inner, 0);
  p = g_next;
  g_next += (bytes + MiB - 1) & ~(MiB - 1);
  fakecupti_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_EXIT, &a,
                     "cuMemAlloc_v2", &result, inner, 0);
  fakecupti_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_EXIT, nullptr,
                     "cudaMalloc", &result, outer, 0);
  return p;
}

struct Segment {
  CUdeviceptr base;
  uint64_t size;
  unsigned pool;
};

NOINLINE Segment new_segment(const char* name, uint64_t size) {
  CUdeviceptr base = fake_cudaMalloc(size);
  return {base, size, memledger_track_pool_create(name, reinterpret_cast<void*>(base), size)};
}

NOINLINE void carve_block(const Segment& s, uint64_t offset, uint64_t size) {
  memledger_track_pool_alloc(s.pool, reinterpret_cast<void*>(s.base + offset), size);
}

NOINLINE void release_block(const Segment& s, uint64_t offset) {
  memledger_track_pool_free(s.pool, reinterpret_cast<void*>(s.base + offset));
}
}  // namespace

int main() {
  fake_cuInit();
  Segment s0 = new_segment("segment0", 20 * MiB);
  for (int i = 0; i < 8; ++i) carve_block(s0, i * 2 * MiB, 2 * MiB);
  for (int i = 1; i < 6; i += 2) release_block(s0, i * 2 * MiB);
  Segment s1 = new_segment("segment1", 8 * MiB);
  carve_block(s1, 0, 6 * MiB);
  puts("fake caching done");
  return 0;
}
