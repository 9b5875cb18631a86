// A stand-in for libcupti.so.13 (same SONAME), for testing the CUDA collector's glue without a
// GPU: it implements the few cupti* functions libmemledger_cupti.so uses, and test hooks
// (fakecupti_*) with which a test program plays the CUDA driver: fire the API callbacks of a
// call, queue activity records for the next flush, add dropped records.
//   FAKE_CUPTI_SUBSCRIBE=N  cuptiSubscribe answers CUptiResult N (39: another subscriber)
// A context handle is 0x1000 + its device number; a stream handle is its id.
#include <cupti.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
std::mutex mu;
CUpti_CallbackFunc callback = nullptr;
void* userdata = nullptr;
std::set<std::pair<int, uint32_t>> enabled;
std::set<int> activityKinds;
CUpti_BuffersCallbackRequestFunc requestFn = nullptr;
CUpti_BuffersCallbackCompleteFunc completeFn = nullptr;
std::vector<std::vector<uint8_t>> queued;  // activity records, each padded to 8 bytes
size_t dropped = 0;
uint32_t nextCorrelation = 1;
int subscribers = 0;

size_t recordSize(const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: return sizeof(CUpti_ActivityMemoryPool3);
    default: return 0;
  }
}
}  // namespace

FAKE_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc fn, void* data) {
  if (const char* forced = getenv("FAKE_CUPTI_SUBSCRIBE")) return static_cast<CUptiResult>(atoi(forced));
  std::lock_guard<std::mutex> lock(mu);
  if (subscribers) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  ++subscribers;
  callback = fn;
  userdata = data;
  *sub = reinterpret_cast<CUpti_SubscriberHandle>(0x5);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain d,
                                            CUpti_CallbackId cbid) {
  std::lock_guard<std::mutex> lock(mu);
  if (enable) enabled.insert({d, cbid});
  else enabled.erase({d, cbid});
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  std::lock_guard<std::mutex> lock(mu);
  activityKinds.insert(kind);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                       CUpti_BuffersCallbackCompleteFunc done) {
  requestFn = req;
  completeFn = done;
  return CUPTI_SUCCESS;
}

// Hands every queued record to the collector in one buffer it asked for (as CUPTI does, on the
// calling thread).
FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t) {
  std::vector<std::vector<uint8_t>> records;
  {
    std::lock_guard<std::mutex> lock(mu);
    records.swap(queued);
  }
  if (!requestFn || !completeFn || (records.empty() && !dropped)) return CUPTI_SUCCESS;
  uint8_t* buffer = nullptr;
  size_t size = 0, maxRecords = 0;
  requestFn(&buffer, &size, &maxRecords);
  if (!buffer) return CUPTI_ERROR_OUT_OF_MEMORY;
  size_t used = 0;
  for (const auto& r : records) {
    if (used + r.size() > size) break;
    std::memcpy(buffer + used, r.data(), r.size());
    used += r.size();
  }
  completeFn(reinterpret_cast<CUcontext>(0x1000), 0, buffer, size, used);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t at = 0;
  if (*record) {
    at = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer);
    at += (recordSize(*record) + 7) & ~size_t{7};
  }
  if (at >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + at);
  return recordSize(*record) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_KIND;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* n) {
  std::lock_guard<std::mutex> lock(mu);
  *n = dropped;
  dropped = 0;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t* device) {
  uintptr_t v = reinterpret_cast<uintptr_t>(ctx);
  if (v < 0x1000) return CUPTI_ERROR_INVALID_CONTEXT;
  *device = static_cast<uint32_t>(v - 0x1000);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetStreamId(CUcontext, CUstream stream, uint32_t* id) {
  *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(stream));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char** s) {
  *s = r == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN (fake)" : "fake CUPTI error";
  return CUPTI_SUCCESS;
}

// ---- test hooks: the test program plays the driver ----

// Fires the callback of one API call site when it is enabled. `params` is the driver's (or the
// runtime's) parameter block, `result` points to the call's CUresult (exit only).
FAKE_EXPORT void fakecupti_callback(int domain, uint32_t cbid, int site, const void* params, const char* name,
                                    int* result, uint32_t correlationId, uint32_t device) {
  CUpti_CallbackFunc fn;
  void* data;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!callback || !enabled.count({domain, cbid})) return;
    fn = callback;
    data = userdata;
  }
  CUpti_CallbackData cb{};
  cb.callbackSite = static_cast<CUpti_ApiCallbackSite>(site);
  cb.functionName = name;
  cb.functionParams = params;
  cb.functionReturnValue = result;
  cb.context = reinterpret_cast<CUcontext>(0x1000 + uintptr_t{device});
  cb.contextUid = device + 1;
  cb.correlationId = correlationId;
  fn(data, static_cast<CUpti_CallbackDomain>(domain), cbid, &cb);
}

FAKE_EXPORT uint32_t fakecupti_next_correlation() {
  std::lock_guard<std::mutex> lock(mu);
  return nextCorrelation++;
}

// Queues one activity record (MEMORY2 or MEMORY_POOL) for the next flush, if that kind is enabled.
FAKE_EXPORT int fakecupti_queue(const void* record) {
  const auto* r = static_cast<const CUpti_Activity*>(record);
  size_t n = recordSize(r);
  std::lock_guard<std::mutex> lock(mu);
  if (!n || !activityKinds.count(r->kind)) return 0;
  std::vector<uint8_t> bytes((n + 7) & ~size_t{7}, 0);
  std::memcpy(bytes.data(), record, n);
  queued.push_back(std::move(bytes));
  return 1;
}

FAKE_EXPORT void fakecupti_drop(size_t n) {
  std::lock_guard<std::mutex> lock(mu);
  dropped += n;
}

FAKE_EXPORT int fakecupti_subscribed() {
  std::lock_guard<std::mutex> lock(mu);
  return callback != nullptr;
}
