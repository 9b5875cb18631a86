// Human text for `memledger report` and its focused views: a headline first, then readable
// tables, sizes in B/KiB/MiB/GiB, stacks as a few "function (file:line)" lines.
#pragma once

#include <cstddef>
#include <string>

#include "analyzer/analyzer.h"

namespace memledger::cli {

struct TextOptions {
  size_t top = 10;    // sites per list
  size_t frames = 6;  // frames per stack
  bool complete = true;  // false: the recorder did not finish, so "no leak site" proves nothing
};

// "  filter: pid 12, kind malloc" and one "  unfiltered: ..." line per number of `view` (report,
// leaks, peak, ...) the filter does not apply to; empty without a filter.
std::string textFilter(const analyzer::Filter& filter, const std::string& view = "report");
std::string textRecordingLine(const analyzer::RecordingInfo& info);  // "run.db: ./prog, 1.20 s, complete"
std::string textSummary(const analyzer::Report& report);
std::string textLeaks(const analyzer::Leaks& leaks, const TextOptions& opt);
std::string textPeak(const analyzer::Peak& peak, const TextOptions& opt);
// Leak kinds (report_leak_kinds.cpp): memcheck's LEAK SUMMARY lines ("" when nothing was
// scanned), and one site's kinds ("definite 100 B in 1, ...").
std::string textLeakSummary(const analyzer::Leaks& leaks);
std::string textSiteKinds(const analyzer::SiteAmount& site);
std::string textProcesses(const std::vector<analyzer::Process>& processes);
std::string textPhases(const std::vector<analyzer::Phase>& phases, const TextOptions& opt);
std::string textFragmentation(const analyzer::Fragmentation& fragmentation);
std::string textTemporaries(const std::vector<analyzer::SiteAmount>& temporaries, const analyzer::Totals& totals,
                            const TextOptions& opt);
std::string textSuggestions(const std::vector<analyzer::Suggestion>& suggestions, const TextOptions& opt);
std::string textReport(const analyzer::Report& report, const TextOptions& opt);

}  // namespace memledger::cli
