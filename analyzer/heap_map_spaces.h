// Internal to the fragmentation map (heap_map.cpp, heap_map_history.cpp): the space an
// `allocations` row counts in. A row has its kind, not its account: heap and mmap kinds say their
// space, a device's blocks and pool blocks take their account from their site (site_totals
// entries carry it, version 5), and an account's name from `spaces`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "analyzer/analyzer.h"

namespace memledger::analyzer::detail {

class RowSpaces {
 public:
  explicit RowSpaces(const Recording& rec);
  // The space of a row ("heap", "device:0", "pool:tensors"); "" for rows the map leaves out
  // (cuMemCreate handles: physical memory without an address).
  const std::string& of(int64_t image, int64_t stack, const std::string& kind);
  // A pool's reserved range as its program told it (base, size); nullopt when not told.
  struct Reserved {
    uint64_t base = 0, size = 0;
  };
  std::optional<Reserved> reserved(int64_t image, const std::string& space) const;

 private:
  const Recording& rec_;
  bool sitesRead_ = false;
  std::map<std::pair<int64_t, int64_t>, std::string> accountNames_;              // (image, account)
  std::map<std::tuple<int64_t, int64_t, std::string>, int64_t> siteAccounts_;    // (image, stack, kind)
  std::map<std::tuple<int64_t, int64_t, std::string>, std::string> memo_;
  std::map<std::pair<int64_t, std::string>, Reserved> reserved_;
};

}  // namespace memledger::analyzer::detail
