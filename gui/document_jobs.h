// What the Document's worker jobs compute (never on the GUI thread): a recording's first screen
// (RecordingData) and a range's per-site answers (RangeData), of A, of B, or of B − A. Only
// analyzer questions, put together for the views.
#pragma once

#include <future>
#include <memory>
#include <optional>
#include <string>

#include "gui/document.h"

namespace memledger::gui {

// Opens `file` and reads the Summary's and the Timeline's data (with the timeline's coarser
// copies when `levels`; only analyzer::reportFirstPart() when `firstPart`, the Document adds
// the second part when it is done). Throws what the analyzer throws (RecordingError, Cancelled).
std::shared_ptr<RecordingData> loadRecording(const std::string& file, analyzer::QueryControl& control, bool levels,
                                             bool firstPart = false);

struct RangeRequest {
  std::shared_ptr<const RecordingData> a, b;  // b: the comparison, when one is open
  Show show = Show::A;
  std::optional<int64_t> from, to, live_at;
  std::string space;  // the wanted space ("" every space)
  bool bottom_up = true;  // the bottom-up tree too (else only top-down and caller/callee)
  // Each recording's tree shapes (made once per recording; the job waits for those it needs):
  // A's, B's and B − A's trees are re-costed on them. Not valid: built from scratch.
  using IndexFuture = std::shared_future<std::shared_ptr<const analyzer::TreeIndex>>;
  IndexFuture index, index_b;
};

// The trees, caller/callee, leaks and sizes of the request. With a range or live_at the peak
// amounts are the range's peak / the live set then (analyzer/live_set.h) where the file allows.
std::shared_ptr<RangeData> computeRange(const RangeRequest& request, analyzer::QueryControl& control);

}  // namespace memledger::gui
