#include "analyzer/sarif.h"

#include <cctype>
#include <cstdio>
#include <functional>

#include "analyzer/diff.h"
#include "analyzer/python_sites.h"

namespace memledger::analyzer {

namespace {

struct RuleInfo {
  const char* id;
  const char* text;
};
constexpr RuleInfo kRules[] = {
    {"max-leaked-bytes", "Leaked bytes exceed the limit"},
    {"max-leaks", "Leaked blocks exceed the limit"},
    {"max-peak", "Peak memory exceeds the limit"},
    {"max-peak-growth", "Peak memory grew more than allowed over the baseline"},
    {"max-new-leak-sites", "New leak sites compared with the baseline"},
    {"program-failed", "The checked program failed (non-zero exit or signal)"},
};

int ruleIndex(const std::string& id) {
  for (size_t i = 0; i < std::size(kRules); ++i)
    if (id == kRules[i].id) return static_cast<int>(i);
  return -1;
}

nlohmann::json physical(const Frame& f, const std::string& srcRoot) {
  nlohmann::json art;
  std::string root = srcRoot;
  if (!root.empty() && root.back() != '/') root += '/';
  if (!root.empty() && f.file->starts_with(root)) {
    art = {{"uri", pathToUri(f.file->substr(root.size()))}, {"uriBaseId", "SRCROOT"}};
  } else if (!f.file->empty() && f.file->front() == '/') {
    art = {{"uri", "file://" + pathToUri(*f.file)}};
  } else {
    art = {{"uri", pathToUri(*f.file)}};
  }
  nlohmann::json loc = {{"artifactLocation", art}};
  if (f.line && *f.line > 0) loc["region"] = {{"startLine", *f.line}};
  return loc;
}

nlohmann::json frameLocation(const Frame& f, const std::string& srcRoot) {
  nlohmann::json loc = nlohmann::json::object();
  if (f.file) loc["physicalLocation"] = physical(f, srcRoot);
  loc["logicalLocations"] = nlohmann::json::array({{{"fullyQualifiedName", unknownFrameName(f)},
                                                    {"kind", "function"}}});
  loc["message"] = {{"text", frameLine(f)}};
  return loc;
}

nlohmann::json result(const std::string& checkName, const Violation& v, const Site* site,
                      const std::string& srcRoot) {
  std::string text = v.message + " (" + checkName + ")";
  nlohmann::json r = {{"ruleId", v.rule}, {"ruleIndex", ruleIndex(v.rule)}, {"level", "error"}};
  if (site) {
    bool peak = v.rule.starts_with("max-peak");
    int64_t bytes = peak ? site->peak_bytes : site->leak_bytes;
    int64_t count = peak ? site->peak_count : site->leak_count;
    // Named by the frame the report names it by: a Python site by its Python line, not by the
    // interpreter's allocator inside it.
    const Frame* named = siteFrame(site->stack);
    std::string where = named ? frameLine(*named) : site->stack.empty() ? "??" : frameLine(site->stack.front());
    std::string kinds = peak || site->leak_kinds.empty() ? "" : ", " + site->leak_kinds;  // leak kinds
    text = std::to_string(bytes) + " bytes in " + std::to_string(count) + " blocks (" + site->kind + kinds + ") from " +
           where + ": " + text;
    const Frame* located = pythonSiteFrame(site->stack);
    for (const Frame& f : site->stack)
      if (!located && f.file) located = &f;
    if (located) r["locations"] = nlohmann::json::array({{{"physicalLocation", physical(*located, srcRoot)}}});
    nlohmann::json frames = nlohmann::json::array();
    for (const Frame& f : site->stack) {
      nlohmann::json fr = {{"location", frameLocation(f, srcRoot)}};
      if (f.module) fr["module"] = *f.module;
      frames.push_back(std::move(fr));
    }
    r["stacks"] = nlohmann::json::array({{{"message", {{"text", "allocation stack"}}}, {"frames", frames}}});
    char fp[32];
    std::snprintf(fp, sizeof fp, "%016zx", std::hash<std::string>{}(siteKey(site->stack) + "|" + site->kind));
    r["partialFingerprints"] = {{"memledgerSite/v1", fp}};
  }
  r["message"] = {{"text", text}};
  return r;
}

}  // namespace

std::string pathToUri(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

nlohmann::json sarifLog(const std::vector<SarifInput>& checks, const std::string& srcRoot,
                        const std::string& toolVersion) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& rule : kRules)
    rules.push_back({{"id", rule.id}, {"name", rule.id}, {"shortDescription", {{"text", rule.text}}},
                     {"defaultConfiguration", {{"level", "error"}}}});
  nlohmann::json results = nlohmann::json::array();
  for (const auto& c : checks) {
    for (const auto& v : c.result->violations) {
      if (v.sites.empty())
        results.push_back(result(c.name, v, nullptr, srcRoot));
      for (const auto& s : v.sites) results.push_back(result(c.name, v, &s, srcRoot));
    }
  }
  nlohmann::json run = {
      {"tool", {{"driver", {{"name", "memledger"}, {"version", toolVersion},
                            {"rules", rules}}}}},
      {"results", results}};
  if (!srcRoot.empty()) {
    std::string root = srcRoot.back() == '/' ? srcRoot : srcRoot + "/";
    run["originalUriBaseIds"] = {{"SRCROOT", {{"uri", "file://" + pathToUri(root)}}}};
  }
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", nlohmann::json::array({run})}};
}

}  // namespace memledger::analyzer
