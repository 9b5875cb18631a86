// Ground truth for the CUDA collector on a real GPU (tests/gpu/check.sh; docs/cuda.md):
//   leak_device():   cudaMalloc 3 MiB, never freed      -> a device leak of 3 MiB at leak_device
//   temp_buffers():  10 x cudaMalloc(1 MiB) + cudaFree  -> freed, 1 MiB live at a time
//   async_pool():    cudaMallocAsync 4 MiB on a stream, cudaFreeAsync, synchronize -> freed (kind pool)
//   pinned_buffer(): cudaMallocHost 1 MiB, cudaFreeHost -> freed (pinned)
//   managed_buffer(): cudaMallocManaged 2 MiB, cudaFree -> freed (managed)
// Without a GPU (or driver) its first CUDA call fails: it prints one line and exits 3, whether
// recorded or not. Prints "cuda_leak done" and exits 0 otherwise.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define NOINLINE __attribute__((noinline))

static void must(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "cuda_leak: %s failed: %s\n", what, cudaGetErrorString(e));
  std::exit(3);
}

NOINLINE void leak_device() {
  void* p = nullptr;
  must(cudaMalloc(&p, 3 << 20), "cudaMalloc");
}

NOINLINE void temp_buffers() {
  for (int i = 0; i < 10; ++i) {
    void* p = nullptr;
    must(cudaMalloc(&p, 1 << 20), "cudaMalloc");
    must(cudaFree(p), "cudaFree");
  }
}

NOINLINE void async_pool() {
  cudaStream_t s;
  must(cudaStreamCreate(&s), "cudaStreamCreate");
  void* p = nullptr;
  must(cudaMallocAsync(&p, 4 << 20, s), "cudaMallocAsync");
  must(cudaFreeAsync(p, s), "cudaFreeAsync");
  must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  must(cudaStreamDestroy(s), "cudaStreamDestroy");
}

NOINLINE void pinned_buffer() {
  void* p = nullptr;
  must(cudaMallocHost(&p, 1 << 20), "cudaMallocHost");
  must(cudaFreeHost(p), "cudaFreeHost");
}

NOINLINE void managed_buffer() {
  void* p = nullptr;
  must(cudaMallocManaged(&p, 2 << 20), "cudaMallocManaged");
  must(cudaFree(p), "cudaFree");
}

int main() {
  must(cudaSetDevice(0), "cudaSetDevice");
  must(cudaFree(nullptr), "cudaFree(0) (context creation)");
  leak_device();
  temp_buffers();
  async_pool();
  pinned_buffer();
  managed_buffer();
  std::puts("cuda_leak done");
  return 0;
}
