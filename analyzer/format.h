// Human formatting shared by the analyzer's messages and every front end (CLI, GUI).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace memledger::analyzer {

// A path's last component ("/usr/lib/libc.so.6" -> "libc.so.6"); the path itself without a slash.
inline std::string_view pathBaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string formatBytes(int64_t bytes);        // "512 B", "1.5 KiB", "300.0 MiB", "2.00 GiB"
std::string formatDuration(int64_t ns);        // "850 ns", "12.5 us", "3.20 ms", "1.25 s"
std::string formatCount(int64_t n);            // "1,234,567"

// A suggestion's evidence (an object of numbers) for people: each key as words, sizes in human
// units, times as durations, a share as a percent, counts with separators, joined by " · ":
//   {"peak_bytes":314572800,"share":1.0,"site_peak_count":300}
//   -> "peak: 300.0 MiB · share: 100% · site peak count: 300"
std::string formatEvidence(const nlohmann::json& evidence);

// Text from a recording (a command line, a path) made safe for one line of a terminal: control
// characters are written as C escapes ("\n" as the two characters \ and n; \t, \r, \e, others
// \xHH), so a command line with newlines cannot break a header or a table. Everything else
// (backslashes and UTF-8 included) is kept as is.
std::string printable(std::string_view text);

// A duration as nanoseconds: "2" and "0.5" are seconds; units ns, us, ms, s, m (minutes) may
// follow ("100ms", "1.5 s"). nullopt when malformed or negative.
std::optional<int64_t> parseDuration(std::string_view text);

// A time range "A:B" (either side may be empty: "1s:", ":500ms"), each side as parseDuration.
// nullopt when malformed, or when A > B.
struct TimeRange {
  std::optional<int64_t> from_ns, to_ns;
};
std::optional<TimeRange> parseTimeRange(std::string_view text);

}  // namespace memledger::analyzer
