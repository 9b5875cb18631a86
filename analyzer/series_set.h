// Every memory curve of a recording from one read of its timeline, for a chart that shows them
// all (the GUI's timeline): the host heap, anonymous mmap, RSS, and each other space and pool
// (device:N, pinned, managed, pool:NAME, custom) by its `spaces` name. Each series carries its
// exact peak when the recording knows it (curve.h spaceSeries gives the same series one by one,
// reading the timeline once per series).
#pragma once

#include <string>
#include <vector>

#include "analyzer/curve.h"

namespace memledger::analyzer {

struct NamedSeries {
  std::string name;  // heap | mmap | rss | device:0 | pool:NAME | ...
  Series series;
};

// heap, mmap, rss (only when RSS was sampled), then the other accounts in name order.
std::vector<NamedSeries> memorySeries(const Recording& rec);
std::vector<NamedSeries> memorySeries(const Recording& rec, QueryControl& control);

namespace detail {
// A space's exact peak (curve.cpp): of one image, or (nullopt) the recording's simultaneous one.
std::optional<ExactPeak> spacePeak(const Recording& rec, const std::string& name, std::optional<int64_t> image_id);
}  // namespace detail

}  // namespace memledger::analyzer
