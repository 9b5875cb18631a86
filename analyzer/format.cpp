// Human formatting of sizes, durations and counts, plus frame/stack text and keys.
#include "analyzer/format.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "analyzer/analyzer.h"

namespace memledger::analyzer {

std::string formatBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (std::abs(v) >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%" PRId64 " B", bytes);
  else std::snprintf(buf, sizeof buf, std::abs(v) < 10 ? "%.2f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string formatDuration(int64_t ns) {
  char buf[48];
  double a = std::abs(static_cast<double>(ns));
  if (a < 1e3) std::snprintf(buf, sizeof buf, "%" PRId64 " ns", ns);
  else if (a < 1e6) std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else if (a < 1e9) std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  return buf;
}

std::string formatCount(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

namespace {

std::string evidenceValue(const std::string& key, const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) {
    int64_t n = v.get<int64_t>();
    if (key.ends_with("_bytes") || key.ends_with("_size") || key == "size") return formatBytes(n);
    if (key.ends_with("_ns")) return formatDuration(n);
    if (key == "pid" || key == "device") return std::to_string(n);
    return formatCount(n);
  }
  if (v.is_number()) {
    double d = v.get<double>();
    char buf[64];
    if (key == "share" || key.ends_with("_share"))
      std::snprintf(buf, sizeof buf, "%.0f%%", d * 100);
    else
      std::snprintf(buf, sizeof buf, "%.2f", d);
    return buf;
  }
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

std::string formatEvidence(const nlohmann::json& evidence) {
  if (!evidence.is_object()) return evidence.is_null() ? std::string() : evidence.dump();
  std::string out;
  for (const auto& [key, value] : evidence.items()) {
    std::string label = key;
    if (label.ends_with("_bytes")) label.resize(label.size() - 6);  // the unit says it
    if (label.ends_with("_ns")) label.resize(label.size() - 3);
    for (char& c : label)
      if (c == '_') c = ' ';
    out += (out.empty() ? "" : " · ") + label + ": " + evidenceValue(key, value);
  }
  return out;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '\n': out += "\\n"; continue;
      case '\t': out += "\\t"; continue;
      case '\r': out += "\\r"; continue;
      case '\x1b': out += "\\e"; continue;
      default: break;
    }
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<int64_t> parseDuration(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  size_t numEnd = 0;
  bool digits = false, dot = false;
  while (numEnd < text.size()) {
    char c = text[numEnd];
    if (c >= '0' && c <= '9') digits = true;
    else if (c == '.' && !dot) dot = true;
    else break;
    ++numEnd;
  }
  if (!digits) return std::nullopt;
  std::string_view unit = text.substr(numEnd);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double scale;
  if (unit.empty() || unit == "s") scale = 1e9;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ns") scale = 1;
  else if (unit == "m" || unit == "min") scale = 60e9;
  else return std::nullopt;
  double v = std::strtod(std::string(text.substr(0, numEnd)).c_str(), nullptr);
  double ns = v * scale;
  if (!(ns >= 0) || ns > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(ns + 0.5);
}

std::optional<TimeRange> parseTimeRange(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos)
    return std::nullopt;
  TimeRange r;
  std::string_view a = text.substr(0, colon), b = text.substr(colon + 1);
  if (a.empty() && b.empty()) return std::nullopt;
  if (!a.empty() && !(r.from_ns = parseDuration(a))) return std::nullopt;
  if (!b.empty() && !(r.to_ns = parseDuration(b))) return std::nullopt;
  if (r.from_ns && r.to_ns && *r.from_ns > *r.to_ns) return std::nullopt;
  return r;
}

std::string unknownFrameName(const Frame& frame) {
  if (frame.function) return *frame.function;
  if (!frame.module) return "??";
  char off[32] = "";
  if (frame.offset) std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(*frame.offset));
  return std::string(pathBaseName(*frame.module)) + off;
}

std::string frameText(const Frame& frame) {
  // A frame without a symbol: its module and offset (python3.11+0x1f2e3d), never a bare "??".
  if (!frame.function && !frame.file && frame.module) return unknownFrameName(frame);
  std::string out = frame.function.value_or("??");
  if (frame.file) {
    out += " (";
    out += pathBaseName(*frame.file);
    if (frame.line) out += ":" + std::to_string(*frame.line);
    out += ")";
  } else if (frame.module) {
    out += " (";
    out += pathBaseName(*frame.module);
    out += ")";
  }
  return out;
}

std::string stackKey(const Stack& stack) {
  // Symbolic, so the same code path matches across two runs with different addresses and ids.
  std::string key;
  for (const Frame& f : stack) {
    key += f.function.value_or("??");
    key += '@';
    key += f.file ? pathBaseName(*f.file) : (f.module ? pathBaseName(*f.module) : std::string_view("?"));
    key += ':';
    key += f.line ? std::to_string(*f.line) : std::string("0");
    key += ';';
  }
  return key;
}

const char* patternName(PatternKind kind) {
  switch (kind) {
    case PatternKind::ReallocGrowth: return "realloc_growth";
    case PatternKind::SameSizeChurn: return "same_size_churn";
    case PatternKind::ManySameSizeLive: return "many_same_size_live";
  }
  return "unknown";
}

}  // namespace memledger::analyzer
