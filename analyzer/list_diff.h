// B − A of what a front end lists for one recording beside another: the leaks by site, the
// allocation sizes by bucket, and the headline numbers of the two runs. Sites are matched as
// `memledger diff` matches them (siteKey(): function and file per frame, no addresses, no lines),
// so two builds of one program compare. The GUI's Leaks, Sizes and Summary show these in "B − A".
//
// The lists compared are the ones given, which a front end may have cut to their largest sites
// (Leaks::sites after Filter::top, a size bucket's top sites). A site that only one side lists
// while the other side's list was cut may be there below its cut: when its amount is within that
// cut (no more than the other list's smallest entry) nothing is known of a change and it is left
// out (counted in `uncertain`); above it, the site changed by at least that much and is listed
// with the unknown side counted 0 (`listed_a`/`listed_b` false).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer/diff.h"
#include "analyzer/series_set.h"
#include "analyzer/size_histogram.h"

namespace memledger::analyzer {

struct SiteChange {
  std::string key;   // siteKey() of the stack
  std::string kind;  // the memory kind ("malloc", ...)
  Stack stack;       // B's when B lists it, else A's
  DiffStatus status = DiffStatus::Same;  // New: only B has it; Gone: only A (see listed_*)
  int64_t count_a = 0, bytes_a = 0, count_b = 0, bytes_b = 0;
  // Whether the side's list holds the site; a side that was cut may hold it below its cut (then
  // the status is Changed, not New or Gone: its amount there is unknown, counted 0).
  bool listed_a = false, listed_b = false;
  int64_t deltaBytes() const { return bytes_b - bytes_a; }
  int64_t deltaCount() const { return count_b - count_a; }
};

struct ListChanges {
  int64_t count_a = 0, bytes_a = 0, count_b = 0, bytes_b = 0;  // the lists' totals (over every site)
  bool cut_a = false, cut_b = false;  // a side's list held only its largest sites
  size_t sites_a = 0, sites_b = 0;    // sites with anything, before any cut
  size_t uncertain = 0;               // sites listed on one side only, within the other's cut
  std::vector<SiteChange> sites;      // |Δ bytes| descending, then |Δ count|, then key; unchanged left out
};

// Two leak lists (Leaks::sites, e.g. of one time range in A and in B).
ListChanges diffLeaks(const Leaks& a, const Leaks& b);

struct SizeBucketChange {
  uint64_t from = 0, to = 0;  // as SizeBucket
  int64_t count_a = 0, bytes_a = 0, count_b = 0, bytes_b = 0;
  ListChanges sites;  // the bucket's listed top sites of each side, matched (|Δ count| first)
};

// Every bucket either histogram has, size ascending.
std::vector<SizeBucketChange> diffSizes(const SizeHistogram& a, const SizeHistogram& b);

// One headline number of both runs (Summary's table in B − A).
struct HeadlineChange {
  std::string name;     // "Duration", "Allocations", "heap peak", ...
  std::string unit;     // "ns", "bytes" or "count"
  int64_t a = 0, b = 0;
  bool in_a = true, in_b = true;  // a series only one run has (a device): absent on the other side
};

// Duration, processes, allocations and their bytes, temporaries, leaks (count and bytes), and
// the exact peak of every series (heap, mmap, rss, devices, pools) of either run.
std::vector<HeadlineChange> compareHeadlines(const Report& a, const std::vector<NamedSeries>& seriesA, const Report& b,
                                             const std::vector<NamedSeries>& seriesB);

}  // namespace memledger::analyzer
