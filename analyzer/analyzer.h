// The analyzer: every question asked of a memledger recording (schemas/memledger.sql), answered
// as plain value structs. No Qt, no printing: cli/ and gui/ only present what is computed here.
//
// A Recording is opened read-only; the common questions (leaks, peak, totals, processes,
// suggestions) read only the aggregate tables (sites, the memory curve, processes); phase top
// sites read the per-site activity (`site_buckets`, version 2 `site_timeline`; version 1 files:
// the allocation rows). Raw `allocations` rows (by default only the leaks) are read only for a
// time filter on leaks or a heap layout. Plain and zstd-compressed files open alike.
//
// Conventions: times are nanoseconds since the recording started; sizes are bytes; stacks list
// the innermost frame first; `pid` is the OS pid of the process image a site belongs to.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/stack.h"
#include "schemas/site_counters.h"

struct sqlite3;

namespace memledger::analyzer {

// ---------------------------------------------------------------------------------------------
// Opening a recording

// Why a file could not be read as a recording. what() is the whole one-line message to print:
//   NotFound      "memledger: cannot open 'F': No such file or directory" (or the errno text)
//   NotARecording "memledger: 'F' is not a memledger recording"   (empty, random, foreign SQLite)
//   NewerVersion  "memledger: 'F' was written by a newer memledger (schema N > 1)"
//   Corrupt       "memledger: 'F' is truncated or corrupt"
enum class ErrorKind { NotFound, NotARecording, NewerVersion, Corrupt };

class RecordingError : public std::runtime_error {
 public:
  RecordingError(ErrorKind kind, std::string path, const std::string& message)
      : std::runtime_error(message), kind_(kind), path_(std::move(path)) {}
  ErrorKind kind() const { return kind_; }
  const std::string& path() const { return path_; }

 private:
  ErrorKind kind_;
  std::string path_;
};

// A question given a QueryControl (below) that was cancelled while it ran.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("memledger: query cancelled") {}
};

// The schema version this analyzer reads (PRAGMA user_version); newer files are refused.
// Versions 1 to 3 are read too (see schemas/memledger.sql).
inline constexpr int kSchemaVersion = schema::kSchemaVersion;

// Facts about the run itself (the meta table).
struct RecordingInfo {
  std::string path;
  int schema_version = 0;
  bool complete = false;      // false: the recorder did not finish (killed); data may be partial
  int64_t duration_ns = 0;
  int64_t wait_ns = 0;        // total time programs waited for ring space
  int64_t lost_records = 0;
  int64_t recorder_cpu_ns = -1;  // the recorder's draining thread's CPU time; -1: not recorded
  int64_t bucket_ns = 0;      // timeline bucket width
  int64_t fold_threshold_ns = 0;
  // Which blocks have an `allocations` row: "leaks" (only blocks live at the end of their
  // process), "long_lived" (also freed blocks that lived >= fold_threshold_ns) or "all".
  std::string allocation_rows = "all";
  std::string version;        // memledger_version that wrote it
  std::string command;
  std::string start_wall;
  std::optional<int64_t> peak_image;  // image id of the largest heap peak
};

struct OpenOptions {
  // A compressed recording (recorder/compress.h) is decompressed into memory up to this size,
  // beyond it into a temporary file under $TMPDIR, removed when the recording is closed.
  uint64_t max_in_memory = uint64_t(512) << 20;
};

namespace detail {
struct PythonSnapshot;  // analyzer/sql.h
class ActivitySites;    // analyzer/site_activity.h
class LeakedBlocks;     // analyzer/leaked_blocks.h
}

// A Recording may be used from several threads at once: its caches are locked and its SQLite
// connection is serialized (SQLITE_OPEN_FULLMUTEX), so the questions below can run concurrently
// on one recording (a GUI's worker threads). SQLite itself runs one step at a time for all of
// them (a step is a row, or a whole aggregate); decoding, sorting and the caches run in
// parallel. Opening, moving and destroying it are not concurrent with anything else.
class Recording {
 public:
  // Throws RecordingError. Opens with SQLITE_OPEN_READONLY and checks meta + user_version.
  // Plain SQLite files and compressed ones (zstd) alike.
  static Recording open(const std::string& path);
  static Recording open(const std::string& path, const OpenOptions& options);
  ~Recording();
  Recording(Recording&&) noexcept;
  Recording& operator=(Recording&&) noexcept;
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  const RecordingInfo& info() const;
  sqlite3* db() const;  // for analyzer internals and tests; read-only handle

  // Frames of a stack id (its stack tree nodes' ip ids → ips → frames/modules), cached per
  // recording.
  // An unknown stack id gives an empty stack.
  const Stack& stack(int64_t stack_id) const;
  // The same frames without a copy: pointers into the per-ip cache, which lives as long as the
  // recording. For passes over every site (exports): 600k cached stacks of 50 frames were GBs.
  void stackFrames(int64_t stack_id, std::vector<const Frame*>* out) const;
  // The frames of stack(), copied and not kept: for passes that read every site's stack once
  // (check's suppressions, diff's keys), where caching 550,000 stacks took more than 6 GB.
  Stack uncachedStack(int64_t stack_id) const;
  // At most `max_frames` frames copied by stack() over this recording's life (0, the default: no
  // limit); past it stack() throws FilterError. The CLI sets one so that a --top that would not
  // fit in memory (a PyTorch run's 210,000 leak sites of ~55 frames) fails with a message.
  void limitStackFrames(size_t max_frames);
  // The OS pid of a process image id (0 when unknown).
  int64_t pidOf(int64_t image_id) const;
  // Python images' sites as of their interpreter's finalization (analyzer/python_leaks.cpp),
  // read once: every site question applies that leak rule.
  const detail::PythonSnapshot& pythonSnapshot() const;
  // Every site with its space, leaks and peak, keyed as the per-site activity names them
  // (analyzer/site_activity.h), made once: each range's peak, live set and chart needs it.
  const detail::ActivitySites& activitySites() const;
  // Every leaked block (allocation time, site, size, leak kind), read once: each time range's
  // leaks are summed from it (analyzer/leaked_blocks.h).
  const detail::LeakedBlocks& leakedBlocks() const;

 private:
  struct Impl;
  explicit Recording(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Filters shared by the focused views (leaks, peak sites, phases, suggestions).

struct Filter {
  std::optional<int64_t> pid = {};            // OS pid; all images with this pid
  std::optional<std::string> kind = {};       // site kind: malloc | new | mmap | custom | ...
  std::optional<int64_t> t_from_ns = {}, t_to_ns = {};  // inclusive time range (allocation time)
  std::optional<size_t> top = {};             // keep the first N sites of each list
  // false (default): a site is its code (the same module offsets per frame, analyzer/site_merge.cpp)
  // across every process, with per-process amounts; true: one site per process image, as stored.
  bool by_process = false;
};

// A Filter that cannot select anything a recording has: an unknown kind, a pid with no process,
// a time range outside the run. what() is the whole one-line message to print (exit 2), e.g.
//   "memledger: unknown kind 'foo' (known: malloc, new, mmap, custom)"
//   "memledger: no process with pid 1 in 'run.db'"
//   "memledger: time range 5 s to 9 s is outside the recording 'run.db' (0 to 1.20 s)"
class FilterError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The site kinds a recording can hold, in their stored order (the one list every check uses).
const std::vector<std::string>& knownKinds();
// Throws FilterError when `filter` names a kind, pid or time range the recording cannot have.
void validateFilter(const Recording& rec, const Filter& filter);

// ---------------------------------------------------------------------------------------------
// Results

// One account's exact peak (schemas/memledger.sql, `spaces`): an address space of one process, a
// pool of one process, or (image_id 0, pid 0) a space's simultaneous peak over every process alive
// at once. Version 1-4 files have only the heap and mmap of each process.
struct SpacePeak {
  std::string name;   // heap | mmap | device:N | pinned | managed | pool:NAME | custom
  std::string space;  // the address space it lives in ("" unknown: a pool whose memory was not seen)
  bool pool = false;
  std::string kind;   // its blocks' kind ("" for a space of several kinds)
  int64_t image_id = 0, pid = 0;
  int64_t account = 0;
  int64_t bytes = 0, time_ns = 0;  // exact peak (in use, for a pool) and when
  int64_t end_bytes = 0;           // live when the process ended
  int64_t reserved_bytes = 0;      // a pool's reserved size (0: not told)
  std::optional<int64_t> created_ns, destroyed_ns;
};

struct Process {
  int64_t image_id = 0;
  int64_t pid = 0;
  int64_t ppid = 0;
  std::optional<int64_t> parent_image;
  std::string command;
  std::optional<std::string> exe;
  std::optional<int64_t> exit_code;
  std::optional<int64_t> signal;
  std::optional<std::string> ended_by;  // exit | signal | exec | unknown; nullopt while running
  int64_t start_ns = 0;
  std::optional<int64_t> end_ns;
  bool forked = false;
  int64_t wait_ns = 0;
  int64_t peak_rss = 0;
  int64_t peak_heap_bytes = 0;
  int64_t peak_heap_ns = 0;
  int64_t peak_mmap_bytes = 0;
  int64_t peak_mmap_ns = 0;
  int64_t unknown_frees = 0;
  std::vector<SpacePeak> spaces;  // this process's own accounts (heap, mmap, devices, pools)
};

// One row of `sites` with its stack: the unit diff/export/check compare.
// Counters as schemas/memledger.sql documents them (schemas/site_counters.h); peak_* is what was
// live at the peak of the site's own account in its process.
struct Site {
  int64_t stack_id = 0;
  std::string kind;
  int64_t image_id = 0;
  int64_t pid = 0;
  int64_t account = 0;  // its process's account; `space` names it (heap, mmap, device:0, pool:NAME)
  std::string space;
#define MEMLEDGER_SITE_FIELD(name) int64_t name = 0;
  MEMLEDGER_SITE_COUNTERS(MEMLEDGER_SITE_FIELD)
#undef MEMLEDGER_SITE_FIELD
  Stack stack;
  std::string leak_kinds;  // leak kinds: set by check, the kinds its counted leaks have ("definite, indirect")
};

// One process's part of a site merged across processes.
struct ProcessAmount {
  int64_t pid = 0;
  int64_t count = 0;
  int64_t bytes = 0;
};

// Who a leaked block belongs to: the program, or the C runtime / an allocator that keeps it
// until exit by design (the classification `check`'s built-in suppressions use, suppressions.h).
inline constexpr const char* kOriginProgram = "program";
inline constexpr const char* kOriginRuntime = "runtime";
inline constexpr const char* kOriginAllocator = "allocator-internal";

// ---- leak kinds (analyzer/leak_kinds.cpp, docs/leak-kinds.md) ----
// memcheck's kinds of a leaked heap block, from the exit scan; kNotClassified: a heap block of a
// process that was not scanned (crash, _exit, exec, `--scan off`, a file older than version 6)
// or allocated after its scan. Indices of LeakKindAmounts.
enum LeakKindIndex : int { kDefinite = 0, kIndirect = 1, kPossible = 2, kReachable = 3, kNotClassified = 4 };
inline constexpr int kLeakKindSlots = 5;
const char* leakKindName(int index);  // "definite" | "indirect" | "possible" | "reachable" | "not_classified"
// Parses "definite,indirect,possible,reachable" (also "all"); false on an unknown name.
bool parseLeakKinds(const std::string& list, std::array<bool, kLeakKindSlots>* out, std::string* error);
struct KindAmount {
  int64_t count = 0;
  int64_t bytes = 0;
};
using LeakKindAmounts = std::array<KindAmount, kLeakKindSlots>;
// Per stored site (stack_id, kind, image_id): its leaked heap blocks per leak kind, not
// classified ones included (sites: their leak_count/leak_bytes); heap kinds only.
std::map<std::tuple<int64_t, std::string, int64_t>, LeakKindAmounts> leakKindsBySite(const Recording& rec);
// ---- end leak kinds ----

// A site reduced to what one question needs: how many, how much, of what, where.
struct SiteAmount {
  int64_t stack_id = 0;  // of the largest part when merged across processes
  std::string kind;
  int64_t pid = 0;       // of the largest part when merged across processes
  int64_t image_id = 0;  // the process image of `pid` (a pid may have several: exec)
  int64_t count = 0;
  int64_t bytes = 0;
  Stack stack;
  // Per pid, bytes descending; empty when the list was not merged (then: one process, `pid`).
  std::vector<ProcessAmount> processes;
  // Leaks only: kOriginProgram, kOriginRuntime or kOriginAllocator, and why (the built-in
  // suppression entry's reason) when it is not the program's.
  std::string origin = kOriginProgram;
  std::string origin_reason;
  LeakKindAmounts leak_kinds{};  // leaks only: the site's blocks per leak kind (heap kinds)
  // Leaks of a Python image only: its interpreter's finalization freed every one of these blocks,
  // so Python objects kept them (a global, a cache) rather than C code that lost them.
  bool python_owned = false;
};

struct Leaks {
  int64_t count = 0;  // over all processes (after pid/kind/time filters)
  int64_t bytes = 0;
  std::vector<SiteAmount> sites;  // grouped by stack and kind, bytes descending
  size_t site_count = 0;          // sites before the `top` cut
  // Python (schema 6): a CPython image's leaks are what was live when its interpreter started
  // finalizing (its own code had finished), as memray counts them; what finalization itself
  // did not free (blocks live at exit) is counted apart here. 0 processes: none was Python.
  int64_t python_processes = 0;
  int64_t finalization_left_count = 0, finalization_left_bytes = 0;
  // With a time filter: the Python processes' blocks were kept when their allocation's timeline
  // bucket (this wide) overlaps the range; 0 without one.
  int64_t python_bucket_ns = 0;
  // With a time filter on a file whose finalization snapshot keeps no allocation times (written
  // before python_finalize_sites.t_ns): these Python processes' leaks are blocks live at exit.
  int64_t python_exit_rule_processes = 0;
  // Blocks of kinds that live inside memory these totals already count (schemas/kinds.h,
  // insideCountedMemory: Python's objects inside pymalloc's arenas, which are mmap blocks): their
  // sites are listed with the others, their amounts are not in count and bytes, only here.
  int64_t pool_count = 0, pool_bytes = 0;
  size_t pool_site_count = 0;
  LeakKindAmounts kinds{};        // heap leaks per leak kind, over all sites (before the cut)
  bool scanned = false;           // some process of the recording had its exit scan
};

struct KindPeak {
  std::string kind;  // "heap" | "mmap"
  int64_t bytes = 0;
  int64_t time_ns = 0;
  int64_t pid = 0;
};

// The heap peak. Of a recording: the simultaneous peak, summed over the processes alive at once
// (what an OOM killer sees), scope "all processes"; with a pid filter, or a file older than
// version 5 (which kept only each process's own peak), the largest single process's, scope
// "process". `sites` lists only heap blocks (malloc/new) live at that instant.
struct Peak {
  int64_t bytes = 0;
  int64_t time_ns = 0;
  int64_t pid = 0;       // the process with the largest own heap peak (scope "process": that one)
  int64_t image_id = 0;
  std::string scope = "process";  // "all processes" | "process"
  std::vector<KindPeak> by_kind;  // heap, mmap: each its own peak, in the same scope
  std::vector<SpacePeak> spaces;  // every space's peak in the same scope (devices, pinned, ...)
  std::vector<SpacePeak> pools;   // every pool of every process: reserved vs in use at its peak
  // RSS against the heap of the same process: the process with the highest sampled RSS.
  int64_t rss_bytes = 0;          // that process's highest RSS sampled
  int64_t rss_pid = 0;
  int64_t rss_heap_bytes = 0;     // that process's own heap peak
  int64_t gap_bytes = 0;          // rss - rss_heap (may be negative when RSS was sampled coarsely)
  std::string gap_explanation;    // one sentence on what the gap is made of
  std::vector<SiteAmount> sites;  // live at the heap peak, bytes descending
};

// Every kind but pool blocks (custom, torch_block, pyobject: in use inside memory counted
// already, see Peak::pools), unless a kind filter asks for one.
struct KindTotal {
  std::string kind;
  int64_t allocations = 0, bytes = 0;
};
struct Totals {
  std::vector<KindTotal> by_kind;  // what the sums below add up, bytes descending
  int64_t allocations = 0;
  int64_t frees = 0;
  int64_t allocated_bytes = 0;
  int64_t freed_bytes = 0;
  int64_t temporary_count = 0;  // freed before the same thread allocated anything else
  int64_t temporary_bytes = 0;
};

struct Phase {
  std::string name;
  bool from_marker = false;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t peak_bytes = 0;
  int64_t peak_time_ns = 0;
  int64_t allocated_bytes = 0;
  int64_t freed_bytes = 0;
  std::vector<SiteAmount> top_sites;  // allocations made in the phase, by bytes
};

struct FragmentationPoint {
  int64_t t_ns = 0;
  double ratio = 0;          // 1 - heap / heap_resident, clamped to [0, 1]
  int64_t heap_bytes = 0;
  int64_t resident_bytes = 0;  // anon resident minus recorded anonymous mmaps
};

struct Fragmentation {
  std::optional<double> peak_ratio;  // at the heap peak's plateau; nullopt without samples
  int64_t peak_resident_bytes = 0;   // heap_resident where peak_ratio was taken
  int64_t peak_heap_bytes = 0;
  std::vector<FragmentationPoint> series;  // samples where some block was live
  // Samples taken while no block was live: a ratio of nothing (it would read 100%), so they are
  // not in `series`; counted here, with the time from which every later sample is one of them
  // (the program's end, typically, after it freed everything).
  int64_t nothing_live_samples = 0;
  std::optional<int64_t> nothing_live_from_ns;
};

// Live blocks and holes of an address range at one instant (from `allocations`). Only blocks
// with a row are seen: exact when every block has one (allocation_rows 'all') or at/after the end
// of the image (its live blocks are its leaks, which always have rows); `complete` says which.
struct LayoutBlock {
  uint64_t address = 0;
  uint64_t size = 0;
  int64_t stack_id = 0;
};
struct LayoutHole {
  uint64_t address = 0;
  uint64_t size = 0;
};
struct HeapLayout {
  uint64_t from = 0, to = 0;
  int64_t t_ns = 0;
  std::vector<LayoutBlock> blocks;  // address ascending
  std::vector<LayoutHole> holes;    // gaps between blocks inside [from, to)
  uint64_t live_bytes = 0;
  uint64_t free_bytes = 0;     // sum of holes
  uint64_t largest_hole = 0;
  double external_fragmentation = 0;  // 1 - largest_hole / free_bytes (0 when no holes)
  bool complete = false;  // false: blocks freed later (without a row) may be missing at t_ns
};

// Allocation patterns worth a change of code.
enum class PatternKind { ReallocGrowth, SameSizeChurn, ManySameSizeLive };
struct Pattern {
  PatternKind kind;
  Site site;
  nlohmann::json evidence;  // the numbers that triggered it
};

struct Suggestion {
  std::string kind;      // fix_leak | reuse_buffer | reserve_capacity | object_pool | free_earlier | allocator_tuning
                         // | cuda_alloc_in_loop | large_pinned (analyzer/suggestions_cuda.cpp)
  std::string severity;  // high | medium | low
  std::string message;   // names the function, e.g. "`grow_buffer` (growth.c:12) realloc'ed ..."
  Stack stack;           // empty for process-wide advice (allocator tuning)
  nlohmann::json evidence;  // object of numbers; a suggestion always has evidence
  std::string confidence = "medium";  // high | medium | low: how well the evidence supports it
  std::string confidence_reason{};    // one sentence: why that confidence
};

// A space's or pool's live bytes in one bucket, summed over the processes alive then.
struct SpaceValue {
  std::string name;  // device:0, pinned, managed, pool:NAME, custom
  int64_t bytes = 0, max = 0, min = 0;
};
struct TimelinePoint {
  int64_t t_ns = 0;
  int64_t heap_bytes = 0, heap_max = 0, heap_min = 0;
  int64_t mmap_bytes = 0;
  std::optional<int64_t> rss_bytes, anon_bytes;
  int64_t allocs = 0, frees = 0, alloc_bytes = 0;
  std::vector<SpaceValue> spaces;  // every other space and pool (version 5)
};

struct Marker {
  int64_t image_id = 0;
  int64_t t_ns = 0;
  std::string name;
};

struct Report {
  RecordingInfo recording;
  Leaks leaks;
  Peak peak;
  Totals totals;
  std::vector<Process> processes;
  std::vector<Phase> phases;
  Fragmentation fragmentation;
  std::vector<SiteAmount> temporaries;  // per site temp_count/temp_bytes, bytes descending
  // Without Filter::top, report() keeps every leak site, the 1000 largest peak sites and the
  // 100 largest temporaries sites (the long tails of a big program run to 10^5 sites).
  std::vector<Pattern> patterns;
  std::vector<Suggestion> suggestions;
  // With a filter: which numbers shown are not filtered by which part of it, one sentence each
  // ("the heap peak and RSS: not by kind or time (whole-run values)"). Empty without a filter.
  std::vector<std::string> unfiltered;
  Filter filter;  // what the report was asked for
  // Not part of the answer: leaks with at least their first kRuleLeakSites sites for the
  // suggestions' rules, so that leaks() runs once, not twice: made by reportFirstPart() when
  // Filter::top cut `leaks` shorter, else `leaks` itself lent by the caller of
  // reportSecondPart(), which lets go of it (none: the rules make their own).
  std::shared_ptr<const Leaks> rule_leaks;
};

// The leak sites the suggestions' rules read, largest first: every one worth a line is in them.
inline constexpr size_t kRuleLeakSites = 100;

// The sentences Report::unfiltered holds for `filter` (empty when it filters nothing): which
// numbers of `view` ("report", or a focused view: leaks, peak, phases, fragmentation, suggest)
// the filter does not apply to.
std::vector<std::string> unfilteredNumbers(const Filter& filter, const std::string& view = "report");

// ---------------------------------------------------------------------------------------------
// Questions. All throw RecordingError(Corrupt) when a query fails on a damaged file.

std::vector<Process> processes(const Recording& rec);
// Every account row: each process's spaces and pools, and (pid 0) the simultaneous peaks.
std::vector<SpacePeak> spacePeaks(const Recording& rec);
std::vector<Site> sites(const Recording& rec, const Filter& filter = {});  // alloc_bytes desc
Leaks leaks(const Recording& rec, const Filter& filter = {});
Peak peak(const Recording& rec, const Filter& filter = {});
Totals totals(const Recording& rec, const Filter& filter = {});
std::vector<SiteAmount> temporaries(const Recording& rec, const Filter& filter = {});
// The curve of one image, or (nullopt) of all images summed per bucket.
std::vector<TimelinePoint> timeline(const Recording& rec, std::optional<int64_t> image_id = {});
std::vector<Marker> markers(const Recording& rec);
std::vector<Phase> phases(const Recording& rec, const Filter& filter = {});
Fragmentation fragmentation(const Recording& rec, const Filter& filter = {});
HeapLayout heapLayout(const Recording& rec, int64_t image_id, uint64_t from, uint64_t to, int64_t t_ns);
std::vector<Pattern> patterns(const Recording& rec, const Filter& filter = {});
std::vector<Suggestion> suggestions(const Recording& rec, const Filter& filter = {});
// The same with leaks(rec, filter) already made: read when it holds its first kRuleLeakSites
// sites (or all of them), else made again.
std::vector<Suggestion> suggestions(const Recording& rec, const Filter& filter, const Leaks* known);
Report report(const Recording& rec, const Filter& filter = {});
// report() in two parts, for a front end that shows the first before the second is done (the
// GUI's Summary): the recording, leaks, peak, totals and processes; then, into the same Report,
// phases, fragmentation, temporaries, patterns and suggestions (those read the whole memory
// curve and every site's activity: most of a report's time on a long run).
Report reportFirstPart(const Recording& rec, const Filter& filter = {});
void reportSecondPart(const Recording& rec, Report& report);

// Progress and cancellation of the long questions, for a front end that runs them on a worker
// thread. Another thread calls cancel(); the question then throws Cancelled promptly (it checks
// between rows, and interrupts a statement running long). `progress` is called on the question's
// own thread with fractions of the whole question, increasing, the last one 1.0 when it
// returned. A control belongs to one question at a time.
struct QueryControl {
  std::atomic<bool> cancelled{false};
  std::function<void(double)> progress;  // may be empty
  void cancel() { cancelled.store(true, std::memory_order_relaxed); }
};
Report report(const Recording& rec, const Filter& filter, QueryControl& control);
Report reportFirstPart(const Recording& rec, const Filter& filter, QueryControl& control);
void reportSecondPart(const Recording& rec, Report& report, QueryControl& control);
std::vector<Site> sites(const Recording& rec, const Filter& filter, QueryControl& control);
Leaks leaks(const Recording& rec, const Filter& filter, QueryControl& control);
// What every time range of the recording reads, made now (each once per recording): the sites'
// activity (a range's peak, live set, charts, trees), the leaked blocks and the Python leak
// rule's timed snapshot (a range's leaks). For a front end that asks range after range (the
// GUI, on a worker after open): the first range then costs what the others do.
void prepareRanges(const Recording& rec);
std::vector<Phase> phases(const Recording& rec, const Filter& filter, QueryControl& control);
std::vector<TimelinePoint> timeline(const Recording& rec, std::optional<int64_t> image_id, QueryControl& control);

// ---------------------------------------------------------------------------------------------
// Presentation helpers shared by every front end.

// "function (file:line)", "?? (module)" and so on: one frame as one line.
std::string frameText(const Frame& frame);
// A frame's function, or for one without a symbol its module and offset ("libfoo.so+0x1a2b").
std::string unknownFrameName(const Frame& frame);
// A frame of the C++ standard library: code from its headers (/usr/include/c++/...: a vector's
// growth, a string's construction, the allocator) or its library (libstdc++.so, libc++.so).
bool isStandardLibraryFrame(const Frame& frame);
// The frame a one-line list names a site by: its innermost frame with a symbol that is not the C
// runtime's entry (__libc_start_call_main, _start, ...) nor the C++ standard library's (unless
// only those have a symbol), or, in a stripped program, the innermost frame as "?? (module)".
std::string siteText(const Stack& stack);
// siteText of each stack of one list, where two would read the same told apart by the first
// caller that differs: "ramp (three_phases.c:24) <- phase_two (three_phases.c:40)".
std::vector<std::string> distinctSiteTexts(const std::vector<const Stack*>& stacks);
// The first `top` of a site list for a one-line list, sites whose frames read the same (the same
// function, file and line in every frame, stackKey) added up: one line's calls through different
// return addresses are distinct sites, but would read as the same line repeated. Ordered by
// count (`by_count`) or bytes, as the list was.
std::vector<SiteAmount> sitesBySameFrames(std::span<const SiteAmount> sites, size_t top, bool by_count);
// A stable key for matching the same stack across two recordings (function/file/line, not ids).
std::string stackKey(const Stack& stack);
const char* patternName(PatternKind kind);  // realloc_growth | same_size_churn | many_same_size_live

// JSON (schemas/report.schema.json). Stacks are [{function, file, line, module}], innermost first.
nlohmann::json toJson(const Frame& frame);
nlohmann::json toJson(const Stack& stack);
nlohmann::json toJson(const Leaks& leaks);
nlohmann::json toJson(const Peak& peak);
nlohmann::json toJson(const Totals& totals);
nlohmann::json toJson(const std::vector<Process>& processes);
nlohmann::json toJson(const SpacePeak& space);
nlohmann::json toJson(const std::vector<Phase>& phases);
nlohmann::json toJson(const Fragmentation& fragmentation);
nlohmann::json toJson(const std::vector<Suggestion>& suggestions);
nlohmann::json toJson(const RecordingInfo& info);
nlohmann::json toJson(const Report& report);
// The filter a report or view was asked for, with unfilteredNumbers(filter, view); null when it
// filters nothing.
nlohmann::json toJson(const Filter& filter, const std::string& view = "report");
// The text of a JSON document. Strings from a recording (paths, command lines, symbols) are not
// always UTF-8: invalid bytes become U+FFFD instead of an exception (found by fuzzing).
inline std::string jsonText(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace memledger::analyzer
