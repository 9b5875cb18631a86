// libmemledger_cupti.so: the CUDA collector's glue (docs/cuda.md). The CUDA driver loads it from
// CUDA_INJECTION64_PATH (which `memledger record` sets) and calls InitializeInjection() during
// cuInit, before any allocation. From there:
//   - libcupti is found at run time (the copy the process already has, then libcupti.so.13, .12,
//     the unversioned name, then beside the driver, the runtime or the toolkit);
//   - one subscriber gets the driver-domain callbacks of the calls that make and release memory
//     (and the runtime ones, which only label); each event is handed on the calling thread to the
//     preload library's memledger_collector_record(), which captures that thread's host stack and
//     writes into the same ring as the heap hooks;
//   - MEMORY2 and MEMORY_POOL activity records are flushed every 250 ms and at exit, joined in the
//     tracker (tracker.h), and their counts (dropped ones too) go into the recording's meta.
// Whatever fails (no preload library, no libcupti, no driver, another subscriber): one warning
// line on stderr, and the program runs on unchanged with host recording intact.
#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <string>

#include "../interpose/include/memledger/collector.h"
#include "tracker.h"

#define ML_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
using namespace memledger::cupti;

using RecordFn = int (*)(const memledger_event*);
using NoteFn = int (*)(const char*, const char*);
RecordFn g_record = nullptr;
NoteFn g_note = nullptr;

// The libcupti entry points used, resolved from whichever copy was found.
struct Cupti {
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
  CUptiResult (*enableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
  CUptiResult (*activityEnable)(CUpti_ActivityKind);
  CUptiResult (*activityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*activityFlushAll)(uint32_t);
  CUptiResult (*activityGetNextRecord)(uint8_t*, size_t, CUpti_Activity**);
  CUptiResult (*activityGetNumDroppedRecords)(CUcontext, uint32_t, size_t*);
  CUptiResult (*getDeviceId)(CUcontext, uint32_t*);
  CUptiResult (*getStreamId)(CUcontext, CUstream, uint32_t*);
  CUptiResult (*getResultString)(CUptiResult, const char**);
} g_cupti;

std::atomic<bool> g_warned{false};
void warnOnce(const char* fmt, ...) {
  if (g_warned.exchange(true)) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "memledger: %s\n", line);
}

void note(const char* key, const std::string& value) {
  if (g_note) g_note(key, value.c_str());
}

const char* resultText(CUptiResult r) {
  const char* s = nullptr;
  if (g_cupti.getResultString && g_cupti.getResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "unknown CUPTI error";
}

// CUPTI's answers for the tracker. A context's device is asked once per context.
class CuptiLookup final : public Lookup {
 public:
  uint32_t deviceOf(const CUpti_CallbackData& cb) override {
    thread_local uint32_t lastUid = 0, lastDevice = 0;
    if (cb.contextUid && cb.contextUid == lastUid) return lastDevice;
    uint32_t dev = 0;
    if (!cb.context || g_cupti.getDeviceId(cb.context, &dev) != CUPTI_SUCCESS) return 0;
    lastUid = cb.contextUid;
    lastDevice = dev;
    return dev;
  }
  uint64_t streamOf(const CUpti_CallbackData& cb, CUstream s) override {
    uint32_t id = 0;
    if (cb.context && g_cupti.getStreamId && g_cupti.getStreamId(cb.context, s, &id) == CUPTI_SUCCESS) return id;
    return reinterpret_cast<uint64_t>(s);
  }
};
// Never destroyed: the CUDA runtime's own teardown runs after our static destructors would, and
// its driver calls still reach onCallback. Made in initialize(), before any callback is enabled.
alignas(CuptiLookup) unsigned char g_lookupStorage[sizeof(CuptiLookup)];
alignas(Tracker) unsigned char g_trackerStorage[sizeof(Tracker)];
Tracker* g_trackerPtr = nullptr;
#define g_tracker (*g_trackerPtr)

void CUPTIAPI onCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  thread_local ThreadState state;
  // Not a thread_local object: its destructor would run at exit before calls that still come.
  // One small list per thread, kept (in memory outside the program's heap) when the thread ends.
  thread_local EventList* list = nullptr;
  if (!list) {
    void* mem = __libc_malloc(sizeof(EventList));
    if (!mem) return;
    list = new (mem) EventList();
  }
  EventList& events = *list;
  events.clear();
  if (!g_tracker.onCallback(state, domain, cbid, *static_cast<const CUpti_CallbackData*>(data), events)) return;
  for (const Event& e : events) {
    memledger_event ev{};
    ev.struct_size = sizeof ev;
    ev.type = e.type;
    ev.kind = e.kind;
    ev.op = e.op;
    ev.device = e.device;
    ev.address = e.address;
    ev.bytes = e.bytes;
    ev.stream = e.stream;
    g_record(&ev);
  }
}

// Activity buffers: mapped by system call, so memledger's own buffers stay out of the recording.
constexpr size_t kBufferBytes = 1u << 20;
void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  void* p = reinterpret_cast<void*>(syscall(SYS_mmap, nullptr, kBufferBytes, PROT_READ | PROT_WRITE,
                                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) p = nullptr;
  *buffer = static_cast<uint8_t*>(p);
  *size = p ? kBufferBytes : 0;
  *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext ctx, uint32_t streamId, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (valid && g_cupti.activityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) g_tracker.onActivity(r);
  size_t dropped = 0;
  if (g_cupti.activityGetNumDroppedRecords(ctx, streamId, &dropped) == CUPTI_SUCCESS && dropped)
    g_tracker.addDropped(dropped);
  if (buffer) syscall(SYS_munmap, buffer, kBufferBytes);
}

// Periodic flush on a thread of our own; the last one at exit.
std::mutex g_flushMu;
std::atomic<bool> g_stop{false};
bool g_activity = false;

void* flusher(void*) {
  while (!g_stop.load(std::memory_order_relaxed)) {
    struct timespec ts{0, 250 * 1000 * 1000};
    nanosleep(&ts, nullptr);
    std::lock_guard<std::mutex> lock(g_flushMu);
    if (g_stop.load(std::memory_order_relaxed)) break;
    if (g_activity) g_cupti.activityFlushAll(0);
    g_tracker.endFlushRound();
  }
  return nullptr;
}

void atExit() {
  {
    std::lock_guard<std::mutex> lock(g_flushMu);
    g_stop.store(true);
    if (g_activity) g_cupti.activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    g_tracker.endFlushRound(1);
  }
  Stats s = g_tracker.stats();
  auto n = [](const char* key, uint64_t v) { note(key, std::to_string(v)); };
  n("cupti.allocations", s.allocs);
  n("cupti.frees", s.frees);
  n("cupti.failed_calls", s.failedCalls);
  n("cupti.unknown_frees", s.unknownFrees);
  n("cupti.runtime_nested", s.runtimeNested);
  n("cupti.dropped_records", s.dropped);
  n("cupti.activity_joined", s.joined);
  n("cupti.activity_only", s.activityOnly);
  n("cupti.device_mismatches", s.deviceMismatches);
  n("cupti.static_bytes", s.staticBytes);
  n("cupti.address_reserved_peak_bytes", s.reservePeakBytes);
  n("cupti.mapped_peak_bytes", s.mappedPeakBytes);
  n("cupti.pools_created", s.poolsCreated);
  n("cupti.pool_reserved_peak_bytes", s.poolReservedPeak);
}

// libcupti: the process's own copy first, then by name, then beside the driver or runtime.
void* openCupti(std::string& tried) {
  static const char* kNames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  for (const char* n : kNames)
    if (void* h = dlopen(n, RTLD_NOW | RTLD_NOLOAD)) return h;
  for (const char* n : kNames)
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  std::string dirs[4];
  int nd = 0;
  for (const char* sym : {"cuInit", "cudaMalloc"}) {
    Dl_info info{};
    void* addr = dlsym(RTLD_DEFAULT, sym);
    if (addr && dladdr(addr, &info) && info.dli_fname) {
      std::string f = info.dli_fname;
      size_t slash = f.rfind('/');
      if (slash != std::string::npos) dirs[nd++] = f.substr(0, slash);
    }
  }
  if (const char* home = getenv("CUDA_HOME")) dirs[nd++] = std::string(home) + "/lib64";
  dirs[nd++] = "/usr/local/cuda/lib64";
  for (int i = 0; i < nd; ++i)
    for (const char* n : kNames) {
      std::string path = dirs[i] + "/" + n;
      if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    }
  tried = "libcupti.so.13/.12 by name, beside the driver and in /usr/local/cuda/lib64";
  return nullptr;
}

template <class F>
bool resolve(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

void initialize() {
  g_trackerPtr = new (g_trackerStorage) Tracker(*new (g_lookupStorage) CuptiLookup());
  g_record = reinterpret_cast<RecordFn>(dlsym(RTLD_DEFAULT, "memledger_collector_record"));
  g_note = reinterpret_cast<NoteFn>(dlsym(RTLD_DEFAULT, "memledger_collector_note"));
  if (!g_record) {
    warnOnce("libmemledger_cupti.so loaded without memledger's preload library: CUDA memory is not recorded");
    return;
  }
  std::string tried;
  void* lib = openCupti(tried);
  if (!lib) {
    note("cupti.status", "off: libcupti not found");
    warnOnce("CUDA memory is not recorded: libcupti not found (tried %s)", tried.c_str());
    return;
  }
  bool ok = resolve(lib, "cuptiSubscribe", g_cupti.subscribe) &&
            resolve(lib, "cuptiEnableCallback", g_cupti.enableCallback) &&
            resolve(lib, "cuptiActivityEnable", g_cupti.activityEnable) &&
            resolve(lib, "cuptiActivityRegisterCallbacks", g_cupti.activityRegisterCallbacks) &&
            resolve(lib, "cuptiActivityFlushAll", g_cupti.activityFlushAll) &&
            resolve(lib, "cuptiActivityGetNextRecord", g_cupti.activityGetNextRecord) &&
            resolve(lib, "cuptiActivityGetNumDroppedRecords", g_cupti.activityGetNumDroppedRecords) &&
            resolve(lib, "cuptiGetDeviceId", g_cupti.getDeviceId);
  resolve(lib, "cuptiGetStreamId", g_cupti.getStreamId);  // optional: stream handles otherwise
  resolve(lib, "cuptiGetResultString", g_cupti.getResultString);
  if (!ok) {
    note("cupti.status", "off: libcupti lacks an entry point");
    warnOnce("CUDA memory is not recorded: the libcupti found lacks an entry point memledger needs");
    return;
  }
  CUpti_SubscriberHandle sub = nullptr;
  CUptiResult r = g_cupti.subscribe(&sub, onCallback, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    note("cupti.status", "off: another CUPTI subscriber");
    warnOnce("CUDA memory is not recorded: another tool (Nsight, torch.profiler, compute-sanitizer) holds CUPTI");
    return;
  }
  if (r != CUPTI_SUCCESS) {
    note("cupti.status", std::string("off: ") + resultText(r));
    warnOnce("CUDA memory is not recorded: CUPTI cannot subscribe (%s)", resultText(r));
    return;
  }
  size_t enabled = 0;
  for (CUpti_CallbackId id : Tracker::driverCbids())
    enabled += g_cupti.enableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id) == CUPTI_SUCCESS;
  for (CUpti_CallbackId id : Tracker::runtimeCbids())
    g_cupti.enableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  if (enabled == 0) {
    note("cupti.status", "off: no driver callback could be enabled");
    warnOnce("CUDA memory is not recorded: CUPTI enabled none of the driver callbacks");
    return;
  }
  // Activity records only add to what the callbacks counted: without them, still counting.
  if (g_cupti.activityRegisterCallbacks(bufferRequested, bufferCompleted) == CUPTI_SUCCESS) {
    bool mem = g_cupti.activityEnable(CUPTI_ACTIVITY_KIND_MEMORY2) == CUPTI_SUCCESS;
    bool pool = g_cupti.activityEnable(CUPTI_ACTIVITY_KIND_MEMORY_POOL) == CUPTI_SUCCESS;
    g_activity = mem || pool;
    g_tracker.setJoining(mem);  // without MEMORY2 records no call waits for one
    note("cupti.activity", mem && pool ? "memory2,memory_pool" : mem ? "memory2" : pool ? "memory_pool" : "off");
  } else {
    g_tracker.setJoining(false);
    note("cupti.activity", "off");
  }
  note("cupti.status", "active");
  atexit(atExit);
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &attr, flusher, nullptr) == 0) pthread_setname_np(t, "memledger-cupti");
  pthread_attr_destroy(&attr);
}

}  // namespace

// Called by the CUDA driver during cuInit (CUDA_INJECTION64_PATH). Always answers success: the
// program's CUDA must never fail because of memledger.
ML_EXPORT int InitializeInjection(void) {
  static std::once_flag once;
  std::call_once(once, initialize);
  return 1;
}
