// `memledger diff A B`: what changed per allocation site between two recordings.
//
// Sites are matched by their symbolized frames (function and source file name of each frame, not
// addresses and not line numbers), so two builds of the same program compare. Sites of all
// processes with the same key and kind are summed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/analyzer.h"

namespace memledger::analyzer {

// The matching key of a stack: per frame "function@file" (file as its base name), or
// "??@module" (module base name) for frames without a function, joined by ';'.
std::string siteKey(const Stack& stack);
// One frame's part of siteKey(): "function@file" or "??@module".
std::string siteKeyPart(const Frame& frame);

struct DiffAmounts {
  int64_t leak_count = 0, leak_bytes = 0;
  int64_t peak_bytes = 0;  // contribution to the heap peak (live at the peak)
  int64_t alloc_count = 0, alloc_bytes = 0;
  int64_t temp_count = 0, temp_bytes = 0;
};

enum class DiffStatus { New, Gone, Changed, Same };
const char* diffStatusName(DiffStatus status);  // new | gone | changed | same

struct SiteDiff {
  std::string key;
  std::string kind;
  Stack stack;  // from B when present there, else from A
  DiffStatus status = DiffStatus::Same;
  DiffAmounts a, b;
  // The largest absolute byte delta among leaks, peak, allocated and temporary bytes: the order
  // of the diff, biggest change first.
  int64_t impact = 0;
};

struct DiffResult {
  // The two recordings compared (A = before, B = after): their paths and command lines.
  std::string path_a, path_b, command_a, command_b;
  Totals totals_a, totals_b;
  int64_t leak_bytes_a = 0, leak_bytes_b = 0;
  int64_t leak_count_a = 0, leak_count_b = 0;
  int64_t peak_a = 0, peak_b = 0;  // exact heap peak (largest over images)
  std::vector<SiteDiff> sites;     // impact descending; unchanged sites left out
};

DiffResult diff(const Recording& a, const Recording& b);
nlohmann::json toJson(const DiffResult& diff);
std::string formatDiff(const DiffResult& diff, size_t top);  // human text, `top` sites (0 = all)

}  // namespace memledger::analyzer
