// Filters checked against the recording they are applied to: a filter that cannot select
// anything is an error the user must see (exit 2), never an empty answer that reads as "no leaks".
#include <algorithm>

#include "analyzer/analyzer.h"
#include "analyzer/format.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

// The one list of kinds: the stored kind codes of schemas/memledger.sql (site_totals), in order.
// When a kind registry (device kinds) arrives, this function is the one place to switch.
const std::vector<std::string>& knownKinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> out;
    for (uint64_t code = 0; *detail::siteKindName(code); ++code) out.emplace_back(detail::siteKindName(code));
    return out;
  }();
  return kinds;
}

void validateFilter(const Recording& rec, const Filter& filter) {
  const std::string& path = rec.info().path;
  if (filter.kind) {
    const auto& kinds = knownKinds();
    if (std::find(kinds.begin(), kinds.end(), *filter.kind) == kinds.end()) {
      std::string known;
      for (const auto& k : kinds) known += (known.empty() ? "" : ", ") + k;
      throw FilterError("memledger: unknown kind '" + *filter.kind + "' (known: " + known + ")");
    }
  }
  if (filter.pid) {
    detail::Statement q(rec, "SELECT 1 FROM processes WHERE pid = ? LIMIT 1");
    q.bind(1, *filter.pid);
    if (!q.step()) throw FilterError("memledger: no process with pid " + std::to_string(*filter.pid) + " in '" + path + "'");
  }
  // An incomplete recording (the recorder was killed) may not know where its run ended.
  if ((filter.t_from_ns || filter.t_to_ns) && rec.info().complete) {
    int64_t end = rec.info().duration_ns;
    detail::Statement q(rec, "SELECT coalesce(max(end_ns), 0), coalesce(max(start_ns), 0) FROM processes");
    if (q.step()) end = std::max({end, q.i64(0), q.i64(1)});
    int64_t from = filter.t_from_ns.value_or(0), to = filter.t_to_ns.value_or(end);
    // A range that starts after the run ended selects nothing the recording has.
    if (from > end || to < 0 || from > to)
      throw FilterError("memledger: time range " + formatDuration(from) + " to " +
                        (filter.t_to_ns ? formatDuration(to) : std::string("the end")) +
                        " is outside the recording '" + path + "' (0 to " + formatDuration(end) + ")");
  }
}

std::vector<std::string> unfilteredNumbers(const Filter& filter, const std::string& view) {
  const bool all = view == "report";
  const bool byKind = filter.kind.has_value(), byTime = filter.t_from_ns || filter.t_to_ns;
  std::vector<std::string> out;
  // What each question ignores (sites.cpp, phases.cpp, fragmentation.cpp, suggestions.cpp):
  // a peak is over every kind of its space, and whole-run counters have no time.
  if (byKind && all)
    out.push_back("the heap and mmap peaks, RSS, the phases' peaks and fragmentation: not by kind (each "
                  "is over every kind of its space); the sites listed under them are");
  if (byKind && view == "peak")
    out.push_back("the heap and mmap peaks and RSS: not by kind (each is over every kind of its space); the "
                  "sites live at the peak are");
  if (byKind && view == "phases")
    out.push_back("the phases' peaks: not by kind (over every kind of the heap); their top sites are");
  if (byKind && view == "fragmentation")
    out.push_back("fragmentation: not by kind (the heap's resident memory holds every kind)");
  if (byTime && all)
    out.push_back("totals, temporaries, the peak and its sites, patterns and suggestions other than "
                  "fix_leak: not by time (whole-run counters); leaks, phases and fragmentation are");
  if (byTime && view == "peak")
    out.push_back("the peak and its sites: not by time (the run's peak, wherever it falls)");
  if (byTime && view == "suggest")
    out.push_back("suggestions other than fix_leak: not by time (whole-run counters)");
  return out;
}

}  // namespace memledger::analyzer
