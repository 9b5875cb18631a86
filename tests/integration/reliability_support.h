// Helpers the reliability tests add to harness.h: a recorder run we can signal while it runs
// (Ctrl-C, kill -9), direct reads of the recording's tables (processes, meta) where the exact
// stored facts matter, and exact leak amounts by the innermost frame of a site.
#pragma once

#include <sqlite3.h>

#include <fstream>
#include <optional>
#include <thread>

#include "harness.h"

namespace memledger::reltest {

using memledger::test::json;
using memledger::test::RunResult;

inline std::string relSample(const std::string& name) { return memledger::test::sample(name); }

// ---------------------------------------------------------------------------------------------
// Reading the recording itself (read-only), for facts the JSON report does not carry.

using Row = std::map<std::string, std::optional<std::string>>;

inline std::vector<Row> query(const std::string& recording, const std::string& sql) {
  std::string db = memledger::test::plainRecording(recording);
  sqlite3* handle = nullptr;
  if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string why = handle ? sqlite3_errmsg(handle) : "out of memory";
    sqlite3_close(handle);
    throw std::runtime_error("cannot open " + db + ": " + why);
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(handle, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    std::string why = sqlite3_errmsg(handle);
    sqlite3_close(handle);
    throw std::runtime_error("query failed on " + db + ": " + sql + ": " + why);
  }
  std::vector<Row> rows;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    Row row;
    for (int i = 0; i < sqlite3_column_count(stmt); i++) {
      const unsigned char* text = sqlite3_column_text(stmt, i);
      row[sqlite3_column_name(stmt, i)] =
          text ? std::optional<std::string>(reinterpret_cast<const char*>(text)) : std::nullopt;
    }
    rows.push_back(std::move(row));
  }
  std::string why = rc == SQLITE_DONE ? "" : sqlite3_errmsg(handle);
  sqlite3_finalize(stmt);
  sqlite3_close(handle);
  if (rc != SQLITE_DONE) throw std::runtime_error("query failed on " + db + ": " + sql + ": " + why);
  return rows;
}

inline int64_t num(const std::optional<std::string>& v, int64_t orNull = -1) {
  return v ? std::stoll(*v) : orNull;
}

// One process image as stored in `processes`.
struct Image {
  int64_t id = 0, pid = 0, ppid = 0;
  std::optional<int64_t> parent;
  std::string command;
  std::optional<std::string> endedBy;
  std::optional<int64_t> exitCode, signal;
  bool forked = false;
};

inline std::vector<Image> images(const std::string& db) {
  std::vector<Image> out;
  for (auto& r : query(db, "SELECT id, pid, ppid, parent_id, command, ended_by, exit_code, signal, forked "
                           "FROM processes ORDER BY id")) {
    Image im;
    im.id = num(r["id"]);
    im.pid = num(r["pid"]);
    im.ppid = num(r["ppid"]);
    if (r["parent_id"]) im.parent = num(r["parent_id"]);
    im.command = r["command"].value_or("");
    im.endedBy = r["ended_by"];
    if (r["exit_code"]) im.exitCode = num(r["exit_code"]);
    if (r["signal"]) im.signal = num(r["signal"]);
    im.forked = num(r["forked"], 0) != 0;
    out.push_back(std::move(im));
  }
  return out;
}

inline std::string describe(const std::vector<Image>& ims) {
  std::ostringstream text;
  for (const auto& im : ims) {
    text << "  image " << im.id << " pid " << im.pid << " ppid " << im.ppid << " parent "
         << (im.parent ? std::to_string(*im.parent) : "-") << " forked " << im.forked << " ended_by "
         << im.endedBy.value_or("-") << " exit " << (im.exitCode ? std::to_string(*im.exitCode) : "-")
         << " signal " << (im.signal ? std::to_string(*im.signal) : "-") << " '" << im.command << "'\n";
  }
  return text.str();
}

inline std::optional<std::string> meta(const std::string& db, const std::string& key) {
  auto rows = query(db, "SELECT value FROM meta WHERE key = '" + key + "'");
  if (rows.empty()) return std::nullopt;
  return rows[0]["value"];
}

// ---------------------------------------------------------------------------------------------
// Exact amounts of the report's sites whose innermost frame is `function` (optionally of one pid).

struct Amount {
  int64_t count = 0, bytes = 0;
  size_t sites = 0;
  bool operator==(const Amount&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Amount& a) {
  return os << a.count << " blocks, " << a.bytes << " bytes in " << a.sites << " sites";
}

inline Amount at(const json& sites, std::string_view function, std::optional<int64_t> pid = {}) {
  Amount a;
  if (!sites.is_array()) return a;
  for (const auto& site : sites) {
    const json& stack = site.value("stack", json::array());
    if (!stack.is_array() || stack.empty() || !memledger::test::frameIs(stack[0], function)) continue;
    if (pid && site.value("pid", int64_t{0}) != *pid) continue;
    a.count += site.value("count", int64_t{0});
    a.bytes += site.value("bytes", int64_t{0});
    a.sites++;
  }
  return a;
}

inline Amount leaksAt(const json& report, std::string_view function, std::optional<int64_t> pid = {}) {
  return at(report["leaks"]["sites"], function, pid);
}

inline std::string leakDump(const json& report) {
  return "leak sites:\n" + memledger::test::describeSites(report["leaks"]["sites"]);
}

// ---------------------------------------------------------------------------------------------
// A command running in its own process group, which the test can signal while it runs.

class Spawned {
 public:
  explicit Spawned(const std::vector<std::string>& argv,
                   const std::vector<std::pair<std::string, std::string>>& env = {}) {
    signal(SIGPIPE, SIG_IGN);
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) throw std::runtime_error("pipe failed");
    std::vector<std::string> args = argv;
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    // Built before fork: the child only calls async-signal-safe functions.
    memledger::test::RunOptions options;
    options.env = env;
    std::vector<std::string> envStrings = memledger::test::detail::childEnvironment(options);
    std::vector<char*> envp;
    for (auto& e : envStrings) envp.push_back(e.data());
    envp.push_back(nullptr);
    started_ = std::chrono::steady_clock::now();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      setpgid(0, 0);
      signal(SIGPIPE, SIG_DFL);
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      execve(cargs[0], cargs.data(), envp.data());
      _exit(127);
    }
    setpgid(pid_, pid_);
    close(out[1]);
    close(err[1]);
    outFd_ = out[0];
    errFd_ = err[0];
  }
  ~Spawned() {
    if (!reaped_) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (outFd_ >= 0) close(outFd_);
    if (errFd_ >= 0) close(errFd_);
  }
  Spawned(const Spawned&) = delete;
  Spawned& operator=(const Spawned&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& out() const { return result_.out; }
  const std::string& err() const { return result_.err; }

  // Reads until stdout contains `needle`; false on EOF or timeout.
  bool waitForOutput(const std::string& needle, double timeoutSeconds) {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(timeoutSeconds));
    while (result_.out.find(needle) == std::string::npos) {
      if (outFd_ < 0 && errFd_ < 0) return false;
      if (!pump(deadline)) return false;
    }
    return true;
  }

  // Reads until both pipes reach EOF (every process holding them ended), then reaps the command.
  // On timeout the whole group is killed and timedOut is set.
  RunResult finish(double timeoutSeconds) {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(timeoutSeconds));
    while (outFd_ >= 0 || errFd_ >= 0) {
      if (!pump(deadline)) {
        result_.timedOut = true;
        kill(-pid_, SIGKILL);
        break;
      }
    }
    int wstatus = 0;
    while (waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (WIFEXITED(wstatus)) {
      result_.status = WEXITSTATUS(wstatus);
    } else if (WIFSIGNALED(wstatus)) {
      result_.signaled = true;
      result_.signal = WTERMSIG(wstatus);
      result_.status = 128 + result_.signal;
    }
    return result_;
  }

 private:
  // One poll round; false when the deadline passed.
  bool pump(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd fds[2];
    int n = 0;
    if (outFd_ >= 0) fds[n++] = {outFd_, POLLIN, 0};
    if (errFd_ >= 0) fds[n++] = {errFd_, POLLIN, 0};
    if (poll(fds, n, static_cast<int>(std::min<long long>(left.count(), 200))) <= 0) return true;
    for (int i = 0; i < n; i++) {
      if (!fds[i].revents) continue;
      char buf[65536];
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      bool isOut = fds[i].fd == outFd_;
      if (r > 0) {
        (isOut ? result_.out : result_.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        int& fd = isOut ? outFd_ : errFd_;
        close(fd);
        fd = -1;
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  int outFd_ = -1, errFd_ = -1;
  bool reaped_ = false;
  RunResult result_;
  std::chrono::steady_clock::time_point started_;
};

// The program's own stderr: what `memledger record` printed minus memledger's own lines (which
// all start with "memledger: ").
inline std::string programErr(const std::string& err) {
  std::string kept, line;
  std::istringstream in(err);
  while (std::getline(in, line))
    if (line.rfind("memledger: ", 0) != 0) kept += line + "\n";
  return kept;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Waits up to `seconds` for a file to exist (a daemon or orphan that outlives its recorder).
inline bool waitForFile(const std::string& path, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(seconds));
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace memledger::reltest
