// One site per piece of code across processes (analyzer/site_merge.h says what "the same code"
// is and why).
#include "analyzer/site_merge.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "analyzer/sql.h"
#include "analyzer/suppressions.h"

namespace memledger::analyzer::detail {

SiteIdentity::SiteIdentity(const Recording& rec)
    : rec_(rec), ips_(std::make_unique<StackIps>(rec.db(), rec.info())) {}

SiteIdentity::~SiteIdentity() = default;

const std::string& SiteIdentity::ipKey(uint32_t ipId) {
  auto found = ipKeys_.find(ipId);
  if (found != ipKeys_.end()) return found->second;
  std::string key;
  {
    if (!ipStmt_)
      ipStmt_ = std::make_unique<Statement>(
          rec_, "SELECT i.address, m.path, m.bias FROM ips i LEFT JOIN modules m ON m.id = i.module_id WHERE i.id = ?");
    Statement& q = *ipStmt_;
    q.reset();
    q.bind(1, static_cast<int64_t>(ipId));
    if (q.step()) {
      if (!q.isNull(1)) {
        // Module paths are long and repeat in every frame: a short index stands for each.
        auto [it, added] = modules_.emplace(q.text(1), modules_.size());
        char buf[64];
        std::snprintf(buf, sizeof buf, "m%zu+%llx", it->second,
                      static_cast<unsigned long long>(q.i64(0) - q.i64(2)));
        key = buf;
      } else {
        if (!framesStmt_)
          framesStmt_ = std::make_unique<Statement>(rec_, "SELECT function, file, line FROM frames WHERE ip_id = ? ORDER BY depth");
        Statement& f = *framesStmt_;
        f.reset();
        f.bind(1, static_cast<int64_t>(ipId));
        while (f.step()) key += "f" + f.text(0) + "|" + f.text(1) + "|" + std::to_string(f.i64(2)) + "/";
        if (key.empty()) key = "a" + std::to_string(q.i64(0));
      }
    }
  }
  return ipKeys_.emplace(ipId, std::move(key)).first->second;
}

std::string SiteIdentity::key(int64_t stackId, const std::string& kind) {
  std::string out = kind;
  for (uint32_t ip : ips_->of(stackId)) out += ";" + ipKey(ip);
  return out;
}

bool severalProcesses(const Recording& rec, const Filter& filter) {
  if (filter.pid || filter.by_process) return false;
  Statement q(rec, "SELECT count(DISTINCT pid) FROM processes");
  return q.step() && q.i64(0) > 1;
}

namespace {

void addPart(std::vector<ProcessAmount>& parts, int64_t pid, int64_t count, int64_t bytes) {
  for (ProcessAmount& p : parts)
    if (p.pid == pid) {
      p.count += count;
      p.bytes += bytes;
      return;
    }
  parts.push_back({pid, count, bytes});
}

void sortParts(std::vector<ProcessAmount>& parts) {
  std::sort(parts.begin(), parts.end(), [](const ProcessAmount& a, const ProcessAmount& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.count != b.count) return a.count > b.count;
    return a.pid < b.pid;
  });
}

}  // namespace

std::vector<SiteAmount> mergeAcrossProcesses(const Recording& rec, std::vector<SiteAmount> sites) {
  if (sites.size() < 2) {
    for (SiteAmount& s : sites)
      if (s.processes.empty()) s.processes.push_back({s.pid, s.count, s.bytes});
    return sites;
  }
  SiteIdentity identity(rec);
  std::vector<SiteAmount> out;
  std::vector<int64_t> largest;  // bytes of the part whose stack id the merged site carries
  std::unordered_map<std::string, size_t> slot;
  for (SiteAmount& s : sites) {
    std::vector<ProcessAmount> parts = std::move(s.processes);
    if (parts.empty()) parts.push_back({s.pid, s.count, s.bytes});
    auto [it, added] = slot.emplace(identity.key(s.stack_id, s.kind), out.size());
    if (added) {
      s.processes.clear();
      for (const ProcessAmount& p : parts) addPart(s.processes, p.pid, p.count, p.bytes);
      largest.push_back(s.bytes);
      out.push_back(std::move(s));
      continue;
    }
    SiteAmount& m = out[it->second];
    for (const ProcessAmount& p : parts) addPart(m.processes, p.pid, p.count, p.bytes);
    m.count += s.count;
    m.bytes += s.bytes;
    m.python_owned = m.python_owned && s.python_owned;
    for (int k = 0; k < kLeakKindSlots; ++k) {  // leak kinds
      m.leak_kinds[k].count += s.leak_kinds[k].count;
      m.leak_kinds[k].bytes += s.leak_kinds[k].bytes;
    }
    if (s.bytes > largest[it->second]) {
      largest[it->second] = s.bytes;
      m.stack_id = s.stack_id;
      m.pid = s.pid;
      m.image_id = s.image_id;
      if (!s.stack.empty()) m.stack = std::move(s.stack);
    }
  }
  for (SiteAmount& m : out) {
    sortParts(m.processes);
    m.pid = m.processes.front().pid;
  }
  return out;
}

std::vector<Site> mergeSiteRows(const Recording& rec, std::vector<Site> sites, std::vector<int64_t>* processes) {
  std::vector<Site> out;
  std::vector<std::vector<int64_t>> pids;
  SiteIdentity identity(rec);
  std::unordered_map<std::string, size_t> slot;
  for (Site& s : sites) {
    auto [it, added] = slot.emplace(identity.key(s.stack_id, s.kind), out.size());
    if (added) {
      pids.push_back({s.pid});
      out.push_back(std::move(s));
      continue;
    }
    Site& m = out[it->second];
    if (std::find(pids[it->second].begin(), pids[it->second].end(), s.pid) == pids[it->second].end())
      pids[it->second].push_back(s.pid);
    if (s.alloc_bytes > m.alloc_bytes) {
      m.stack_id = s.stack_id;
      m.image_id = s.image_id;
      m.pid = s.pid;
      if (!s.stack.empty()) m.stack = std::move(s.stack);
    }
    int64_t* sums[] = {&m.alloc_count, &m.alloc_bytes, &m.free_count, &m.freed_bytes, &m.leak_count,
                       &m.leak_bytes, &m.peak_count, &m.peak_bytes, &m.temp_count, &m.temp_bytes,
                       &m.realloc_count, &m.same_size_count, &m.lifetime_ns_sum};
    const int64_t adds[] = {s.alloc_count, s.alloc_bytes, s.free_count, s.freed_bytes, s.leak_count,
                            s.leak_bytes, s.peak_count, s.peak_bytes, s.temp_count, s.temp_bytes,
                            s.realloc_count, s.same_size_count, s.lifetime_ns_sum};
    if (s.alloc_count) m.min_size = m.alloc_count ? std::min(m.min_size, s.min_size) : s.min_size;
    for (size_t i = 0; i < std::size(adds); ++i) *sums[i] += adds[i];
    // Maxima are per process: blocks of two processes are never alive in one heap.
    m.max_live_count = std::max(m.max_live_count, s.max_live_count);
    m.max_live_bytes = std::max(m.max_live_bytes, s.max_live_bytes);
    m.max_realloc_chain = std::max(m.max_realloc_chain, s.max_realloc_chain);
    m.max_size = std::max(m.max_size, s.max_size);
  }
  if (processes) {
    processes->clear();
    for (const auto& p : pids) processes->push_back(static_cast<int64_t>(p.size()));
  }
  return out;
}

void classifyOrigins(const Recording& rec, std::vector<SiteAmount>& sites) {
  // By the frames' addresses in the recording's cache: the frames of s.stack (rec.stack()).
  std::unordered_map<const Frame*, FrameOrigin> known;
  std::vector<const Frame*> frames;
  std::vector<FrameOrigin> origins;
  for (SiteAmount& s : sites) {
    rec.stackFrames(s.stack_id, &frames);
    origins.clear();
    for (const Frame* f : frames) {
      auto [it, added] = known.try_emplace(f);
      if (added) it->second = frameOrigin(*f);
      origins.push_back(it->second);
    }
    auto c = runtimeClassOf(origins, s.kind);
    if (!c) continue;
    s.origin = c->origin;
    s.origin_reason = c->reason;
  }
}

}  // namespace memledger::analyzer::detail
