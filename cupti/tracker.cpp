// The CUDA collector's pure part (tracker.h): callback data and activity records in, events out.
#include "tracker.h"

#include "driver_params.h"

#include <algorithm>

#include "../interpose/include/memledger/collector.h"
#include "../schemas/kinds.h"

namespace memledger::cupti {

namespace {
using kinds::Op;
namespace P = memledger::cupti::params;
constexpr uint16_t op(Op o) { return static_cast<uint16_t>(o); }

template <class T>
const T& args(const CUpti_CallbackData& cb) {
  return *static_cast<const T*>(cb.functionParams);
}

uint32_t formatBytes(uint32_t format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 1;
  }
}
}  // namespace

uint64_t arrayBytes(uint64_t width, uint64_t height, uint64_t depth, uint32_t format,
                    uint32_t channels, uint32_t levels) {
  uint64_t per = uint64_t{formatBytes(format)} * std::max<uint32_t>(channels, 1);
  uint64_t total = 0;
  uint64_t w = std::max<uint64_t>(width, 1), h = std::max<uint64_t>(height, 1),
           d = std::max<uint64_t>(depth, 1);
  for (uint32_t l = 0; l < std::max<uint32_t>(levels, 1); ++l) {
    total += w * h * d * per;
    w = std::max<uint64_t>(w / 2, 1);
    h = std::max<uint64_t>(h / 2, 1);
    d = std::max<uint64_t>(d / 2, 1);
  }
  return total;
}

const std::vector<CUpti_CallbackId>& Tracker::driverCbids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2, CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2,
      CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2, CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy,
      CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy,
      CUPTI_DRIVER_TRACE_CBID_cuMemCreate, CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
      CUPTI_DRIVER_TRACE_CBID_cuMemMap, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
      CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree,
  };
  return ids;
}

const std::vector<CUpti_CallbackId>& Tracker::runtimeCbids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocMipmappedArray_v5000,
      CUPTI_RUNTIME_TRACE_CBID_cudaFreeMipmappedArray_v5000,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
      CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
  };
  return ids;
}

size_t Tracker::onCallback(ThreadState& t, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                           const CUpti_CallbackData& cb, EventList& out) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cb.callbackSite == CUPTI_API_ENTER) {
      if (t.runtimeDepth++ == 0) t.runtimeCbid = cbid;
    } else if (t.runtimeDepth > 0 && --t.runtimeDepth == 0) {
      t.runtimeCbid = 0;
    }
    return 0;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cb.callbackSite != CUPTI_API_EXIT) return 0;
  if (!cb.functionParams) return 0;
  const auto* rv = static_cast<const CUresult*>(cb.functionReturnValue);
  std::lock_guard<std::mutex> lock(mu_);
  if (rv && *rv != CUDA_SUCCESS) {
    ++stats_.failedCalls;
    return 0;
  }
  size_t before = out.size();
  Event e;
  if (driverExit(cbid, cb, e, out)) out.insert(out.begin() + before, e);
  size_t made = out.size() - before;
  if (made && t.runtimeDepth > 0) stats_.runtimeNested += made;
  return made;
}

bool Tracker::driverExit(CUpti_CallbackId cbid, const CUpti_CallbackData& cb, Event& out,
                         EventList& more) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto& p = args<P::MemAlloc>(cb);
      return allocated(cb, MEMLEDGER_KIND_DEVICE, op(Op::CuMemAlloc), *p.dptr, p.bytesize, nullptr, false, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& p = args<P::MemAllocPitch>(cb);
      return allocated(cb, MEMLEDGER_KIND_DEVICE, op(Op::CuMemAllocPitch), *p.dptr,
                       uint64_t{*p.pPitch} * p.Height, nullptr, false, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto& p = args<P::MemAllocManaged>(cb);
      return allocated(cb, MEMLEDGER_KIND_MANAGED, op(Op::CuMemAllocManaged), *p.dptr, p.bytesize, nullptr, false, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      const auto& p = args<P::MemAllocHost>(cb);
      return allocated(cb, MEMLEDGER_KIND_PINNED, op(Op::CuMemAllocHost),
                       reinterpret_cast<uint64_t>(*p.pp), p.bytesize, nullptr, false, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      const auto& p = args<P::MemHostAlloc>(cb);
      return allocated(cb, MEMLEDGER_KIND_PINNED, op(Op::CuMemHostAlloc),
                       reinterpret_cast<uint64_t>(*p.pp), p.bytesize, nullptr, false, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
      const auto& p = args<P::MemHostRegister>(cb);
      return allocated(cb, MEMLEDGER_KIND_PINNED, op(Op::CuMemHostRegister),
                       reinterpret_cast<uint64_t>(p.p), p.bytesize, nullptr, false, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto& p = args<P::MemAllocAsync>(cb);  // _ptsz has the same layout
      return allocated(cb, MEMLEDGER_KIND_POOL, op(Op::CuMemAllocAsync), *p.dptr, p.bytesize, p.hStream, true, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const auto& p = args<P::MemAllocFromPoolAsync>(cb);
      return allocated(cb, MEMLEDGER_KIND_POOL, op(Op::CuMemAllocFromPoolAsync), *p.dptr, p.bytesize,
                       p.hStream, true, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2: {
      const auto& p = args<P::ArrayCreate>(cb);
      const CUDA_ARRAY_DESCRIPTOR& d = *p.pAllocateArray;
      return allocated(cb, MEMLEDGER_KIND_DEVICE, op(Op::CuArrayCreate), reinterpret_cast<uint64_t>(*p.pHandle),
                       arrayBytes(d.Width, d.Height, 1, d.Format, d.NumChannels), nullptr, false, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2: {
      const auto& p = args<P::Array3DCreate>(cb);
      const CUDA_ARRAY3D_DESCRIPTOR& d = *p.pAllocateArray;
      return allocated(cb, MEMLEDGER_KIND_DEVICE, op(Op::CuArrayCreate), reinterpret_cast<uint64_t>(*p.pHandle),
                       arrayBytes(d.Width, d.Height, d.Depth, d.Format, d.NumChannels), nullptr, false, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate: {
      const auto& p = args<P::MipmappedArrayCreate>(cb);
      const CUDA_ARRAY3D_DESCRIPTOR& d = *p.pMipmappedArrayDesc;
      return allocated(cb, MEMLEDGER_KIND_DEVICE, op(Op::CuArrayCreate), reinterpret_cast<uint64_t>(*p.pHandle),
                       arrayBytes(d.Width, d.Height, d.Depth, d.Format, d.NumChannels, p.numMipmapLevels),
                       nullptr, false, out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      return freed(args<P::MemFree>(cb).dptr, op(Op::CuMemFree), out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      return freed(reinterpret_cast<uint64_t>(args<P::MemFreeHost>(cb).p), op(Op::CuMemFreeHost), out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
      return freed(reinterpret_cast<uint64_t>(args<P::MemHostUnregister>(cb).p),
                   op(Op::CuMemHostUnregister), out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      const auto& p = args<P::MemFreeAsync>(cb);
      bool made = freed(p.dptr, op(Op::CuMemFreeAsync), out);
      if (made) out.stream = lookup_.streamOf(cb, p.hStream);
      return made;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy:
      return freed(reinterpret_cast<uint64_t>(args<P::ArrayDestroy>(cb).hArray), op(Op::CuArrayDestroy), out);
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy:
      return freed(reinterpret_cast<uint64_t>(args<P::MipmappedArrayDestroy>(cb).hMipmappedArray),
                   op(Op::CuArrayDestroy), out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      const auto& p = args<P::MemCreate>(cb);
      uint64_t h = *p.handle;
      bool host = p.prop && p.prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE &&
                  p.prop->location.type != CU_MEM_LOCATION_TYPE_INVALID;
      uint32_t dev = p.prop && !host ? static_cast<uint32_t>(p.prop->location.id) : lookup_.deviceOf(cb);
      uint8_t kind = host ? MEMLEDGER_KIND_PINNED : MEMLEDGER_KIND_VMM;
      handles_[h] = Handle{dev, p.size, 1, false, kind};
      out = Event{MEMLEDGER_EVENT_ALLOC, kind, op(Op::CuMemCreate), dev, h, p.size, 0};
      ++stats_.allocs;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease: {
      uint64_t h = args<P::MemRelease>(cb).handle;
      auto it = handles_.find(h);
      if (it == handles_.end() || it->second.released) {
        ++stats_.unknownFrees;
        return false;
      }
      it->second.released = true;
      return unref(h, op(Op::CuMemRelease), out);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto& p = args<P::MemMap>(cb);
      auto it = handles_.find(p.handle);
      if (it != handles_.end()) ++it->second.refs;
      mappings_[p.ptr] = Mapping{p.size, p.handle};
      stats_.mappedBytes += p.size;
      stats_.mappedPeakBytes = std::max(stats_.mappedPeakBytes, stats_.mappedBytes);
      return false;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      // One call may unmap several mappings (PyTorch unmaps one handle per call): the first
      // handle freed is `out`, any further ones go to `more`.
      const auto& p = args<P::MemUnmap>(cb);
      bool made = false;
      for (auto it = mappings_.lower_bound(p.ptr); it != mappings_.end() && it->first < p.ptr + p.size;) {
        stats_.mappedBytes -= std::min(stats_.mappedBytes, it->second.size);
        uint64_t h = it->second.handle;
        it = mappings_.erase(it);
        Event e;
        if (unref(h, op(Op::CuMemUnmap), e)) {
          if (made) more.push_back(e);
          else out = e;
          made = true;
        }
      }
      return made;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve: {
      const auto& p = args<P::MemAddressReserve>(cb);
      reserves_[*p.ptr] = p.size;
      stats_.reserveBytes += p.size;
      stats_.reservePeakBytes = std::max(stats_.reservePeakBytes, stats_.reserveBytes);
      return false;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree: {
      const auto& p = args<P::MemAddressFree>(cb);
      auto it = reserves_.find(p.ptr);
      if (it == reserves_.end()) {
        ++stats_.unknownFrees;
        return false;
      }
      stats_.reserveBytes -= std::min(stats_.reserveBytes, it->second);
      reserves_.erase(it);
      return false;
    }
    default: return false;
  }
}

bool Tracker::takeEarly(uint32_t correlationId, uint64_t address, Early& e) {
  auto it = early_.find(correlationId);
  if (it == early_.end() || (address && it->second.address && it->second.address != address)) {
    it = std::find_if(early_.begin(), early_.end(),
                      [&](const auto& kv) { return address && kv.second.address == address; });
    if (it == early_.end()) return false;
  }
  e = it->second;
  early_.erase(it);
  ++stats_.joined;
  return true;
}

bool Tracker::allocated(const CUpti_CallbackData& cb, uint8_t kind, uint16_t opc, uint64_t address,
                        uint64_t bytes, CUstream stream, bool hasStream, Event& out) {
  if (!address) return false;  // a zero-byte allocation returns no pointer
  Early early;
  uint32_t device;
  uint64_t sid = 0;
  if (!early_.empty() && takeEarly(cb.correlationId, address, early)) {
    device = early.device;  // the record came first: its device and stream are CUPTI's own
    sid = early.stream;
  } else {
    device = lookup_.deviceOf(cb);
    if (hasStream) sid = lookup_.streamOf(cb, stream);
    if (joining_) {
      waiting_[cb.correlationId] = Waiting{address, device, 0};
      waitingAt_[address] = cb.correlationId;
    }
  }
  if (kind != MEMLEDGER_KIND_DEVICE && kind != MEMLEDGER_KIND_POOL && kind != MEMLEDGER_KIND_VMM) device = 0;
  auto [it, isNew] = live_.try_emplace(address, Block{kind, device, bytes});
  if (!isNew) it->second = Block{kind, device, bytes};  // a free we never saw: the newer one wins
  out = Event{MEMLEDGER_EVENT_ALLOC, kind, opc, device, address, bytes, sid};
  ++stats_.allocs;
  return true;
}

bool Tracker::freed(uint64_t address, uint16_t opc, Event& out) {
  if (!address) return false;  // cuMemFree(0) is a no-op
  auto it = live_.find(address);
  if (it == live_.end()) {
    ++stats_.unknownFrees;
    return false;
  }
  out = Event{MEMLEDGER_EVENT_FREE, it->second.kind, opc, it->second.device, address, 0, 0};
  live_.erase(it);
  ++stats_.frees;
  return true;
}

bool Tracker::unref(uint64_t h, uint16_t opc, Event& out) {
  auto it = handles_.find(h);
  if (it == handles_.end()) return false;
  if (it->second.refs > 0) --it->second.refs;
  if (it->second.refs > 0 || !it->second.released) return false;
  out = Event{MEMLEDGER_EVENT_FREE, it->second.kind, opc, it->second.device, h, 0, 0};
  handles_.erase(it);
  ++stats_.frees;
  return true;
}

void Tracker::onActivity(const CUpti_Activity* r) {
  if (!r) return;
  if (r->kind == CUPTI_ACTIVITY_KIND_MEMORY2)
    onMemory(*reinterpret_cast<const CUpti_ActivityMemory4*>(r));
  else if (r->kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL)
    onPool(*reinterpret_cast<const CUpti_ActivityMemoryPool3*>(r));
}

void Tracker::onMemory(const CUpti_ActivityMemory4& m) {
  std::lock_guard<std::mutex> lock(mu_);
  if (m.memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC ||
      m.memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC) {
    if (m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) stats_.staticBytes += m.bytes;
    return;
  }
  if (m.memoryPoolConfig.memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID &&
      m.memoryPoolConfig.address) {
    uint64_t& top = pools_[m.memoryPoolConfig.address];
    top = std::max<uint64_t>(top, m.memoryPoolConfig.pool.size);
    stats_.poolReservedPeak = std::max(stats_.poolReservedPeak, top);
  }
  if (m.memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
    // A release: its call freed the block already (or never saw it: counted there).
    return;
  }
  // The call came first: match by correlation id, else by address (a record may carry the
  // runtime call's id while the callback had the driver call's).
  auto it = waiting_.find(m.correlationId);
  if (it == waiting_.end() || it->second.address != m.address) {
    auto at = waitingAt_.find(m.address);
    it = at == waitingAt_.end() ? waiting_.end() : waiting_.find(at->second);
  }
  if (it != waiting_.end()) {
    auto at = waitingAt_.find(it->second.address);
    if (at != waitingAt_.end() && at->second == it->first) waitingAt_.erase(at);
    if (it->second.device != m.deviceId) {
      auto b = live_.find(m.address);
      if (b != live_.end() && (b->second.kind == MEMLEDGER_KIND_DEVICE || b->second.kind == MEMLEDGER_KIND_POOL))
        ++stats_.deviceMismatches;
    }
    waiting_.erase(it);
    ++stats_.joined;
    return;
  }
  early_[m.correlationId] = Early{m.deviceId, 0, m.streamId, m.address};
}

void Tracker::onPool(const CUpti_ActivityMemoryPool3& p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (p.memoryPoolOperationType == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED) ++stats_.poolsCreated;
  if (p.memoryPoolOperationType == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED) {
    pools_.erase(p.address);
    return;
  }
  uint64_t& top = pools_[p.address];
  top = std::max<uint64_t>(top, p.size);
  stats_.poolReservedPeak = std::max(stats_.poolReservedPeak, top);
}

void Tracker::endFlushRound(uint32_t rounds) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = early_.begin(); it != early_.end();) {
    if (++it->second.rounds >= rounds) {
      ++stats_.activityOnly;
      it = early_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (++it->second.rounds >= rounds) {
      auto at = waitingAt_.find(it->second.address);
      if (at != waitingAt_.end() && at->second == it->first) waitingAt_.erase(at);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
}

void Tracker::addDropped(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.dropped += n;
}

Stats Tracker::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t Tracker::liveBlocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size() + handles_.size();
}

}  // namespace memledger::cupti
