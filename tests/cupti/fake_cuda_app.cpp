// A CUDA program without CUDA: it plays the driver and the runtime over the fake libcupti
// (fake_cupti.cpp), so `memledger record` drives the real libmemledger_cupti.so end to end.
// cuInit loads CUDA_INJECTION64_PATH and calls InitializeInjection as the driver does; every
// "driver call" fires its CUPTI callbacks at entry and exit around what it does.
// Ground truth (tests/cupti/fake_cupti_test.cpp):
//   device:0  hot_loop(): 20 rounds of 4 x cudaMalloc(1 MiB) then 4 x cudaFree: 4 MiB live at once
//             pitched(): cuMemAllocPitch 1000 x 100 (pitch 1024): 102400 bytes, freed
//             stream_ordered(): cuMemAllocAsync 512 KiB on stream 5, freed with cuMemFreeAsync
//             grow_segments(): 1 GiB address reserve (never counted), 3 x cuMemCreate(2 MiB) mapped
//             (6 MiB: device 0's peak), 2 unmapped + released; 2 MiB left (leak, kind vmm)
//   device:1  leak_on_device1(): cudaMalloc 3 MiB, never freed (leak, kind device)
//   pinned    pinned_staging(): cuMemAllocHost 512 MiB (no real memory: fake addresses), freed
//   managed   managed_buffer(): cuMemAllocManaged 2 MiB, freed
//   nothing   late_teardown() at exit: a driver call after the collector's exit handler
//   nothing   failed_alloc(): cuMemAlloc answers CUDA_ERROR_OUT_OF_MEMORY; bogus_free(): cuMemFree
//             of a pointer never allocated; 5 activity records dropped.
// argv[1]: the exit code (default 0); argv[2]: hot_loop's rounds (default 20; bench/cupti_cost.sh).
// Prints "fake cuda done".
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../../cupti/driver_params.h"

namespace P = memledger::cupti::params;

extern "C" {
void fakecupti_callback(int domain, uint32_t cbid, int site, const void* params, const char* name, int* result,
                        uint32_t correlationId, uint32_t device);
uint32_t fakecupti_next_correlation();
int fakecupti_queue(const void* record);
void fakecupti_drop(size_t n);
}

#define NOINLINE __attribute__((noinline))

namespace {
uint32_t g_device = 0;  // the "current context"'s device
uint64_t g_nextDevice = 0x7f5000000000ull, g_nextHost = 0x7e5000000000ull;
uint64_t g_nextHandle = 0x100;

// One driver call: callbacks at entry and exit around `body`, which returns the call's CUresult.
template <class Body>
NOINLINE int driverCall(uint32_t cbid, const char* name, const void* params, Body body) {
  uint32_t corr = fakecupti_next_correlation();
  int result = 0;
  fakecupti_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_ENTER, params, name, &result, corr, g_device);
  result = body();
  fakecupti_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_EXIT, params, name, &result, corr, g_device);
  return result;
}
template <class Body>
NOINLINE int runtimeCall(uint32_t cbid, const char* name, Body body) {
  uint32_t corr = fakecupti_next_correlation();
  int result = 0;
  fakecupti_callback(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_ENTER, nullptr, name, &result, corr, g_device);
  result = body();
  fakecupti_callback(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_EXIT, nullptr, name, &result, corr, g_device);
  return result;
}
}  // namespace

// ---- the "driver" ----
NOINLINE int fake_cuInit() {
  const char* path = getenv("CUDA_INJECTION64_PATH");
  if (!path) return 0;
  void* h = dlopen(path, RTLD_NOW);
  if (!h) {
    fprintf(stderr, "fake driver: cannot load %s\n", path);
    return 0;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(h, "InitializeInjection"));
  return init ? init() : 0;
}

NOINLINE int fake_cuMemAlloc(CUdeviceptr* p, size_t bytes, bool fail = false) {
  P::MemAlloc a{p, bytes};
  return driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", &a, [&] {
    if (fail) return static_cast<int>(CUDA_ERROR_OUT_OF_MEMORY);
    *p = g_nextDevice;
    g_nextDevice += (bytes + 0xfffff) & ~0xfffffull;
    return 0;
  });
}
NOINLINE int fake_cuMemFree(CUdeviceptr p) {
  P::MemFree f{p};
  return driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", &f, [] { return 0; });
}

// ---- the "runtime" ----
NOINLINE int fake_cudaMalloc(CUdeviceptr* p, size_t bytes) {
  return runtimeCall(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", [&] { return fake_cuMemAlloc(p, bytes); });
}
NOINLINE int fake_cudaFree(CUdeviceptr p) {
  return runtimeCall(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", [&] { return fake_cuMemFree(p); });
}

// ---- the program ----
NOINLINE void hot_loop(int rounds) {
  for (int round = 0; round < rounds; ++round) {
    CUdeviceptr p[4];
    for (auto& x : p) fake_cudaMalloc(&x, 1 << 20);
    for (auto x : p) fake_cudaFree(x);
  }
}

NOINLINE void pitched() {
  CUdeviceptr p = 0;
  size_t pitch = 0;
  P::MemAllocPitch a{&p, &pitch, 1000, 100, 4};
  driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, "cuMemAllocPitch_v2", &a, [&] {
    p = g_nextDevice;
    pitch = 1024;
    g_nextDevice += 1 << 20;
    return 0;
  });
  fake_cuMemFree(p);
}

NOINLINE void stream_ordered() {
  CUdeviceptr p = 0;
  auto stream = reinterpret_cast<CUstream>(5);
  P::MemAllocAsync a{&p, 512 << 10, stream};
  uint32_t corr = 0;
  driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, "cuMemAllocAsync", &a, [&] {
    p = g_nextDevice;
    g_nextDevice += 1 << 20;
    return 0;
  });
  CUpti_ActivityMemory4 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.correlationId = corr;  // not the call's: joined by address
  m.address = p;
  m.bytes = 512 << 10;
  m.deviceId = 0;
  m.streamId = 5;
  m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  m.memoryPoolConfig.address = 0x7f9000000000ull;
  m.memoryPoolConfig.pool.size = 32 << 20;
  fakecupti_queue(&m);
  P::MemFreeAsync f{p, stream};
  driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, "cuMemFreeAsync", &f, [] { return 0; });
}

NOINLINE void grow_segments() {
  CUdeviceptr base = 0;
  P::MemAddressReserve r{&base, 1ull << 30, 0, 0, 0};
  driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, "cuMemAddressReserve", &r, [&] {
    base = 0x7fa000000000ull;
    return 0;
  });
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle h[3];
  for (int i = 0; i < 3; ++i) {
    P::MemCreate c{&h[i], 2 << 20, &prop, 0};
    driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, "cuMemCreate", &c, [&] {
      h[i] = g_nextHandle++;
      return 0;
    });
    P::MemMap m{base + i * (2ull << 20), 2 << 20, 0, h[i], 0};
    driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemMap, "cuMemMap", &m, [] { return 0; });
  }
  for (int i = 2; i >= 1; --i) {
    P::MemUnmap u{base + i * (2ull << 20), 2 << 20};
    driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, "cuMemUnmap", &u, [] { return 0; });
    P::MemRelease rel{h[i]};
    driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, "cuMemRelease", &rel, [] { return 0; });
  }
}

NOINLINE void leak_on_device1() {
  g_device = 1;
  CUdeviceptr p;
  fake_cudaMalloc(&p, 3 << 20);
  g_device = 0;
}

NOINLINE void pinned_staging() {
  void* host = nullptr;
  P::MemAllocHost a{&host, 512u << 20};
  driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, "cuMemAllocHost_v2", &a, [&] {
    host = reinterpret_cast<void*>(g_nextHost);
    g_nextHost += 512u << 20;
    return 0;
  });
  P::MemFreeHost f{host};
  driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, "cuMemFreeHost", &f, [] { return 0; });
}

NOINLINE void managed_buffer() {
  CUdeviceptr p = 0;
  P::MemAllocManaged a{&p, 2 << 20, 1};
  driverCall(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, "cuMemAllocManaged", &a, [&] {
    p = g_nextDevice;
    g_nextDevice += 2 << 20;
    return 0;
  });
  fake_cuMemFree(p);
}

NOINLINE void failed_alloc() {
  CUdeviceptr p = 0;
  if (fake_cuMemAlloc(&p, 1ull << 40, true) != CUDA_ERROR_OUT_OF_MEMORY) abort();
}

NOINLINE void bogus_free() { fake_cuMemFree(0xdead0000); }

// Registered before cuInit: runs after the collector's exit handler and after static destructors
// would have run, as the CUDA runtime's teardown does; its driver call must still be harmless.
void late_teardown() { fake_cuMemFree(0xbeef0000); }

int main(int argc, char** argv) {
  atexit(late_teardown);
  fake_cuInit();
  hot_loop(argc > 2 ? atoi(argv[2]) : 20);
  pitched();
  stream_ordered();
  grow_segments();
  leak_on_device1();
  pinned_staging();
  managed_buffer();
  failed_alloc();
  bogus_free();
  fakecupti_drop(5);
  puts("fake cuda done");
  return argc > 1 ? atoi(argv[1]) : 0;
}
