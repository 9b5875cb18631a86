#include "analyzer/junit.h"

#include <cstdio>
#include <set>
#include <sstream>

namespace memledger::analyzer {

namespace {

bool touches(const Violation& v, int64_t image) {
  if (v.image_id && *v.image_id == image) return true;
  for (const auto& s : v.sites)
    if (s.image_id == image) return true;
  return false;
}

// The failure body for the violations of one image (or all of them when image is nullopt).
void describe(const std::vector<const Violation*>& vs, std::optional<int64_t> image, JUnitCase& c) {
  std::ostringstream text;
  std::string message;
  for (const Violation* v : vs) {
    if (!message.empty()) message += "; ";
    message += v->rule + ": " + v->message;
    text << v->rule << ": " << v->message << "\n";
    for (const auto& s : v->sites) {
      if (image && s.image_id != *image) continue;
      bool peak = v->rule.starts_with("max-peak");
      text << "  " << (peak ? s.peak_bytes : s.leak_bytes) << " bytes in " << (peak ? s.peak_count : s.leak_count)
           << " blocks (" << s.kind << (peak || s.leak_kinds.empty() ? "" : ", " + s.leak_kinds) << ")\n";
      for (const auto& f : s.stack) text << "    " << frameLine(f) << "\n";
    }
  }
  c.failed = !vs.empty();
  c.failure_message = message;
  c.failure_text = text.str();
}

}  // namespace

std::string escapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += '?';
        else
          out += ch;
    }
  }
  return out;
}

std::string junitXml(const std::string& suiteName, const std::vector<JUnitCase>& cases) {
  size_t failures = 0;
  double time = 0;
  for (const auto& c : cases) {
    failures += c.failed ? 1 : 0;
    time += c.time_s;
  }
  std::ostringstream o;
  char t[64];
  std::snprintf(t, sizeof t, "%.3f", time);
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"memledger\" tests=\"" << cases.size() << "\" failures=\"" << failures
    << "\" errors=\"0\" time=\"" << t << "\">\n";
  o << "  <testsuite name=\"" << escapeXml(suiteName) << "\" tests=\"" << cases.size() << "\" failures=\""
    << failures << "\" errors=\"0\" skipped=\"0\" time=\"" << t << "\">\n";
  for (const auto& c : cases) {
    std::snprintf(t, sizeof t, "%.3f", c.time_s);
    o << "    <testcase classname=\"" << escapeXml(c.classname) << "\" name=\"" << escapeXml(c.name) << "\" time=\""
      << t << "\"";
    if (!c.failed && c.system_out.empty()) {
      o << "/>\n";
      continue;
    }
    o << ">\n";
    if (c.failed)
      o << "      <failure type=\"memledger\" message=\"" << escapeXml(c.failure_message) << "\">"
        << escapeXml(c.failure_text) << "</failure>\n";
    if (!c.system_out.empty()) o << "      <system-out>" << escapeXml(c.system_out) << "</system-out>\n";
    o << "    </testcase>\n";
  }
  o << "  </testsuite>\n</testsuites>\n";
  return o.str();
}

std::vector<JUnitCase> junitCasesPerProcess(const CheckResult& r) {
  std::vector<JUnitCase> cases;
  std::set<const Violation*> attributed;
  for (const auto& p : r.processes) {
    JUnitCase c;
    c.classname = "memledger.process";
    c.name = p.command.empty() ? "pid " + std::to_string(p.pid) : p.command;
    if (p.end_ns) c.time_s = static_cast<double>(*p.end_ns - p.start_ns) / 1e9;
    std::vector<const Violation*> mine;
    for (const auto& v : r.violations)
      if (touches(v, p.image_id)) {
        mine.push_back(&v);
        attributed.insert(&v);
      }
    describe(mine, p.image_id, c);
    std::ostringstream out;
    out << "pid " << p.pid << ", ";
    if (p.ended_by == std::optional<std::string>("exit"))
      out << "exited with status " << p.exit_code.value_or(0);
    else if (p.ended_by == std::optional<std::string>("signal"))
      out << "killed by signal " << p.signal.value_or(0);
    else
      out << "ended by " << p.ended_by.value_or("unknown");
    out << ", heap peak " << p.peak_heap_bytes << " bytes\n";
    c.system_out = out.str();
    cases.push_back(std::move(c));
  }
  std::vector<const Violation*> rest;
  for (const auto& v : r.violations)
    if (!attributed.count(&v)) rest.push_back(&v);
  if (!rest.empty()) {
    JUnitCase c;
    c.classname = "memledger";
    c.name = "memledger check";
    describe(rest, std::nullopt, c);
    cases.push_back(std::move(c));
  }
  return cases;
}

JUnitCase junitCaseFor(const CheckResult& r, const std::string& classname, const std::string& name) {
  JUnitCase c;
  c.classname = classname;
  c.name = name;
  for (const auto& p : r.processes)
    if (p.end_ns) c.time_s = std::max(c.time_s, static_cast<double>(*p.end_ns - p.start_ns) / 1e9);
  std::vector<const Violation*> all;
  for (const auto& v : r.violations) all.push_back(&v);
  describe(all, std::nullopt, c);
  return c;
}

}  // namespace memledger::analyzer
