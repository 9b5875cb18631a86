#include "session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "compress.h"
#include "db_writer.h"
#include "end_times.h"
#include "launch.h"
#include "proc_sample.h"
#include "recording.h"
#include "ring_reader.h"
#include "symbol_warmer.h"
#include "symbolize_driver.h"
#include "tsc_clock.h"

namespace memledger::recorder {
namespace {

uint64_t cpuNs(const timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(tv.tv_usec) * 1000ull;
}

constexpr size_t kDrainPerRound = 1 << 16;       // records per ring per round: no ring starves
constexpr uint64_t kRssEveryNs = 10'000'000;     // statm per image
constexpr uint64_t kAnonEveryNs = 10'000'000;    // status RssAnon: a counter, as cheap as statm
constexpr uint64_t kDaemonNoticeNs = 500'000'000;

std::string isoNow() {
  time_t t = time(nullptr);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int pidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// Whether any child (an orphaned descendant, as subreaper) is still alive; leaves them unreaped.
bool hasChildren() {
  siginfo_t info{};
  if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;  // ECHILD
  return true;  // alive, or exited and about to be reaped through SIGCHLD
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Tells writers the recorder is alive, from its own thread: a slow round of the event loop (a
// large SQLite batch on an oversubscribed machine) must not look like a dead recorder, or the
// writers would detach and the recording would lose the rest of the run.
class HeartbeatThread {
 public:
  HeartbeatThread() : thread_([this] { loop(); }) {}
  ~HeartbeatThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void add(RingReader* r) {
    std::lock_guard<std::mutex> lock(mu_);
    rings_.push_back(r);
  }
  void remove(RingReader* r) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(rings_, r);
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      uint64_t now = monotonicNs();
      for (RingReader* r : rings_) r->heartbeat(now);
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<RingReader*> rings_;
  std::thread thread_;  // last: starts once the members above exist
};

struct Tracked {
  int64_t id;
  uint32_t pid;
  ImageRecorder* img;
  std::unique_ptr<RingReader> ring;
  int pidfd = -1;
  bool dead = false;
  uint64_t nextRss = 0, nextAnon = 0, nextAliveCheck = 0;
};

class Session {
 public:
  Session(const SessionOptions& opt, DbWriter& db, Recording& rec, ControlSocket& ctl, int sigfd)
      : opt_(opt), db_(db), rec_(rec), ctl_(ctl), sigfd_(sigfd) {}
  ~Session() {
    for (Tracked& t : tracked_) {
      heartbeat_.remove(t.ring.get());
      if (t.pidfd >= 0) ::close(t.pidfd);
    }
  }

  int run(pid_t child);
  bool anyRegistered() const { return registered_ > 0; }
  // Called once, when the last running image has been drained and is about to be closed (its
  // sites written): the recording's ips are all in the file by then, unless more processes come.
  void beforeLastClose(std::function<void()> f) { beforeLastClose_ = std::move(f); }
  // Called at the end of every round of the loop (after the batch commit check), with its time.
  void everyRound(std::function<void(uint64_t)> f) { everyRound_ = std::move(f); }
  uint64_t lost() const { return lost_; }

 private:
  void acceptAll();
  void registerImage(Registration reg);
  void onSignals();
  void reap();
  bool drainRound(uint64_t now);
  void closeDead(uint64_t now);
  void close(size_t i, uint64_t now, bool byExec);
  Tracked* byPid(uint32_t pid) {
    for (Tracked& t : tracked_)
      if (t.pid == pid) return &t;
    return nullptr;
  }

  const SessionOptions& opt_;
  DbWriter& db_;
  Recording& rec_;
  ControlSocket& ctl_;
  int sigfd_;
  pid_t child_ = -1;
  bool childDone_ = false;
  int childStatus_ = 0;
  bool stop_ = false;
  size_t registered_ = 0;
  uint64_t lost_ = 0;
  std::vector<Tracked> tracked_;
  std::vector<pollfd> pfds_;
  HeartbeatThread heartbeat_;
  std::function<void()> beforeLastClose_;
  std::function<void(uint64_t)> everyRound_;
};

void Session::acceptAll() {
  while (auto reg = ctl_.accept()) registerImage(std::move(*reg));
}

void Session::registerImage(Registration reg) {
  wire::Hello h = reg.hello;
  ImageStart s;
  s.pid = h.pid;
  s.ppid = h.ppid;
  s.forked = h.forked != 0;
  s.command = reg.command;
  s.exe = reg.exe;
  s.start_ns = h.start_ns;
  s.orphaned = s.forked && s.ppid == static_cast<uint32_t>(::getpid());
  std::string err;
  std::unique_ptr<RingReader> ring = RingReader::map(std::move(reg), &err, opt_.leakScan);
  if (!ring) {
    std::fprintf(stderr, "memledger: warning: rejected a registration from pid %u: %s\n", h.pid,
                 err.c_str());
    return;
  }
  uint64_t now = monotonicNs();
  if (!s.forked) {
    // The same pid with a fresh image: it exec'd, and the old image's writers are gone.
    for (size_t i = 0; i < tracked_.size(); ++i)
      if (tracked_[i].pid == s.pid) {
        close(i, now, true);
        break;
      }
  } else if (Tracked* parent = byPid(s.ppid)) {
    // The child may use stacks its parent sent before the fork: have them interned first.
    parent->ring->drain(*parent->img, SIZE_MAX);
  }
  ImageRecorder& img = rec_.openImage(s);
  Tracked t;
  t.id = img.id();
  t.pid = s.pid;
  t.img = &img;
  t.ring = std::move(ring);
  t.pidfd = pidfdOpen(static_cast<pid_t>(s.pid));
  if (t.pidfd < 0) t.dead = !processAlive(s.pid);  // gone before we looked
  t.ring->heartbeat(now);
  // Leak kinds (docs/leak-kinds.md): a LeakScan record is answered while it is drained, with the
  // image's live set exactly as the records before it left it.
  RingReader* ringPtr = t.ring.get();
  ImageRecorder* imgPtr = &img;
  uint32_t pid = s.pid;
  bool scan = opt_.leakScan;
  img.setLeakScanHook([ringPtr, imgPtr, pid, scan](const Decoded& r) {
    bool ok = false;
    EndTimer timer("leak scan");
    if (scan) ok = imgPtr->runLeakScan(pid, r);
    ringPtr->answerScan(ok);
  });
  heartbeat_.add(t.ring.get());
  tracked_.push_back(std::move(t));
  ++registered_;
}

void Session::reap() {
  int status;
  pid_t pid;
  // As subreaper we also reap orphaned descendants: their status is all we learn of them.
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (!WIFEXITED(status) && !WIFSIGNALED(status)) continue;
    if (pid == child_) {
      childDone_ = true;
      childStatus_ = status;
    }
    rec_.noteWaitStatus(static_cast<uint32_t>(pid), status);
  }
}

void Session::onSignals() {
  signalfd_siginfo si;
  while (::read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) {
      reap();
    } else if (!childDone_) {
      // Like a shell: a terminal's signal already reached the program's process group; one sent
      // to the recorder alone (kill) is passed on. The program decides what it means.
      if (si.ssi_code != SI_KERNEL) ::kill(child_, sig);
    } else {
      stop_ = true;  // only processes the program left behind are running: stop recording them
    }
  }
}

bool Session::drainRound(uint64_t now) {
  bool busy = false;
  for (Tracked& t : tracked_) {
    size_t n = t.ring->drain(*t.img, kDrainPerRound);
    if (n >= kDrainPerRound) busy = true;
    t.ring->heartbeat(now);
    if (now >= t.nextRss) {
      t.nextRss = now + kRssEveryNs;
      uint64_t rss = 0;
      if (readRss(t.pid, &rss)) {
        std::optional<uint64_t> anon;
        uint64_t a = 0;
        if (now >= t.nextAnon && readAnon(t.pid, &a)) {
          anon = a;
          t.nextAnon = now + kAnonEveryNs;
        }
        t.img->sampleMemory(now, rss, anon, n < kDrainPerRound && t.ring->pending() == 0);
      }
    }
    if (t.pidfd < 0 && now >= t.nextAliveCheck) {
      t.nextAliveCheck = now + kRssEveryNs;
      if (!processAlive(t.pid)) t.dead = true;
    }
  }
  return busy;
}

void Session::close(size_t i, uint64_t now, bool byExec) {
  Tracked& t = tracked_[i];
  int status;
  // A dead process not reaped yet is a zombie whose status /proc still shows; its parent may
  // not be traced (or not report it), and only our own children reach our waitpid.
  if (!byExec && readZombieStatus(t.pid, &status)) rec_.noteWaitStatus(t.pid, status);
  t.ring->drainFinal(*t.img);
  lost_ += t.ring->lost();
  if (tracked_.size() == 1 && !byExec && beforeLastClose_) {
    beforeLastClose_();
    beforeLastClose_ = nullptr;
  }
  rec_.closeImage(t.id, now, t.ring->waitNs(), byExec);
  if (t.pidfd >= 0) ::close(t.pidfd);
  heartbeat_.remove(t.ring.get());
  tracked_.erase(tracked_.begin() + static_cast<long>(i));
}

void Session::closeDead(uint64_t now) {
  for (size_t i = tracked_.size(); i-- > 0;)
    if (tracked_[i].dead) close(i, now, false);
}

int Session::run(pid_t child) {
  child_ = child;
  bool busy = false;
  uint64_t childDoneAt = 0;
  bool noticed = false;
  while (true) {
    pfds_.clear();
    pfds_.push_back({ctl_.fd(), POLLIN, 0});
    pfds_.push_back({sigfd_, POLLIN, 0});
    for (Tracked& t : tracked_) pfds_.push_back({t.pidfd, POLLIN, 0});  // -1 is ignored by poll
    size_t trackedPolled = tracked_.size();
    int ready = ::poll(pfds_.data(), pfds_.size(), busy ? 0 : 1);
    if (ready > 0) {
      // Deaths first (the indices match tracked_ only until it changes).
      for (size_t i = 0; i < trackedPolled; ++i)
        if (pfds_[2 + i].revents & (POLLIN | POLLHUP | POLLERR)) tracked_[i].dead = true;
      if (pfds_[1].revents & POLLIN) onSignals();
    }
    // Every round, not only when poll said so: a registration must be in before records of
    // other images (a parent's ChildStatus) that were written after it are drained.
    acceptAll();
    uint64_t now = monotonicNs();
    busy = drainRound(now);
    closeDead(now);
    db_.maybeCommit(now);
    if (everyRound_) everyRound_(now);
    if (childDone_) {
      acceptAll();  // registrations sent just before the end
      closeDead(now);
      // Done when nothing registered runs and, following children, no descendant is left: as
      // subreaper every orphan of the tree is our child, so "no children" means none at all (a
      // daemon's middle process may not even have registered yet when the program exits).
      bool descendants = opt_.followChildren && hasChildren();
      if ((tracked_.empty() && !descendants) || stop_) break;
      if (!childDoneAt) childDoneAt = now;
      if (!noticed && now - childDoneAt > kDaemonNoticeNs) {
        noticed = true;
        std::fprintf(stderr,
                     "memledger: '%s' exited; still recording the processes it left running "
                     "(Ctrl-C or SIGTERM stops)\n",
                     opt_.argv[0].c_str());
      }
    }
  }
  // Stopped with processes still running: take what they have published so far.
  for (Tracked& t : tracked_) {
    t.ring->drain(*t.img, SIZE_MAX);
    lost_ += t.ring->lost();
    rec_.setWaitNs(t.id, t.ring->waitNs());
  }
  return exitCodeOf(childStatus_);
}

}  // namespace

int runSession(const SessionOptions& optIn) {
  SessionOptions opt = optIn;
  std::string err;
  std::unique_ptr<DbWriter> db = DbWriter::open(opt.output, &err);
  if (!db) {
    std::fprintf(stderr, "memledger: cannot write '%s': %s\n", opt.output.c_str(), err.c_str());
    return 2;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/memledger-XXXXXX";
  std::vector<char> dirBuf(tmpl.begin(), tmpl.end());
  dirBuf.push_back('\0');
  if (!::mkdtemp(dirBuf.data())) {  // mkdtemp makes it 0700
    std::fprintf(stderr, "memledger: cannot create a private directory in %s: %s\n",
                 tmp && *tmp ? tmp : "/tmp", std::strerror(errno));
    return 2;
  }
  std::string dir = dirBuf.data();
  std::unique_ptr<ControlSocket> ctl = ControlSocket::listen(dir, &err);
  if (!ctl) {
    std::fprintf(stderr, "memledger: %s\n", err.c_str());
    ::rmdir(dir.c_str());
    return 2;
  }
  auto cleanupDir = [&] {
    ctl.reset();
    ::unlink((dir + "/" + wire::kSocketName).c_str());
    ::rmdir(dir.c_str());
  };

  sigset_t mask, oldMask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, &oldMask);
  int sigfd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) {
    std::fprintf(stderr, "memledger: signalfd: %s\n", std::strerror(errno));
    cleanupDir();
    return 2;
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  opt.recording.origin_ns = monotonicNs();
  Recording rec(*db, opt.recording);
  std::string command;
  for (const std::string& a : opt.argv) command += (command.empty() ? "" : " ") + a;
  db->setMeta("memledger_version", opt.version);
  db->setMeta("command", command);
  db->setMeta("start_wall", isoNow());
  db->setMeta("start_monotonic_ns", std::to_string(opt.recording.origin_ns));
  db->setMeta("bucket_ns", std::to_string(opt.recording.bucket_ns));
  db->setMeta("complete", "0");
  db->commit();

  TscClock::instance();  // its first (tsc, ns) pair before the program writes any record
  pid_t child = spawnProgram(opt.programPath,
                             opt.argv, programEnvironment(opt.preload, dir, opt.followChildren));
  if (child < 0) {
    int e = errno;
    std::fprintf(stderr, "memledger: cannot run '%s': %s\n", opt.argv[0].c_str(), std::strerror(e));
    ::close(sigfd);
    cleanupDir();
    db->close();
    return e == ENOENT ? 127 : 126;
  }

  // Symbolization's lookups run on a second thread while the last image is closed (its sites and
  // leaks written: 0.8 s on torch_mlp, beside 0.35 s of lookups); the ips of any process that
  // registered after that are symbolized at the end. Before that, while the program runs, the
  // warmer looks up the ips recorded so far at idle priority (symbol_warmer.h), so the end mostly
  // finds its answers cached. MEMLEDGER_SYMBOL_WARM=0 turns the warm-up off;
  // MEMLEDGER_SYMBOLIZE_CHECK=1 has it look up every ip first (at normal priority), then compares
  // every answer with a cold lookup and prints the counts (a self-test).
  const char* warmEnv = std::getenv("MEMLEDGER_SYMBOL_WARM");
  const char* checkEnv = std::getenv("MEMLEDGER_SYMBOLIZE_CHECK");
  const bool check = checkEnv != nullptr && *checkEnv != '\0' && std::strcmp(checkEnv, "0") != 0;
  std::shared_ptr<SymbolSource> source;
  std::unique_ptr<ComparingSource> checked;
  std::unique_ptr<SymbolWarmer> warmer;
  if (opt.symbolize && !(warmEnv != nullptr && std::strcmp(warmEnv, "0") == 0)) {
    source = makeNativeSymbolSource();
    warmer = std::make_unique<SymbolWarmer>(source, !check);
  }
  SymbolizeJob symbols;
  std::thread symbolizer;
  struct JoinOnExit {
    std::thread& t;
    ~JoinOnExit() {
      if (t.joinable()) t.join();
    }
  } joinSymbolizer{symbolizer};
  bool symbolsStarted = false;
  auto startSymbols = [&] {
    symbolsStarted = true;
    if (warmer) {
      if (check && db->ok()) warmer->catchUp(db->handle());
      warmer->stop();  // ends after its lookup in progress; the job below takes over the source
    }
    if (!opt.symbolize || !db->ok()) return;
    if (!symbols.read(db->handle(), &err)) {
      std::fprintf(stderr, "memledger: warning: symbolization failed: %s\n", err.c_str());
      return;
    }
    if (!source) source = makeNativeSymbolSource();
    if (check) checked = std::make_unique<ComparingSource>(*source, makeNativeSymbolSource());
    SymbolSource* use = checked ? static_cast<SymbolSource*>(checked.get()) : source.get();
    symbolizer = std::thread([&symbols, use] { symbols.compute(*use); });
  };
  Session session(opt, *db, rec, *ctl, sigfd);
  session.beforeLastClose(startSymbols);
  if (warmer)
    session.everyRound([&](uint64_t now) {
      if (db->ok()) warmer->tick(db->handleAsIs(), now);
    });
  int code = session.run(child);
  // What draining cost this thread (drain, pair, aggregate, write; the last image's close
  // included, symbolization not): events per CPU-second of it is the rate the recorder keeps up
  // with when it has a core of its own (bench/: "drain capacity").
  rusage usage{};
  if (::getrusage(RUSAGE_THREAD, &usage) == 0)
    db->setMeta("recorder_cpu_ns", std::to_string(cpuNs(usage.ru_utime) + cpuNs(usage.ru_stime)));
  ::close(sigfd);
  cleanupDir();
  sigprocmask(SIG_SETMASK, &oldMask, nullptr);

  if (!symbolsStarted) startSymbols();
  {
    EndTimer timer("finish");
    rec.finish(monotonicNs(), session.lost());
  }
  if (EndTimer timer("symbols (wait, write)"); symbolizer.joinable()) {
    symbolizer.join();
    if (db->ok() && !symbols.write(db->handle(), nullptr, &err))
      std::fprintf(stderr, "memledger: warning: symbolization failed: %s\n", err.c_str());
    SymbolizeJob late;  // ips of processes that registered after the job read the file
    if (db->ok() && late.read(db->handle(), &err, symbols.lastIp()) && late.lastIp() > symbols.lastIp()) {
      late.compute(checked ? static_cast<SymbolSource&>(*checked) : *source);
      if (!late.write(db->handle(), nullptr, &err))
        std::fprintf(stderr, "memledger: warning: symbolization failed: %s\n", err.c_str());
    }
  }
  if (checked)
    std::fprintf(stderr, "memledger: symbolize check: %llu lookups compared, %llu ips warmed in %llu batches, %llu differ\n",
                 static_cast<unsigned long long>(checked->compared()),
                 static_cast<unsigned long long>(warmer ? warmer->prefetched() : 0),
                 static_cast<unsigned long long>(warmer ? warmer->batches() : 0),
                 static_cast<unsigned long long>(checked->differ()));
  if (!session.anyRegistered() && opt.warnIfNothingRegisters)
    std::fprintf(stderr, "memledger: warning: no process registered with the recorder; nothing was recorded\n");
  {
    EndTimer timer("indexes, close");
    db->applyFinishSchema();
    db->setMeta("complete", "1");
    db->close();
  }
  if (!db->ok()) {
    std::fprintf(stderr, "memledger: error writing '%s': %s\n", opt.output.c_str(), db->error().c_str());
    return code ? code : 2;
  }
  if (opt.compress) {
    EndTimer timer("compress");
    CompressStats cs;
    if (!compressRecording(opt.output, &cs, &err))
      std::fprintf(stderr, "memledger: warning: could not compress '%s' (it stays plain SQLite): %s\n",
                   opt.output.c_str(), err.c_str());
    else if (std::getenv("MEMLEDGER_COMPRESS_STATS"))
      std::fprintf(stderr, "memledger: compressed %llu (vacuumed %llu) -> %llu bytes (zstd level %d, %d workers) in %.3f s\n",
                   static_cast<unsigned long long>(cs.plainBytes), static_cast<unsigned long long>(cs.vacuumedBytes),
                   static_cast<unsigned long long>(cs.compressedBytes), cs.level.level, cs.level.workers, cs.seconds);
  }
  std::fprintf(stderr, "memledger: recording written to %s\n", opt.output.c_str());
  if (opt.exitWhenDone) {
    std::fflush(nullptr);
    ::_exit(code);
  }
  return code;
}

}  // namespace memledger::recorder
