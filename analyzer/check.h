// `memledger check`: limits a CI job puts on a recording, and the verdict.
//
// Definitions (also in `memledger check --help`):
//   leaked bytes / leaks   blocks still live when their process ended, over all processes, after
//                          suppressions; `--max-leaks` counts leaked BLOCKS (allocations), as
//                          LeakSanitizer's summary does, not sites.
//   peak                   the exact peak of one kind, the largest over all process images:
//                          heap (malloc/new family, default), mmap (anonymous mmap) or rss.
//   peak growth            (peak - baseline peak) / baseline peak, in percent, same kind.
//   new leak sites         unsuppressed leak sites whose site key (diff.h) and kind are not a
//                          leak site of the baseline.
//   failed program         a process image of the started program's own pid (the started program
//                          and what it exec'd) that exited non-zero or died of a signal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer/suppressions.h"

namespace memledger::analyzer {

// "4096", "4KiB", "4K", "10MB", "1GiB", "1.5MiB": binary suffixes (KiB, MiB, GiB, TiB) are powers
// of 1024, decimal ones (kB/KB, MB, GB, TB) powers of 1000, a bare K/M/G/T is binary. A trailing
// "B" alone means bytes. nullopt when the text is not a size.
std::optional<int64_t> parseSize(std::string_view text);

// Device, Pinned, Managed (CUDA, docs/cuda.md): the peak is the largest simultaneous peak of the
// CUDA spaces of that kind (device:N: any device), and leak limits count only those spaces' leaks.
enum class PeakKind { Heap, Mmap, Rss, Device, Pinned, Managed };
std::optional<PeakKind> parsePeakKind(std::string_view text);  // heap | mmap | rss | device | pinned | managed
const char* peakKindName(PeakKind kind);

struct Limits {
  std::optional<int64_t> max_leaked_bytes;
  std::optional<int64_t> max_leaks;  // leaked blocks
  std::optional<int64_t> max_peak;
  PeakKind peak_kind = PeakKind::Heap;
  std::optional<double> max_peak_growth_pct;   // needs a baseline
  std::optional<int64_t> max_new_leak_sites;   // needs a baseline
  // Leak kinds counted as leaks (analyzer.h LeakKindIndex; `check --leak-kinds`): by default
  // definite and indirect (LeakSanitizer's semantics) and the leaks that could not be classified
  // (unscanned processes, kinds that are not heap: counted as before).
  std::array<bool, kLeakKindSlots> leak_kinds{true, true, false, false, true};
};

struct Violation {
  std::string rule;     // max-leaked-bytes | max-leaks | max-peak | max-peak-growth | max-new-leak-sites | program-failed
  std::string message;  // one line: "12288 leaked bytes > limit 4096"
  std::vector<Site> sites;            // the sites responsible, most bytes first
  std::optional<int64_t> image_id;    // the process image it belongs to, when it is one image's
};

struct CheckResult {
  std::vector<Process> processes;
  // Leaks after suppressions.
  int64_t leak_count = 0, leak_bytes = 0;
  std::vector<Site> leak_sites;  // unsuppressed, leak_bytes descending
  int64_t suppressed_count = 0, suppressed_bytes = 0;
  // Leaked heap blocks of the leak kinds not chosen (--leak-kinds): left out of the counts above.
  int64_t uncounted_count = 0, uncounted_bytes = 0;
  // CPython processes, whose leaks are what was live when their interpreter started finalizing
  // (docs/python.md), not what was left at exit.
  int64_t python_processes = 0;
  std::vector<Suppression> suppressions;  // every entry with what it matched
  // Peak of the chosen kind.
  PeakKind peak_kind = PeakKind::Heap;
  int64_t peak_bytes = 0;
  int64_t peak_image = 0;
  std::vector<Site> peak_sites;  // what was live at that peak (top 10)
  std::optional<int64_t> baseline_peak_bytes;
  std::vector<Site> new_leak_sites;
  std::vector<Violation> violations;
  bool passed() const { return violations.empty(); }
};

// Evaluates `limits` on `rec`. `suppressions` gets its match counts updated (and copied into the
// result). `baseline` is required when a growth or new-site limit is set (std::invalid_argument
// otherwise). Throws RecordingError for an unreadable recording.
CheckResult check(const Recording& rec, const Limits& limits, SuppressionList& suppressions,
                  const Recording* baseline = nullptr);

// The human report: verdict, each violation with the stacks of its first `top` sites (0 = all; the
// rest are counted on one line), suppression counts.
std::string formatCheck(const CheckResult& result, const std::string& title, size_t top = 10);

// One frame as printed in stacks: "function (file:line) [module]".
std::string frameLine(const Frame& frame);

}  // namespace memledger::analyzer
