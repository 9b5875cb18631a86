// The leak kinds of a report as memcheck's LEAK SUMMARY (docs/leak-kinds.md).
#include <cinttypes>
#include <cstdio>

#include "report_text.h"

namespace memledger::cli {
namespace an = memledger::analyzer;

std::string textLeakSummary(const an::Leaks& l) {
  if (!l.scanned) return "";
  static const char* const labels[] = {"definitely lost", "indirectly lost", "possibly lost",
                                       "still reachable", "not classified"};
  std::string out = "  LEAK SUMMARY (heap blocks; exit scan by memcheck's rules):\n";
  for (int k = 0; k < an::kLeakKindSlots; ++k) {
    if (k == an::kNotClassified && l.kinds[k].count == 0) continue;
    char line[160];
    std::snprintf(line, sizeof line, "    %15s: %" PRId64 " bytes in %" PRId64 " blocks\n", labels[k],
                  l.kinds[k].bytes, l.kinds[k].count);
    out += line;
  }
  // The scan runs at exit, after finalization freed most of what a Python process's leaks count.
  if (l.python_processes && l.kinds[an::kNotClassified].count)
    out += "    (Python: blocks that finalization freed were gone by the exit scan: not classified)\n";
  return out;
}

std::string textSiteKinds(const an::SiteAmount& s) {
  std::string out;
  for (int k = 0; k < an::kLeakKindSlots; ++k) {
    if (!s.leak_kinds[k].count) continue;
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %" PRId64 " B in %" PRId64, out.empty() ? "" : ", ",
                  an::leakKindName(k), s.leak_kinds[k].bytes, s.leak_kinds[k].count);
    out += part;
  }
  return out;
}

}  // namespace memledger::cli
