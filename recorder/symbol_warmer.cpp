#include "symbol_warmer.h"

#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "tsc_clock.h"

namespace memledger::recorder {
namespace {

constexpr uint64_t kMinBatchEveryNs = 50'000'000;  // between two batches
constexpr uint64_t kPollEveryNs = 10'000'000;      // between two looks for new ips
constexpr uint64_t kReadCostFactor = 20;           // reading costs the loop at most 1/20

// The calling thread only gets a CPU (and the disk) nothing else wants: the traced program and
// the recorder's loop keep theirs. SCHED_IDLE cannot be undone without privileges, which is why
// the end's lookups run on another thread (symbolizer.h: a starved holder is taken over).
void lowerOwnPriority() {
  sched_param param{};
  param.sched_priority = 0;
  if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &param) != 0)
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
#ifdef SYS_ioprio_set
  constexpr int kWhoProcess = 1, kClassIdle = 3, kClassShift = 13;  // linux/ioprio.h
  syscall(SYS_ioprio_set, kWhoProcess, 0, kClassIdle << kClassShift);
#endif
}

// The newest ips.id (0: none yet); -1 when the file cannot be read.
int64_t newestIp(sqlite3* db) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT max(id) FROM ips", -1, &st, nullptr) != SQLITE_OK) return -1;
  int64_t id = -1;
  if (sqlite3_step(st) == SQLITE_ROW) id = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return id;
}

}  // namespace

struct SymbolWarmer::State {
  std::shared_ptr<SymbolSource> source;
  std::mutex mu;
  std::condition_variable changed;
  std::unique_ptr<SymbolizeJob> pending;  // handed over, not taken yet
  bool busy = false;                      // a batch is being looked up
  bool exited = false;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> batches{0}, prefetched{0};

  void run(bool idlePriority) {
    if (idlePriority) lowerOwnPriority();
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      changed.wait(lock, [this] { return stop.load() || pending != nullptr; });
      if (stop.load()) break;
      std::unique_ptr<SymbolizeJob> job = std::move(pending);
      busy = true;
      lock.unlock();
      try {
        job->warm(*source, stop, prefetched);
      } catch (...) {
        // Warming is an optimization: the final job looks up whatever is missing.
      }
      job.reset();
      lock.lock();
      busy = false;
      changed.notify_all();
    }
    exited = true;
    changed.notify_all();
  }
};

SymbolWarmer::SymbolWarmer(std::shared_ptr<SymbolSource> source, bool idlePriority)
    : state_(std::make_shared<State>()) {
  state_->source = std::move(source);
  try {
    thread_ = std::thread([state = state_, idlePriority] { state->run(idlePriority); });
  } catch (...) {
    stopped_ = true;  // no thread: no warm-up
  }
}

SymbolWarmer::~SymbolWarmer() {
  stop();
  if (!thread_.joinable()) return;
  std::unique_lock<std::mutex> lock(state_->mu);
  const bool exited = state_->changed.wait_for(lock, std::chrono::milliseconds(200), [this] { return state_->exited; });
  lock.unlock();
  if (exited) thread_.join();
  else thread_.detach();  // it holds the state and the source; the process may end under it
}

void SymbolWarmer::stop() {
  stopped_ = true;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
    state_->pending.reset();
  }
  state_->changed.notify_all();
}

void SymbolWarmer::drain() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->changed.wait(lock, [this] {
    return state_->exited || (!state_->busy && state_->pending == nullptr);
  });
}

void SymbolWarmer::catchUp(sqlite3* db) {
  drain();
  nextFeedNs_ = 0;
  tick(db, monotonicNs());
  drain();
}

void SymbolWarmer::tick(sqlite3* db, uint64_t nowNs) {
  if (stopped_ || nowNs < nextFeedNs_) return;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->busy || state_->pending) return;  // still on the previous batch
  }
  const uint64_t started = monotonicNs();
  const int64_t newest = newestIp(db);
  if (newest <= lastIp_) {
    nextFeedNs_ = nowNs + kPollEveryNs;
    return;
  }
  auto job = std::make_unique<SymbolizeJob>();
  std::string error;
  if (!job->read(db, &error, lastIp_)) {
    stop();  // the file cannot be read: the final job will report it
    return;
  }
  lastIp_ = job->lastIp();
  const uint64_t cost = monotonicNs() - started;
  nextFeedNs_ = nowNs + std::max(kMinBatchEveryNs, kReadCostFactor * cost);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->pending = std::move(job);
  }
  ++state_->batches;
  state_->changed.notify_all();
}

uint64_t SymbolWarmer::batches() const { return state_->batches.load(); }
uint64_t SymbolWarmer::prefetched() const { return state_->prefetched.load(); }

std::vector<SymbolFrame> ComparingSource::symbolize(const std::string& modulePath, uint64_t address) {
  std::vector<SymbolFrame> got = subject_.symbolize(modulePath, address);
  std::vector<SymbolFrame> expected = reference_->symbolize(modulePath, address);
  ++compared_;
  auto same = [](const SymbolFrame& a, const SymbolFrame& b) {
    return a.function == b.function && a.file == b.file && a.line == b.line;
  };
  if (!std::equal(got.begin(), got.end(), expected.begin(), expected.end(), same)) {
    if (differ_++ < 5)
      std::fprintf(stderr, "memledger: symbolize check: %s+0x%llx differs from a cold lookup\n",
                   modulePath.c_str(), static_cast<unsigned long long>(address));
  }
  return got;
}

std::string ComparingSource::buildId(const std::string& modulePath) {
  std::string got = subject_.buildId(modulePath);
  ++compared_;
  if (got != reference_->buildId(modulePath) && differ_++ < 5)
    std::fprintf(stderr, "memledger: symbolize check: build id of %s differs\n", modulePath.c_str());
  return got;
}

}  // namespace memledger::recorder
