// CUDA spaces of a recording (devices.h).
#include "analyzer/devices.h"

#include <algorithm>
#include <limits>
#include <map>

#include "analyzer/curve.h"
#include "analyzer/live_sets.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {


bool isCudaSpace(const std::string& n) { return n.rfind("device:", 0) == 0 || n == "pinned" || n == "managed"; }

namespace {

SiteAmount withStack(const Recording& rec, int64_t stack, std::string kind, int64_t image, int64_t count,
                     int64_t bytes) {
  SiteAmount s;
  s.stack_id = stack;
  s.kind = std::move(kind);
  s.image_id = image;
  s.pid = rec.pidOf(image);
  s.count = count;
  s.bytes = bytes;
  s.stack = rec.stack(stack);
  return s;
}

void sortCut(std::vector<SiteAmount>& v, size_t top) {
  std::stable_sort(v.begin(), v.end(), [](const SiteAmount& a, const SiteAmount& b) { return a.bytes > b.bytes; });
  if (top && v.size() > top) v.resize(top);
}

// device:2 before device:10, then pinned, then managed.
std::pair<int, int64_t> order(const std::string& n) {
  if (n.rfind("device:", 0) == 0) return {0, std::atoll(n.c_str() + 7)};
  return {n == "pinned" ? 1 : 2, 0};
}

}  // namespace

std::vector<DeviceSpace> deviceSpaces(const Recording& rec, size_t top) {
  std::vector<DeviceSpace> out;
  if (rec.info().schema_version < 5) return out;
  {
    detail::Statement q(rec, "SELECT name, peak_bytes, peak_ns FROM spaces WHERE image_id = 0 AND is_pool = 0");
    while (q.step()) {
      std::string name = q.text(0);
      if (!isCudaSpace(name)) continue;
      DeviceSpace d;
      d.name = name;
      d.peak_bytes = q.i64(1);
      d.peak_ns = q.i64(2);
      out.push_back(std::move(d));
    }
  }
  std::sort(out.begin(), out.end(), [](const DeviceSpace& a, const DeviceSpace& b) { return order(a.name) < order(b.name); });
  std::map<std::string, DeviceSpace*> byName;
  for (DeviceSpace& d : out) byName[d.name] = &d;
  if (out.empty()) return out;
  for (DeviceSpace& d : out) {
    for (const detail::PeakSite& s : detail::peakSites(rec, d.name))
      d.peak_sites.push_back(withStack(rec, s.stack_id, detail::siteKindName(s.kind), s.image_id, s.count, s.bytes));
    sortCut(d.peak_sites, top);
  }
  for (const Site& s : detail::siteRows(rec, {})) {
    auto it = byName.find(s.space);
    if (it == byName.end()) continue;
    DeviceSpace& d = *it->second;
    d.alloc_count += s.alloc_count;
    d.alloc_bytes += s.alloc_bytes;
    d.free_count += s.free_count;
    if (s.leak_count > 0 || s.leak_bytes > 0) {
      d.leak_count += s.leak_count;
      d.leak_bytes += s.leak_bytes;
      d.leak_sites.push_back(withStack(rec, s.stack_id, s.kind, s.image_id, s.leak_count, s.leak_bytes));
    }
  }
  for (DeviceSpace& d : out) {
    sortCut(d.leak_sites, top);
    Curve c = downsample(spaceSeries(rec, d.name, std::nullopt), 0, std::numeric_limits<int64_t>::max(),
                         kDeviceSeriesPoints);
    for (const CurvePoint& p : c.points) d.series.push_back({p.max_t_ns, p.max});
  }
  return out;
}

nlohmann::json toJson(const DeviceSpace& d) {
  auto list = [](const std::vector<SiteAmount>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const SiteAmount& s : v)
      a.push_back({{"count", s.count}, {"bytes", s.bytes}, {"kind", s.kind}, {"pid", s.pid},
                   {"stack_id", s.stack_id}, {"stack", toJson(s.stack)}});
    return a;
  };
  nlohmann::json series = nlohmann::json::array();
  for (const DeviceSpace::Point& p : d.series) series.push_back({{"t_ns", p.t_ns}, {"bytes", p.bytes}});
  return {{"space", d.name},
          {"peak_bytes", d.peak_bytes},
          {"peak_ns", d.peak_ns},
          {"peak_sites", list(d.peak_sites)},
          {"leak_count", d.leak_count},
          {"leak_bytes", d.leak_bytes},
          {"leak_sites", list(d.leak_sites)},
          {"alloc_count", d.alloc_count},
          {"alloc_bytes", d.alloc_bytes},
          {"free_count", d.free_count},
          {"series", series}};
}

}  // namespace memledger::analyzer
