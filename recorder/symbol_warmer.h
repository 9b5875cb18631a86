// Symbolization ahead of the end. While the program runs, the recorder's loop now and then hands
// the ips recorded since the last time (a SymbolizeJob read from the file) to a background thread
// running at the lowest CPU and I/O priority (SCHED_IDLE: it runs on a core nothing else wants),
// which looks them up into the SymbolSource's cache (SymbolizeJob::warm). What dominates the end
// of a recording otherwise - opening each module and its separate debug file, decompressing its
// DWARF (libc's: ~80 ms), indexing its symbols and compile units - is then paid while the program
// runs, and only for modules that appear in stacks; the final job (SymbolizeJob::compute on the
// same source) finds most answers cached and only looks up the ips recorded since the last batch.
//
// Best effort: a batch that cannot be read is skipped, a lookup left undone is done by the final
// job, whose answers are the same either way (the source answers each (module, address) alike
// whichever thread asks first: see symbolizer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "symbolize_driver.h"

struct sqlite3;

namespace memledger::recorder {

class SymbolWarmer {
 public:
  // idlePriority false keeps the thread at normal priority (MEMLEDGER_SYMBOLIZE_CHECK: catchUp()
  // must not wait on idle CPU a loaded machine never has).
  explicit SymbolWarmer(std::shared_ptr<SymbolSource> source, bool idlePriority = true);
  // stop(), then waits for the thread to end; one still busy after 200 ms (a lookup at SCHED_IDLE
  // on a saturated machine) is detached to finish on its own (it owns what it uses) rather than
  // holding up the recorder's exit.
  ~SymbolWarmer();
  SymbolWarmer(const SymbolWarmer&) = delete;
  SymbolWarmer& operator=(const SymbolWarmer&) = delete;

  // From the recorder's loop, on the thread that owns `db`: when the thread has finished the
  // previous batch and enough time has passed (at least 50 ms, and 20 times what the last read
  // took, so reading costs the loop under 5 %), reads the ips added since the last batch and hands
  // them over. The first batch goes as soon as any ip exists (libc, the program).
  void tick(sqlite3* db, uint64_t nowNs);
  // Waits for the batch in progress, hands over every ip not handed over yet and waits for that
  // too (MEMLEDGER_SYMBOLIZE_CHECK: every answer then comes from the warm-up, whatever CPU it got).
  void catchUp(sqlite3* db);
  // The thread ends after the lookup in progress; later ticks do nothing. Idempotent.
  void stop();

  uint64_t batches() const;     // batches handed over
  uint64_t prefetched() const;  // ips the source answered ahead of time (or had cached already)

 private:
  struct State;
  void drain();
  std::shared_ptr<State> state_;
  std::thread thread_;
  int64_t lastIp_ = 0;
  uint64_t nextFeedNs_ = 0;
  bool stopped_ = false;
};

// For MEMLEDGER_SYMBOLIZE_CHECK=1 (a self-test, like MEMLEDGER_UNWIND_CHECK): answers from
// `subject` (the warmed source) and asks `reference` (a fresh, cold one) the same, counting the
// lookups and build ids whose answers differ.
class ComparingSource final : public SymbolSource {
 public:
  ComparingSource(SymbolSource& subject, std::unique_ptr<SymbolSource> reference)
      : subject_(subject), reference_(std::move(reference)) {}
  std::vector<SymbolFrame> symbolize(const std::string& modulePath, uint64_t address) override;
  std::string buildId(const std::string& modulePath) override;
  uint64_t compared() const { return compared_; }
  uint64_t differ() const { return differ_; }

 private:
  SymbolSource& subject_;
  std::unique_ptr<SymbolSource> reference_;
  uint64_t compared_ = 0, differ_ = 0;
};

}  // namespace memledger::recorder
