// The "Device memory" section of `memledger report` (analyzer/devices.h): each CUDA space's exact
// peak with the sites live at that instant, and its leaks.
#include "report_devices.h"

#include <cstdio>

#include "analyzer/format.h"

namespace memledger::cli {

namespace an = memledger::analyzer;

namespace {
std::string siteLines(const std::vector<an::SiteAmount>& sites) {
  std::string out;
  int i = 0;
  for (const an::SiteAmount& s : sites) {
    char head[96];
    std::snprintf(head, sizeof head, "      #%-3d %10s in %s %s  (%s)  ", ++i, an::formatBytes(s.bytes).c_str(),
                  an::formatCount(s.count).c_str(), s.count == 1 ? "block" : "blocks", s.kind.c_str());
    out += head + an::printable(an::siteText(s.stack)) + "\n";
  }
  return out;
}
}  // namespace

std::string textDevices(const std::vector<an::DeviceSpace>& devices) {
  if (devices.empty()) return {};
  std::string out = "\nDevice memory (CUDA; each space on its own, never summed)\n";
  for (const an::DeviceSpace& d : devices) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-10s peak %s at %s; %s allocations, %s leaked in %s %s\n", d.name.c_str(),
                  an::formatBytes(d.peak_bytes).c_str(), an::formatDuration(d.peak_ns).c_str(),
                  an::formatCount(d.alloc_count).c_str(), an::formatBytes(d.leak_bytes).c_str(),
                  an::formatCount(d.leak_count).c_str(), d.leak_count == 1 ? "block" : "blocks");
    out += line;
    if (!d.peak_sites.empty()) out += "    live at its peak:\n" + siteLines(d.peak_sites);
    if (!d.leak_sites.empty()) out += "    leaked (never freed before the process ended):\n" + siteLines(d.leak_sites);
  }
  return out;
}

nlohmann::json jsonDevices(const std::vector<an::DeviceSpace>& devices) {
  nlohmann::json out = nlohmann::json::array();
  for (const an::DeviceSpace& d : devices) out.push_back(an::toJson(d));
  return out;
}

}  // namespace memledger::cli
