// The CUDA collector's pure part (cupti/tracker.h) on synthetic CUPTI values: every driver entry
// point, failed calls, runtime->driver nesting, VMM sequences as PyTorch's expandable segments
// make them, frees of unknown pointers, and both arrival orders of callback and activity record.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "../../cupti/driver_params.h"
#include "../../cupti/tracker.h"
#include "../../interpose/include/memledger/collector.h"
#include "../../schemas/kinds.h"

using namespace memledger::cupti;
namespace P = memledger::cupti::params;
using memledger::kinds::Op;

namespace {

// The context's device is its uid (tests choose it); a stream's id is its handle + 1000.
struct FixedLookup : Lookup {
  uint32_t deviceOf(const CUpti_CallbackData& cb) override { return cb.contextUid; }
  uint64_t streamOf(const CUpti_CallbackData&, CUstream s) override {
    return reinterpret_cast<uint64_t>(s) + 1000;
  }
};

class TrackerTest : public ::testing::Test {
 protected:
  FixedLookup lookup;
  Tracker tracker{lookup};
  ThreadState thread;
  uint32_t nextCorr = 1;
  uint32_t device = 0;

  // One driver call: its ENTER and EXIT callbacks; returns the events of both.
  EventList driver(CUpti_CallbackId cbid, const void* params, CUresult rv = CUDA_SUCCESS,
                            uint32_t corr = 0) {
    EventList out;
    CUpti_CallbackData cb{};
    cb.functionParams = params;
    cb.functionReturnValue = &rv;
    cb.correlationId = corr ? corr : nextCorr++;
    cb.contextUid = device;
    cb.callbackSite = CUPTI_API_ENTER;
    tracker.onCallback(thread, CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb, out);
    EXPECT_TRUE(out.empty()) << "nothing is counted at a call's entry";
    cb.callbackSite = CUPTI_API_EXIT;
    tracker.onCallback(thread, CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb, out);
    return out;
  }
  void runtime(CUpti_ApiCallbackSite site, CUpti_CallbackId cbid) {
    EventList out;
    CUpti_CallbackData cb{};
    cudaError_t rv{};
    cb.callbackSite = site;
    cb.functionReturnValue = &rv;
    EXPECT_EQ(tracker.onCallback(thread, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, cb, out), 0u);
  }
  Event one(const EventList& ev) {
    EXPECT_EQ(ev.size(), 1u);
    return ev.empty() ? Event{} : ev[0];
  }
  Event alloc(CUdeviceptr addr, size_t bytes) {
    CUdeviceptr p = addr;
    P::MemAlloc a{&p, bytes};
    return one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a));
  }
  EventList free(CUdeviceptr addr) {
    P::MemFree f{addr};
    return driver(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f);
  }
};

void expectEvent(const Event& e, int type, int kind, Op op, uint32_t device, uint64_t address,
                 uint64_t bytes) {
  EXPECT_EQ(e.type, type);
  EXPECT_EQ(e.kind, kind);
  EXPECT_EQ(e.op, static_cast<uint16_t>(op)) << memledger::kinds::opName(e.op);
  EXPECT_EQ(e.device, device);
  EXPECT_EQ(e.address, address);
  EXPECT_EQ(e.bytes, bytes);
}

TEST_F(TrackerTest, DeviceAllocAndFreeOnTheirDevice) {
  device = 2;
  expectEvent(alloc(0x7f0000000000, 1 << 20), MEMLEDGER_EVENT_ALLOC, MEMLEDGER_KIND_DEVICE, Op::CuMemAlloc, 2,
              0x7f0000000000, 1 << 20);
  device = 0;  // freed from another thread's context: the block keeps its own device
  expectEvent(one(free(0x7f0000000000)), MEMLEDGER_EVENT_FREE, MEMLEDGER_KIND_DEVICE, Op::CuMemFree, 2,
              0x7f0000000000, 0);
  EXPECT_EQ(tracker.liveBlocks(), 0u);
  Stats s = tracker.stats();
  EXPECT_EQ(s.allocs, 1u);
  EXPECT_EQ(s.frees, 1u);
}

TEST_F(TrackerTest, EveryAllocatingEntryPoint) {
  device = 1;
  CUdeviceptr d = 0x7f0000100000;
  size_t pitch = 512;
  P::MemAllocPitch pa{&d, &pitch, 500, 30, 4};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, &pa)), 1, MEMLEDGER_KIND_DEVICE,
              Op::CuMemAllocPitch, 1, d, 512 * 30);
  CUdeviceptr m = 0x7f0000200000;
  P::MemAllocManaged ma{&m, 4096, 1};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, &ma)), 1, MEMLEDGER_KIND_MANAGED,
              Op::CuMemAllocManaged, 0, m, 4096);
  void* host = reinterpret_cast<void*>(0x600000);
  P::MemAllocHost ah{&host, 8192};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, &ah)), 1, MEMLEDGER_KIND_PINNED,
              Op::CuMemAllocHost, 0, 0x600000, 8192);
  void* host2 = reinterpret_cast<void*>(0x700000);
  P::MemHostAlloc ha{&host2, 100, 0};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, &ha)), 1, MEMLEDGER_KIND_PINNED,
              Op::CuMemHostAlloc, 0, 0x700000, 100);
  P::MemHostRegister hr{reinterpret_cast<void*>(0x800000), 65536, 0};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2, &hr)), 1, MEMLEDGER_KIND_PINNED,
              Op::CuMemHostRegister, 0, 0x800000, 65536);
  CUdeviceptr a1 = 0x7f0000300000, a2 = 0x7f0000400000, a3 = 0x7f0000500000;
  auto stream = reinterpret_cast<CUstream>(7);
  P::MemAllocAsync aa{&a1, 1000, stream};
  Event e = one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, &aa));
  expectEvent(e, 1, MEMLEDGER_KIND_POOL, Op::CuMemAllocAsync, 1, a1, 1000);
  EXPECT_EQ(e.stream, 1007u);
  P::MemAllocAsync aap{&a2, 2000, stream};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, &aap)), 1, MEMLEDGER_KIND_POOL,
              Op::CuMemAllocAsync, 1, a2, 2000);
  P::MemAllocFromPoolAsync fp{&a3, 3000, reinterpret_cast<CUmemoryPool>(0x99), stream};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, &fp)), 1, MEMLEDGER_KIND_POOL,
              Op::CuMemAllocFromPoolAsync, 1, a3, 3000);
  CUdeviceptr a4 = 0x7f0000600000;
  P::MemAllocFromPoolAsync fpp{&a4, 4000, reinterpret_cast<CUmemoryPool>(0x99), stream};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, &fpp)), 1, MEMLEDGER_KIND_POOL,
              Op::CuMemAllocFromPoolAsync, 1, a4, 4000);
  // Arrays: bytes from the descriptor (float4 256x128; 3D 8-bit 64x64x4; mipmapped 3 levels).
  CUarray arr = reinterpret_cast<CUarray>(0xa1);
  CUDA_ARRAY_DESCRIPTOR ad{256, 128, CU_AD_FORMAT_FLOAT, 4};
  P::ArrayCreate ac{&arr, &ad};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2, &ac)), 1, MEMLEDGER_KIND_DEVICE,
              Op::CuArrayCreate, 1, 0xa1, 256 * 128 * 16);
  CUarray arr3 = reinterpret_cast<CUarray>(0xa2);
  CUDA_ARRAY3D_DESCRIPTOR ad3{};
  ad3.Width = 64;
  ad3.Height = 64;
  ad3.Depth = 4;
  ad3.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  ad3.NumChannels = 1;
  P::Array3DCreate ac3{&arr3, &ad3};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2, &ac3)), 1, MEMLEDGER_KIND_DEVICE,
              Op::CuArrayCreate, 1, 0xa2, 64 * 64 * 4);
  CUmipmappedArray mip = reinterpret_cast<CUmipmappedArray>(0xa3);
  CUDA_ARRAY3D_DESCRIPTOR md{};
  md.Width = 64;
  md.Height = 64;
  md.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  md.NumChannels = 1;
  P::MipmappedArrayCreate mc{&mip, &md, 3};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate, &mc)), 1, MEMLEDGER_KIND_DEVICE,
              Op::CuArrayCreate, 1, 0xa3, 64 * 64 + 32 * 32 + 16 * 16);

  // Their frees, each with the kind and device of its allocation.
  P::MemFree f1{d};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f1)), 2, MEMLEDGER_KIND_DEVICE, Op::CuMemFree, 1, d, 0);
  P::MemFree f2{m};  // managed memory is freed with cuMemFree too
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f2)), 2, MEMLEDGER_KIND_MANAGED, Op::CuMemFree, 0, m, 0);
  P::MemFreeHost fh{host};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &fh)), 2, MEMLEDGER_KIND_PINNED, Op::CuMemFreeHost, 0,
              0x600000, 0);
  P::MemFreeHost fh2{host2};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &fh2)), 2, MEMLEDGER_KIND_PINNED, Op::CuMemFreeHost, 0,
              0x700000, 0);
  P::MemHostUnregister hu{reinterpret_cast<void*>(0x800000)};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, &hu)), 2, MEMLEDGER_KIND_PINNED,
              Op::CuMemHostUnregister, 0, 0x800000, 0);
  P::MemFreeAsync fa{a1, reinterpret_cast<CUstream>(9)};
  e = one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, &fa));
  expectEvent(e, 2, MEMLEDGER_KIND_POOL, Op::CuMemFreeAsync, 1, a1, 0);
  EXPECT_EQ(e.stream, 1009u);
  P::MemFreeAsync fap{a2, stream};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, &fap)), 2, MEMLEDGER_KIND_POOL,
              Op::CuMemFreeAsync, 1, a2, 0);
  P::MemFree f3{a3};  // stream-ordered memory freed with cuMemFree
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f3)), 2, MEMLEDGER_KIND_POOL, Op::CuMemFree, 1, a3, 0);
  P::ArrayDestroy ard{arr};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy, &ard)), 2, MEMLEDGER_KIND_DEVICE,
              Op::CuArrayDestroy, 1, 0xa1, 0);
  P::ArrayDestroy ard3{arr3};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy, &ard3)), 2, MEMLEDGER_KIND_DEVICE,
              Op::CuArrayDestroy, 1, 0xa2, 0);
  P::MipmappedArrayDestroy mdes{mip};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy, &mdes)), 2, MEMLEDGER_KIND_DEVICE,
              Op::CuArrayDestroy, 1, 0xa3, 0);
  EXPECT_EQ(tracker.liveBlocks(), 1u);  // a4 is left
  Stats s = tracker.stats();
  EXPECT_EQ(s.allocs, 12u);
  EXPECT_EQ(s.frees, 11u);
  EXPECT_EQ(s.unknownFrees, 0u);
}

TEST_F(TrackerTest, EveryEnabledDriverCbidIsDecoded) {
  // Each cbid the glue enables is one the tracker handles: a call with zeroed pointers to
  // well-formed parameters never crashes, and the list holds no duplicates.
  const auto& ids = Tracker::driverCbids();
  std::set<CUpti_CallbackId> seen(ids.begin(), ids.end());
  EXPECT_EQ(seen.size(), ids.size());
  EXPECT_EQ(ids.size(), 26u);
  EXPECT_EQ(Tracker::runtimeCbids().size(), 21u);
}

TEST_F(TrackerTest, FailedCallsRecordNothing) {
  CUdeviceptr p = 0x7f0000000000;
  P::MemAlloc a{&p, 1 << 30};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a, CUDA_ERROR_OUT_OF_MEMORY).empty());
  alloc(0x7f0000000000, 64);
  P::MemFree f{0x7f0000000000};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f, CUDA_ERROR_INVALID_VALUE).empty());
  EXPECT_EQ(one(free(0x7f0000000000)).type, MEMLEDGER_EVENT_FREE);  // the block was still live
  EXPECT_EQ(tracker.stats().failedCalls, 2u);
  // A zero-byte allocation returns no pointer; cuMemFree(0) does nothing.
  CUdeviceptr none = 0;
  P::MemAlloc z{&none, 0};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &z).empty());
  EXPECT_TRUE(free(0).empty());
  EXPECT_EQ(tracker.stats().unknownFrees, 0u);
}

TEST_F(TrackerTest, FreesOfUnknownPointersAreCountedNotRecorded) {
  EXPECT_TRUE(free(0x1234).empty());
  P::MemFreeHost fh{reinterpret_cast<void*>(0x5678)};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &fh).empty());
  P::MemRelease r{0x42};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &r).empty());
  P::MemAddressFree af{0x9000, 4096};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree, &af).empty());
  alloc(0x7f0000000000, 64);
  one(free(0x7f0000000000));
  EXPECT_TRUE(free(0x7f0000000000).empty());  // a double free
  EXPECT_EQ(tracker.stats().unknownFrees, 5u);
}

TEST_F(TrackerTest, RuntimeCallsLabelTheDriverCallsInsideThemAndCountNothing) {
  runtime(CUPTI_API_ENTER, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
  EXPECT_EQ(thread.runtimeCbid, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
  alloc(0x7f0000000000, 256);
  runtime(CUPTI_API_EXIT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
  EXPECT_EQ(thread.runtimeDepth, 0u);
  // cudaFree: the runtime call around it makes no event of its own.
  runtime(CUPTI_API_ENTER, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020);
  EXPECT_EQ(free(0x7f0000000000).size(), 1u);
  runtime(CUPTI_API_EXIT, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020);
  alloc(0x7f0000100000, 512);  // a direct driver call
  Stats s = tracker.stats();
  EXPECT_EQ(s.allocs, 2u);
  EXPECT_EQ(s.frees, 1u);
  EXPECT_EQ(s.runtimeNested, 2u);
}

// PyTorch's expandable segments: one large address reservation, growth by 20 MiB handles
// created and mapped into it, shrink by unmap + release. Physical memory is the handles'.
TEST_F(TrackerTest, ExpandableSegmentsCountPhysicalHandlesNeverTheReservation) {
  device = 0;
  constexpr size_t kSeg = 20u << 20;
  CUdeviceptr base = 0x7f4000000000;
  P::MemAddressReserve res{&base, 160ull << 30, 0, 0, 0};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, &res).empty());
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 3;
  std::vector<CUmemGenericAllocationHandle> handles;
  for (int i = 0; i < 3; ++i) {
    CUmemGenericAllocationHandle h = 0x1000 + i;
    P::MemCreate c{&h, kSeg, &prop, 0};
    expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &c)), 1, MEMLEDGER_KIND_VMM, Op::CuMemCreate, 3, h,
                kSeg);
    P::MemMap m{base + i * kSeg, kSeg, 0, h, 0};
    EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &m).empty());
    handles.push_back(h);
  }
  EXPECT_EQ(tracker.stats().mappedBytes, 3 * kSeg);
  // Shrink the last segment as PyTorch does: unmap, then release (the free comes at release).
  P::MemUnmap u{base + 2 * kSeg, kSeg};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &u).empty());
  P::MemRelease r{handles[2]};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &r)), 2, MEMLEDGER_KIND_VMM, Op::CuMemRelease, 3,
              handles[2], 0);
  // Release while still mapped (allowed): the memory goes when its last mapping does.
  P::MemRelease r1{handles[1]};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &r1).empty());
  P::MemRelease r0{handles[0]};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &r0).empty());
  // One unmap over both remaining segments frees both handles.
  P::MemUnmap u2{base, 2 * kSeg};
  EventList ev = driver(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &u2);
  ASSERT_EQ(ev.size(), 2u);
  expectEvent(ev[0], 2, MEMLEDGER_KIND_VMM, Op::CuMemUnmap, 3, handles[0], 0);
  expectEvent(ev[1], 2, MEMLEDGER_KIND_VMM, Op::CuMemUnmap, 3, handles[1], 0);
  P::MemAddressFree af{base, 160ull << 30};
  EXPECT_TRUE(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree, &af).empty());
  Stats s = tracker.stats();
  EXPECT_EQ(s.allocs, 3u);
  EXPECT_EQ(s.frees, 3u);
  EXPECT_EQ(s.reservePeakBytes, 160ull << 30);
  EXPECT_EQ(s.reserveBytes, 0u);
  EXPECT_EQ(s.mappedPeakBytes, 3 * kSeg);
  EXPECT_EQ(s.mappedBytes, 0u);
  EXPECT_EQ(s.unknownFrees, 0u);
  EXPECT_EQ(tracker.liveBlocks(), 0u);
}

TEST_F(TrackerTest, HostLocatedPhysicalMemoryIsPinned) {
  CUmemAllocationProp prop{};
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CUmemGenericAllocationHandle h = 0x77;
  P::MemCreate c{&h, 2 << 20, &prop, 0};
  expectEvent(one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &c)), 1, MEMLEDGER_KIND_PINNED, Op::CuMemCreate, 0, h,
              2 << 20);
}

CUpti_ActivityMemory4 memoryRecord(uint32_t corr, uint64_t address, uint64_t bytes, uint32_t device,
                                   uint32_t stream, CUpti_ActivityMemoryKind kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                   CUpti_ActivityMemoryOperationType op = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
  CUpti_ActivityMemory4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = op;
  m.memoryKind = kind;
  m.correlationId = corr;
  m.address = address;
  m.bytes = bytes;
  m.deviceId = device;
  m.streamId = stream;
  return m;
}

TEST_F(TrackerTest, RecordAfterItsCallIsJoinedAndAddsNothing) {
  device = 1;
  CUdeviceptr p = 0x7f0000000000;
  P::MemAlloc a{&p, 4096};
  one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a, CUDA_SUCCESS, 500));
  CUpti_ActivityMemory4 m = memoryRecord(500, p, 4096, 1, 7);
  tracker.onActivity(reinterpret_cast<const CUpti_Activity*>(&m));
  // A record that carries the runtime call's correlation id is joined by its address.
  one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a, CUDA_SUCCESS, 0) /* p again: new corr */);
  CUpti_ActivityMemory4 byAddress = memoryRecord(9999, p, 4096, 2 /* not the call's */, 7);
  tracker.onMemory(byAddress);
  tracker.endFlushRound(1);
  Stats s = tracker.stats();
  EXPECT_EQ(s.joined, 2u);
  EXPECT_EQ(s.activityOnly, 0u);
  EXPECT_EQ(s.deviceMismatches, 1u);
  EXPECT_EQ(s.allocs, 2u);
}

TEST_F(TrackerTest, RecordBeforeItsCallGivesTheDeviceAndStream) {
  device = 0;  // what the context lookup would say
  CUpti_ActivityMemory4 m = memoryRecord(42, 0x7f0000000000, 1000, 3, 12);
  tracker.onMemory(m);
  CUdeviceptr p = 0x7f0000000000;
  P::MemAlloc a{&p, 1000};
  Event e = one(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a, CUDA_SUCCESS, 42));
  expectEvent(e, 1, MEMLEDGER_KIND_DEVICE, Op::CuMemAlloc, 3, p, 1000);
  EXPECT_EQ(e.stream, 12u);
  EXPECT_EQ(one(free(p)).device, 3u);
  tracker.endFlushRound(1);
  EXPECT_EQ(tracker.stats().joined, 1u);
  EXPECT_EQ(tracker.stats().activityOnly, 0u);
}

TEST_F(TrackerTest, RecordsNoCallClaimsAreCountedNotAdded) {
  CUpti_ActivityMemory4 m = memoryRecord(7, 0x7f0000000000, 1000, 0, 0);
  tracker.onMemory(m);
  tracker.endFlushRound(2);
  EXPECT_EQ(tracker.stats().activityOnly, 0u);  // still waiting after one round
  tracker.endFlushRound(2);
  EXPECT_EQ(tracker.stats().activityOnly, 1u);
  // A later call at that address is not joined to it any more.
  Event e = alloc(0x7f0000000000, 1000);
  EXPECT_EQ(e.device, 0u);
  EXPECT_EQ(tracker.stats().joined, 0u);
  // Releases and static memory are not waited for.
  CUpti_ActivityMemory4 rel = memoryRecord(8, 0x7f0000000000, 1000, 0, 0, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                           CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE);
  tracker.onMemory(rel);
  CUpti_ActivityMemory4 st = memoryRecord(9, 0x7e0000000000, 333, 0, 0, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC);
  tracker.onMemory(st);
  tracker.endFlushRound(1);
  EXPECT_EQ(tracker.stats().activityOnly, 1u);
  EXPECT_EQ(tracker.stats().staticBytes, 333u);
}

TEST_F(TrackerTest, PoolRecordsGiveThePoolsReservation) {
  CUpti_ActivityMemoryPool3 p;
  std::memset(&p, 0, sizeof p);
  p.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  p.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
  p.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  p.address = 0x7f8000000000;
  p.size = 32 << 20;
  tracker.onActivity(reinterpret_cast<const CUpti_Activity*>(&p));
  // An allocation from it reports the pool's size at that time in memoryPoolConfig.
  CUpti_ActivityMemory4 m = memoryRecord(1, 0x7f8000000000, 1 << 20, 0, 0);
  m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  m.memoryPoolConfig.address = 0x7f8000000000;
  m.memoryPoolConfig.pool.size = 64 << 20;
  m.memoryPoolConfig.utilizedSize = 1 << 20;
  tracker.onMemory(m);
  p.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED;
  p.size = 2 << 20;
  tracker.onPool(p);
  Stats s = tracker.stats();
  EXPECT_EQ(s.poolsCreated, 1u);
  EXPECT_EQ(s.poolReservedPeak, 64u << 20);
}

TEST_F(TrackerTest, WithoutRecordsNoCallWaitsForOne) {
  tracker.setJoining(false);
  alloc(0x7f0000000000, 64);
  CUpti_ActivityMemory4 m = memoryRecord(1, 0x7f0000000000, 64, 0, 0);
  tracker.onMemory(m);  // (none would come; if one did, it is not joined to the call)
  tracker.endFlushRound(1);
  EXPECT_EQ(tracker.stats().joined, 0u);
  EXPECT_EQ(tracker.stats().activityOnly, 1u);
}

TEST_F(TrackerTest, DroppedRecordsAddUp) {
  tracker.addDropped(3);
  tracker.addDropped(4);
  EXPECT_EQ(tracker.stats().dropped, 7u);
}

TEST(CuptiArrayBytes, FromTheDescriptor) {
  EXPECT_EQ(arrayBytes(10, 0, 0, CU_AD_FORMAT_HALF, 2), 40u);  // 1D: height and depth 0
  EXPECT_EQ(arrayBytes(8, 8, 0, CU_AD_FORMAT_SIGNED_INT32, 1, 4), (64 + 16 + 4 + 1) * 4u);
}

}  // namespace
