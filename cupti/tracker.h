// The CUDA collector's decoding, joining and accounting (issue 16), without a single CUPTI call:
// it reads CUPTI's callback data and activity records (CUpti_CallbackData, CUpti_ActivityMemory4,
// CUpti_ActivityMemoryPool3) and answers which memory events to record. The glue
// (injection.cpp) feeds it from CUPTI and sends the events through memledger_collector_record()
// on the calling thread, so each event gets that thread's host stack; tests feed it synthetic
// values (tests/unit/cupti_tracker_test.cpp).
//
// What counts (docs/cuda.md):
//   - Driver-domain calls only, at their exit and only when they returned CUDA_SUCCESS. Runtime
//     calls (cudaMalloc, ...) are implemented by driver calls: their callbacks only label the
//     driver calls made inside them (runtimeNested), nothing is counted twice.
//   - cuMemAlloc/Pitch (device), cuMemAllocManaged (managed), cuMemAllocHost/cuMemHostAlloc/
//     cuMemHostRegister (pinned), cuMemAllocAsync/FromPoolAsync (pool: stream-ordered), arrays
//     and mipmapped arrays (device, size from the descriptor), cuMemCreate (vmm: the physical
//     memory of a handle, until its last reference goes: cuMemRelease and every cuMemUnmap of
//     it). cuMemMap/Unmap ranges and cuMemAddressReserve/Free are address space: counted in the
//     stats, never as memory.
//   - Activity records (MEMORY2, MEMORY_POOL) arrive later on CUPTI's thread, or in tests first:
//     joined to the call by correlation id (or address), they give the device and stream when a
//     record came before its callback, and the pools' reservation; records no call claims are
//     counted (activityOnly), never added as memory.
#pragma once

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "raw_alloc.h"

namespace memledger::cupti {

// One event for memledger_collector_record (interpose/include/memledger/collector.h).
struct Event {
  uint8_t type = 0;    // 1 alloc, 2 free (MEMLEDGER_EVENT_*)
  uint8_t kind = 0;    // kind code (schemas/kinds.h)
  uint16_t op = 0;     // op code (schemas/kinds.h)
  uint32_t device = 0;
  uint64_t address = 0, bytes = 0, stream = 0;
};

using EventList = RawVector<Event>;

// Answers the glue gets from CUPTI (cuptiGetDeviceId, cuptiGetStreamId); tests give fixed ones.
struct Lookup {
  virtual ~Lookup() = default;
  virtual uint32_t deviceOf(const CUpti_CallbackData& cb) = 0;           // the context's device
  virtual uint64_t streamOf(const CUpti_CallbackData& cb, CUstream s) = 0;  // CUPTI's stream id
};

// Per calling thread: inside which runtime call we are (runtime callbacks label, never count).
struct ThreadState {
  uint32_t runtimeDepth = 0;
  uint32_t runtimeCbid = 0;
};

struct Stats {
  uint64_t allocs = 0, frees = 0;        // events produced
  uint64_t failedCalls = 0;              // calls that returned an error: nothing recorded
  uint64_t unknownFrees = 0;             // frees (and releases) of a pointer/handle never seen
  uint64_t runtimeNested = 0;            // driver events made inside a runtime call
  uint64_t reserveBytes = 0;             // cuMemAddressReserve'd address space still reserved
  uint64_t reservePeakBytes = 0;
  uint64_t mappedBytes = 0, mappedPeakBytes = 0;  // cuMemMap'ed ranges (address space)
  uint64_t joined = 0;                   // activity records matched to a call
  uint64_t activityOnly = 0;             // activity records no call claimed (not counted)
  uint64_t staticBytes = 0;              // DEVICE_STATIC / MANAGED_STATIC memory seen in records
  uint64_t deviceMismatches = 0;         // a record's device differs from the call's
  uint64_t poolsCreated = 0;             // MEMORY_POOL CREATED records
  uint64_t poolReservedPeak = 0;         // the largest reservation any pool reported
  uint64_t dropped = 0;                  // activity records CUPTI dropped (told by the glue)
};

class Tracker {
 public:
  explicit Tracker(Lookup& lookup) : lookup_(lookup) {}

  // The callback CUPTI calls for `domain`/`cbid` (DRIVER_API or RUNTIME_API data). Appends the
  // events to record now, on this thread, to `out` (usually none or one; a cuMemUnmap of a range
  // may free several handles) and returns how many it appended.
  size_t onCallback(ThreadState& t, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const CUpti_CallbackData& cb, EventList& out);
  // Activity records (any thread). Other kinds are ignored.
  void onActivity(const CUpti_Activity* record);
  void onMemory(const CUpti_ActivityMemory4& m);
  void onPool(const CUpti_ActivityMemoryPool3& p);
  // A flush round ended: records that waited `rounds` rounds for a call are given up
  // (activityOnly); calls waiting for their record are forgotten after as many.
  void endFlushRound(uint32_t rounds = 4);
  void addDropped(uint64_t n);
  // Whether calls wait for their MEMORY2 record (default true; false when none can come).
  void setJoining(bool on) { joining_ = on; }

  Stats stats() const;
  size_t liveBlocks() const;
  // The driver cbids and runtime cbids the glue enables.
  static const std::vector<CUpti_CallbackId>& driverCbids();
  static const std::vector<CUpti_CallbackId>& runtimeCbids();

 private:
  struct Block {
    uint8_t kind;
    uint32_t device;
    uint64_t bytes;
  };
  struct Handle {  // a cuMemCreate handle: physical memory, referenced by itself and its maps
    uint32_t device;
    uint64_t bytes;
    uint32_t refs;
    bool released;
    uint8_t kind;
  };
  struct Mapping {
    uint64_t size;
    uint64_t handle;
  };
  struct Early {  // an activity record waiting for its call
    uint32_t device, rounds;
    uint64_t stream, address;
  };
  struct Waiting {  // a call waiting for its activity record
    uint64_t address;
    uint32_t device, rounds;
  };

  bool driverExit(CUpti_CallbackId cbid, const CUpti_CallbackData& cb, Event& out,
                  EventList& more);
  bool allocated(const CUpti_CallbackData& cb, uint8_t kind, uint16_t op, uint64_t address,
                 uint64_t bytes, CUstream stream, bool hasStream, Event& out);
  bool freed(uint64_t address, uint16_t op, Event& out);
  bool unref(uint64_t handle, uint16_t op, Event& out);
  bool takeEarly(uint32_t correlationId, uint64_t address, Early& e);

  Lookup& lookup_;
  mutable std::mutex mu_;
  RawHashMap<uint64_t, Block> live_;     // address (or array handle) -> block
  RawHashMap<uint64_t, Handle> handles_;  // cuMemCreate handles
  RawMap<uint64_t, Mapping> mappings_;          // cuMemMap'ed ranges by start
  RawHashMap<uint64_t, uint64_t> reserves_;  // cuMemAddressReserve: start -> size
  RawHashMap<uint32_t, Early> early_;     // correlation id -> record before its call
  RawHashMap<uint32_t, Waiting> waiting_;  // correlation id -> call before its record
  RawHashMap<uint64_t, uint32_t> waitingAt_;  // its address -> its correlation id
  RawHashMap<uint64_t, uint64_t> pools_;   // pool address -> its largest reservation
  Stats stats_;
  bool joining_ = true;
};

// Bytes of a CUDA array from its descriptor (width × height × depth × channels × element size;
// the driver pads, so this is a lower bound). Mipmapped: the sum over its levels.
uint64_t arrayBytes(uint64_t width, uint64_t height, uint64_t depth, uint32_t format,
                    uint32_t channels, uint32_t levels = 1);

}  // namespace memledger::cupti
