// Every leaked block of a recording in memory, by allocation time: what a time range's leaks add
// up. A front end asks range after range (the GUI: each selection); each of those asked SQLite
// for the range's leaked rows three times (the sites, their leak kinds through a join, what a
// Python process's finalization left), 60-70 ms a range on a PyTorch run's 46,000 leaked blocks.
// Read once per recording (Recording::leakedBlocks()), a range is a binary search and a pass over
// its slice.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer::detail {

class LeakedBlocks {
 public:
  // More leaked blocks than this (40 bytes each in memory) are not kept: `available` is false and
  // the questions read the table as before.
  static constexpr size_t kMaxBlocks = 4'000'000;

  struct Block {
    int64_t t;      // allocation time
    int64_t stack;  // stack id
    int64_t image;  // process image id
    int64_t size;
    uint16_t kind;      // index into kinds()
    int8_t leak_kind;   // the exit scan's LeakKindIndex (kDefinite..kReachable), -1 when none
  };

  explicit LeakedBlocks(const Recording& rec);

  bool available() const { return available_; }
  // The kind names of the blocks, ascending (byte order, as SQLite compares TEXT).
  const std::vector<std::string>& kinds() const { return kinds_; }
  // The blocks allocated in [from, to] (both ends kept), in time order.
  std::span<const Block> range(std::optional<int64_t> from, std::optional<int64_t> to) const;

 private:
  bool available_ = false;
  std::vector<std::string> kinds_;
  std::vector<Block> blocks_;
};

// Leaks per site of the blocks in `blocks` that `kept` keeps, as `SELECT stack_id, kind, image_id, count(*), sum(size) FROM allocations WHERE
// t_free IS NULL AND t_alloc BETWEEN from AND to [AND the images kept] [AND kind = ?] GROUP BY
// stack_id, kind, image_id` gives them, in that order.
struct LeakedSite {
  int64_t stack;
  uint16_t kind;  // index into LeakedBlocks::kinds()
  int64_t image;
  int64_t count, bytes;
};
std::vector<LeakedSite> leakedSites(std::span<const LeakedBlocks::Block> blocks,
                                    const std::function<bool(const LeakedBlocks::Block&)>& kept);

}  // namespace memledger::analyzer::detail
