// Suggestions for CUDA memory (issue 16, docs/cuda.md), each with the numbers that make it:
//   cuda_alloc_in_loop  a site that called cudaMalloc/cuMemAlloc (or arrays) many times and freed
//                       nearly all of it: each cudaMalloc/cudaFree pair synchronizes the device;
//                       keep the buffer, use a caching allocator or cudaMallocAsync's pools.
//   large_pinned        pinned host memory at its peak large enough to squeeze the host: pinned
//                       pages cannot be swapped or reclaimed.
// Device leaks are fix_leak suggestions like any other kind's (suggestions.cpp).
#include <cstdlib>

#include "analyzer/devices.h"
#include "analyzer/format.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

namespace {
constexpr int64_t kCudaLoopAllocsMin = 50;        // allocations at one site
constexpr double kCudaLoopFreedShare = 0.9;       // of which freed
constexpr int64_t kPinnedLargeMin = 256ll << 20;  // pinned bytes live at once
constexpr size_t kCudaLinesMax = 5;

std::string whereText(const Stack& stack) {
  std::string t = siteText(stack);
  return "`" + t + "`";
}
}  // namespace

void cudaSuggestions(const Recording& rec, const Filter& filter, std::vector<Suggestion>& out) {
  std::vector<DeviceSpace> spaces = deviceSpaces(rec, 1);
  if (spaces.empty()) return;
  size_t lines = 0;
  Filter all = filter;
  all.top.reset();
  for (const Site& s : detail::siteRows(rec, all, "kind = 'device' AND alloc_count >= 50")) {
    if (s.space.rfind("device:", 0) != 0 || s.alloc_count < kCudaLoopAllocsMin) continue;
    if (double(s.free_count) < kCudaLoopFreedShare * double(s.alloc_count)) continue;
    if (lines++ == kCudaLinesMax) break;
    Stack stack = rec.stack(s.stack_id);
    int64_t mean = s.alloc_bytes / s.alloc_count;
    nlohmann::json evidence = {{"device", std::atoll(s.space.c_str() + 7)}, {"alloc_count", s.alloc_count},
                               {"free_count", s.free_count},
                               {"alloc_bytes", s.alloc_bytes}, {"mean_bytes", mean}, {"pid", s.pid}};
    Suggestion sg{"cuda_alloc_in_loop", s.alloc_count >= 1000 ? "high" : "medium",
                  whereText(stack) + " allocated device memory " + formatCount(s.alloc_count) + " times (" +
                      formatBytes(mean) + " on average, " + formatBytes(s.alloc_bytes) + " in all, on " + s.space +
                      ") and freed " + formatCount(s.free_count) +
                      " of them: cudaMalloc/cudaFree synchronize the device; allocate once and reuse the buffer, "
                      "or use a caching allocator or cudaMallocAsync (stream-ordered pools)",
                  stack, evidence};
    sg.confidence = "high";
    sg.confidence_reason = "the counts are exact: every call at this site went through the driver";
    out.push_back(std::move(sg));
  }
  for (const DeviceSpace& d : spaces) {
    if (d.name != "pinned" || d.peak_bytes < kPinnedLargeMin) continue;
    Stack stack = d.peak_sites.empty() ? Stack{} : d.peak_sites.front().stack;
    nlohmann::json evidence = {{"peak_bytes", d.peak_bytes}, {"peak_ns", d.peak_ns}};
    if (!d.peak_sites.empty()) evidence["largest_site_bytes"] = d.peak_sites.front().bytes;
    Suggestion sg{"large_pinned", d.peak_bytes >= (4ll << 30) ? "high" : "medium",
                  formatBytes(d.peak_bytes) + " of pinned host memory was live at once" +
                      (stack.empty() ? std::string() : ", the most from " + whereText(stack)) +
                      ": pinned pages cannot be swapped or reclaimed; pin only staging buffers that transfers "
                      "reuse, and free them when the transfers are done",
                  stack, evidence};
    sg.confidence = "medium";
    sg.confidence_reason = "the size is exact; whether the host is short of memory depends on the machine";
    out.push_back(std::move(sg));
  }
}

}  // namespace memledger::analyzer
