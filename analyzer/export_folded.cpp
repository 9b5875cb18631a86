#include <map>
#include <tuple>

#include "analyzer/control.h"
#include "analyzer/export_formats.h"
#include "analyzer/python_sites.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

namespace {

// Folded lines split frames on ';' and the value on the last space: keep names free of ';' and
// line breaks so a C++ name can never shift the columns. A Python frame is named as the report
// names it, "py_leaker (leaky.py:7)": its function alone ("<module>", "run") says too little.
std::string foldedName(const Frame& f) {
  std::string name;
  if (isPythonFrame(f)) {
    name = frameText(f);
  } else if (f.function) {
    name = *f.function;
  } else if (f.module) {
    name = "[" + unknownFrameName(f) + "]";
  } else {
    name = "??";
  }
  for (char& c : name)
    if (c == ';' || c == '\n' || c == '\r') c = ':';
  return name;
}

}  // namespace

std::optional<Metric> parseMetric(std::string_view text) {
  if (text == "leaked") return Metric::Leaked;
  if (text == "peak") return Metric::Peak;
  if (text == "allocated") return Metric::Allocated;
  if (text == "count") return Metric::Count;
  return std::nullopt;
}

std::string exportFolded(const Recording& rec, Metric metric) {
  // The heap's live set at the report's heap peak (heap kinds only): its sum is that peak.
  std::map<std::tuple<int64_t, int64_t, std::string>, int64_t> atPeak;
  if (metric == Metric::Peak) {
    std::optional<int64_t> image = detail::peakImage(rec, {});
    for (const SiteAmount& a : detail::heapPeakSites(rec, {}, detail::hasSimultaneousPeaks(rec), image.value_or(0)))
      atPeak[{a.image_id, a.stack_id, a.kind}] += a.bytes;
  }
  std::map<std::string, int64_t> lines;
  std::vector<const Frame*> stack;
  // Site rows without their stacks copied in (sites() would copy every stack of the recording).
  std::vector<Site> rows;
  {
    detail::Stage reading(0, 0.2);
    rows = detail::siteRows(rec, {});
  }
  detail::Stage folding(0.2, 1);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Site& s = rows[i];
    detail::progress(double(i) / double(rows.size()));
    int64_t value = 0;
    switch (metric) {
      case Metric::Leaked: value = s.leak_bytes; break;
      case Metric::Peak: {
        auto it = atPeak.find({s.image_id, s.stack_id, s.kind});
        value = it != atPeak.end() ? it->second : 0;
        break;
      }
      case Metric::Allocated: value = s.alloc_bytes; break;
      case Metric::Count: value = s.alloc_count; break;
    }
    if (value <= 0) continue;
    rec.stackFrames(s.stack_id, &stack);
    std::string line;
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      if (!line.empty()) line += ';';
      line += foldedName(**it);
    }
    if (line.empty()) line = "[no stack]";
    lines[line] += value;
  }
  std::string out;
  for (const auto& [stack, value] : lines) out += stack + " " + std::to_string(value) + "\n";
  return out;
}

}  // namespace memledger::analyzer
