// The driver calls' parameter blocks (CUpti_CallbackData::functionParams), as CUDA's
// generated_cuda_meta.h lays them out: one member per argument of the driver function, in order.
// Declared here rather than included: that header also names the driver's old _v1 types, which
// cuda.h declares only for the driver's own build. These layouts are the driver ABI (CUDA 12, 13).
#pragma once
#include <cuda.h>

namespace memledger::cupti::params {

struct MemAlloc { CUdeviceptr* dptr; size_t bytesize; };                    // cuMemAlloc_v2
struct MemAllocPitch { CUdeviceptr* dptr; size_t* pPitch; size_t WidthInBytes; size_t Height;
                       unsigned int ElementSizeBytes; };                    // cuMemAllocPitch_v2
struct MemAllocManaged { CUdeviceptr* dptr; size_t bytesize; unsigned int flags; };
struct MemAllocHost { void** pp; size_t bytesize; };                        // cuMemAllocHost_v2
struct MemHostAlloc { void** pp; size_t bytesize; unsigned int Flags; };
struct MemHostRegister { void* p; size_t bytesize; unsigned int Flags; };   // cuMemHostRegister_v2
struct MemHostUnregister { void* p; };
struct MemFree { CUdeviceptr dptr; };                                       // cuMemFree_v2
struct MemFreeHost { void* p; };
struct MemAllocAsync { CUdeviceptr* dptr; size_t bytesize; CUstream hStream; };  // and _ptsz
struct MemAllocFromPoolAsync { CUdeviceptr* dptr; size_t bytesize; CUmemoryPool pool; CUstream hStream; };
struct MemFreeAsync { CUdeviceptr dptr; CUstream hStream; };                // and _ptsz
struct ArrayCreate { CUarray* pHandle; const CUDA_ARRAY_DESCRIPTOR* pAllocateArray; };      // _v2
struct Array3DCreate { CUarray* pHandle; const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray; };  // _v2
struct ArrayDestroy { CUarray hArray; };
struct MipmappedArrayCreate { CUmipmappedArray* pHandle; const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc;
                              unsigned int numMipmapLevels; };
struct MipmappedArrayDestroy { CUmipmappedArray hMipmappedArray; };
struct MemCreate { CUmemGenericAllocationHandle* handle; size_t size; const CUmemAllocationProp* prop;
                   unsigned long long flags; };
struct MemRelease { CUmemGenericAllocationHandle handle; };
struct MemMap { CUdeviceptr ptr; size_t size; size_t offset; CUmemGenericAllocationHandle handle;
                unsigned long long flags; };
struct MemUnmap { CUdeviceptr ptr; size_t size; };
struct MemAddressReserve { CUdeviceptr* ptr; size_t size; size_t alignment; CUdeviceptr addr;
                           unsigned long long flags; };
struct MemAddressFree { CUdeviceptr ptr; size_t size; };

}  // namespace memledger::cupti::params
