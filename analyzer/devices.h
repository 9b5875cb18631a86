// CUDA memory in the ledger (issue 16, docs/cuda.md): each device, pinned host and managed
// space of a recording with its exact simultaneous peak, the live set at that instant, and its
// leaks; the evidence the CUDA suggestions cite. Spaces come from the `spaces` table (version 5),
// so recordings made before the CUDA collector simply have none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer {

struct DeviceSpace {
  std::string name;                   // device:N | pinned | managed
  int64_t peak_bytes = 0, peak_ns = 0;  // exact, over the processes alive at once
  std::vector<SiteAmount> peak_sites;   // live at that instant, bytes descending (with stacks)
  int64_t leak_count = 0, leak_bytes = 0;
  std::vector<SiteAmount> leak_sites;   // bytes descending (with stacks)
  int64_t alloc_count = 0, alloc_bytes = 0, free_count = 0;  // over the whole run
  // Its curve over the run (summed over the processes alive then), at most kDeviceSeriesPoints
  // points: each the highest live bytes in its interval, at that instant; the exact peak is one.
  struct Point {
    int64_t t_ns = 0, bytes = 0;
  };
  std::vector<Point> series;
};
inline constexpr size_t kDeviceSeriesPoints = 200;

// True for the names of CUDA spaces: device:N, pinned, managed.
bool isCudaSpace(const std::string& name);
// Every CUDA space of the recording, device numbers first in order; each list cut to `top`.
std::vector<DeviceSpace> deviceSpaces(const Recording& rec, size_t top = 10);

nlohmann::json toJson(const DeviceSpace& d);

// The CUDA rules of suggestions() (suggestions_cuda.cpp): appended to `out`.
void cudaSuggestions(const Recording& rec, const Filter& filter, std::vector<Suggestion>& out);

}  // namespace memledger::analyzer
