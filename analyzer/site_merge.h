// Internal to the analyzer: one site per piece of code across processes.
//
// A stored site is a stack and a kind in one process image. A fork or exec loop runs the same
// code in every child, so the same leak is N stored sites with N stack ids. They are one site
// when their stacks are the same code: frame by frame the same module path and the same offset
// of the return address inside it (address - load bias: the same for a fork child and for the
// same binary exec'd again at another ASLR base). A frame no module covered is compared by its
// symbolized function/file/line, and without those by its raw address (a fork child keeps its
// parent's addresses).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer::detail {

class StackIps;
class Statement;

class SiteIdentity {
 public:
  explicit SiteIdentity(const Recording& rec);
  ~SiteIdentity();
  SiteIdentity(const SiteIdentity&) = delete;
  SiteIdentity& operator=(const SiteIdentity&) = delete;

  // The code identity of a site: its kind and its stack's frames as module offsets.
  std::string key(int64_t stack_id, const std::string& kind);

 private:
  const std::string& ipKey(uint32_t ip_id);
  const Recording& rec_;
  std::unique_ptr<StackIps> ips_;
  std::unique_ptr<Statement> ipStmt_, framesStmt_;
  std::unordered_map<uint32_t, std::string> ipKeys_;
  std::unordered_map<std::string, size_t> modules_;  // module path -> short index in keys
};

// Whether sites of the filter's selection can come from more than one process (more than one
// pid): when not, merging is the identity and costs nothing.
bool severalProcesses(const Recording& rec, const Filter& filter);

// One entry per site identity: counts and bytes summed, `processes` per pid (bytes descending),
// stack id, pid and stack of the largest part. Order: as first seen. Entries that are not merged
// still get their one-element `processes`.
std::vector<SiteAmount> mergeAcrossProcesses(const Recording& rec, std::vector<SiteAmount> sites);

// Sites as stored (one per image) merged the same way: counters summed, maxima and the minimum
// size over the parts; stack id and pid of the part that allocated the most. `processes` (may be
// null) receives the number of distinct pids of each merged site.
std::vector<Site> mergeSiteRows(const Recording& rec, std::vector<Site> sites, std::vector<int64_t>* processes);

// Leak kinds (leak_kinds.cpp): each site's SiteAmount::leak_kinds (unmerged sites, one image
// each) and the totals in leaks.kinds, from leak_kinds rows (version 6) under the filter's time
// window; heap blocks without a row are not classified.
void attachLeakKinds(const Recording& rec, const Filter& filter, Leaks& leaks);
// The same for a list cut from `all` (one process, nothing merged): each listed site's own, the
// totals over every row of `all`.
struct LeakRows;
void attachLeakKinds(const Recording& rec, const Filter& filter, Leaks& leaks, const LeakRows& all);

// The leak origins (SiteAmount::origin) of sites of `rec` whose stacks are attached, from the
// built-in suppressions' classification (analyzer/suppressions.cpp): each distinct frame is
// matched once (a list's 1000 stacks of ~55 frames share most of theirs).
void classifyOrigins(const Recording& rec, std::vector<SiteAmount>& sites);

}  // namespace memledger::analyzer::detail
