// Internal to the analyzer: the one reader of each of the two stored live sets, over every
// schema version that has them (schemas/memledger.sql):
//   the live set at each simultaneous peak: version 8 `peak_site_lists` (packed), versions 5-7
//     `peak_sites` (a row per site), none before;
//   the live set when a Python interpreter started finalizing: version 8 `python_finalize_lists`
//     (packed), versions 6-7 `python_finalize_sites` (a row per site and bucket; t_ns may be
//     missing), none before.
// Both forms give the same entries in the same order: by image, then stack id, kind and bucket.
// A damaged packed row throws RecordingError(Corrupt) naming the table, row and entry.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer::detail {

struct PeakSite {
  int64_t image_id = 0, stack_id = 0;
  uint64_t kind = 0;  // a kind code of schemas/kinds.h
  int64_t count = 0, bytes = 0;
};
// The sites live at the recording's simultaneous peak of `space` (a spaces.name of image 0).
std::vector<PeakSite> peakSites(const Recording& rec, const std::string& space);

struct FinalizeSite {
  int64_t image_id = 0, stack_id = 0;
  uint64_t kind = 255;        // a kind code of schemas/kinds.h; 255: a name this analyzer does not know
  std::string_view kind_name;  // as stored (versions 6-7: the row's text), valid during the call
  int64_t count = 0, bytes = 0;
  std::optional<int64_t> t_ns;  // the start of its blocks' allocation bucket (absent: not stored)
};
// Whether the file has the finalization live set (version 6 or later, with the table).
bool hasFinalizeSites(const Recording& rec);
// Whether its entries carry their allocation bucket (always in version 8; t_ns came within 6).
bool finalizeSitesHaveTimes(const Recording& rec);
// Calls f for every entry (of `image` only, when given).
void forEachFinalizeSite(const Recording& rec, std::optional<int64_t> image,
                         const std::function<void(const FinalizeSite&)>& f);

}  // namespace memledger::analyzer::detail
