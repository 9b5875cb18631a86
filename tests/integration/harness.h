// Shared helpers for the integration tests: they run the real `memledger` CLI (build/bin) on real
// programs (build/samples, python3, sqlite3, g++) and read its JSON report. Header-only, so every
// tests/integration/*_test.cpp can include it without a library target.
//
//   auto rec = memledger::test::record(sample("leak_chains"));   // memledger record -o tmp/x.db
//   EXPECT_EQ(rec.program.status, 0);
//   auto report = memledger::test::reportJson(rec.db);            // memledger report --json
//   auto sites = memledger::test::sitesWith(report["leaks"]["sites"], "leak_malloc");
//
// Failures inside helpers throw std::runtime_error with the command and its stderr: GoogleTest
// reports an exception thrown from a test body as a failure of that test.
#pragma once

#include <fcntl.h>
#include <sqlite3.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <zstd.h>

#ifndef MEMLEDGER_BINARY_DIR
#error "MEMLEDGER_BINARY_DIR must be defined (tests/CMakeLists.txt does)"
#endif
#ifndef MEMLEDGER_SOURCE_DIR
#error "MEMLEDGER_SOURCE_DIR must be defined (tests/CMakeLists.txt does)"
#endif

namespace memledger::test {

using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Paths

inline std::string binaryDir() { return MEMLEDGER_BINARY_DIR; }
inline std::string sourceDir() { return MEMLEDGER_SOURCE_DIR; }
inline std::string memledgerBinary() { return binaryDir() + "/bin/memledger"; }
// build/samples/NAME (executables) or build/samples/libNAME.so (pass "libNAME.so").
inline std::string sample(const std::string& name) { return binaryDir() + "/samples/" + name; }

// ---------------------------------------------------------------------------------------------
// Temporary folders, removed with everything in them when the object goes away.

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "memledger-it-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// ---------------------------------------------------------------------------------------------
// Running a command

struct RunOptions {
  std::vector<std::pair<std::string, std::string>> env{};  // set (or override) in the child
  std::vector<std::string> unsetEnv{};                   // removed from the child's environment
  std::string stdinData{};                               // written to stdin, then EOF
  std::string cwd{};                                     // empty: the test's own folder
  int timeoutSeconds = 120;                              // then the whole process group is killed
};

struct RunResult {
  int status = -1;  // exit code, or 128+N for death by signal N (as a shell reports it)
  bool signaled = false;
  int signal = 0;
  bool timedOut = false;
  std::string out;
  std::string err;
  double seconds = 0;
};

inline std::string joinArgs(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& a : argv) {
    if (!text.empty()) text += ' ';
    text += a;
  }
  return text;
}

namespace detail {
inline void setCloexec(int fd) { fcntl(fd, F_SETFD, FD_CLOEXEC); }

inline std::vector<std::string> childEnvironment(const RunOptions& options) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    vars[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const auto& name : options.unsetEnv) vars.erase(name);
  for (const auto& [name, value] : options.env) vars[name] = value;
  std::vector<std::string> out;
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}
}  // namespace detail

// Runs argv[0] (looked up on PATH when it has no slash) with the given arguments, feeding
// stdinData and capturing stdout and stderr. Never throws for the program's own failure: a
// program that cannot be started gives status 127 and the reason on `err`.
inline RunResult run(const std::vector<std::string>& argv, const RunOptions& options = {}) {
  if (argv.empty()) throw std::runtime_error("run: empty command");
  // A child that exits before reading its stdin must not kill the test with SIGPIPE.
  static std::once_flag ignorePipe;
  std::call_once(ignorePipe, [] { signal(SIGPIPE, SIG_IGN); });

  int in[2], out[2], err[2];
  if (pipe(in) || pipe(out) || pipe(err)) throw std::runtime_error("pipe failed");
  for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) detail::setCloexec(fd);

  // Everything the child needs is built before fork: the child only calls async-signal-safe code.
  std::vector<std::string> envStrings = detail::childEnvironment(options);
  std::vector<char*> envp, args;
  for (auto& e : envStrings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argStrings = argv;
  for (auto& a : argStrings) args.push_back(a.data());
  args.push_back(nullptr);

  auto started = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so a timeout kills the program and everything it started
    signal(SIGPIPE, SIG_DFL);  // an ignored signal stays ignored across exec: undo ours
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(127);
    execvpe(args[0], args.data(), envp.data());
    const char* why = std::strerror(errno);
    (void)!write(2, "exec failed: ", 13);
    (void)!write(2, why, std::strlen(why));
    _exit(127);
  }
  setpgid(pid, pid);
  close(in[0]);
  close(out[1]);
  close(err[1]);

  RunResult result;
  size_t written = 0;
  int inFd = in[1];
  if (options.stdinData.empty()) {
    close(inFd);
    inFd = -1;
  } else {
    fcntl(inFd, F_SETFL, O_NONBLOCK);
  }
  int outFd = out[0], errFd = err[0];
  auto deadline = started + std::chrono::seconds(options.timeoutSeconds);
  while (outFd >= 0 || errFd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (outFd >= 0) fds[n++] = {outFd, POLLIN, 0};
    if (errFd >= 0) fds[n++] = {errFd, POLLIN, 0};
    if (inFd >= 0) fds[n++] = {inFd, POLLOUT, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timedOut = true;
      kill(-pid, SIGKILL);
      break;
    }
    int ready = poll(fds, n, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < n && ready > 0; i++) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == inFd) {
        ssize_t w = write(inFd, options.stdinData.data() + written, options.stdinData.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == options.stdinData.size()) {
          close(inFd);
          inFd = -1;
        }
        continue;
      }
      char buf[65536];
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      std::string& sink = fds[i].fd == outFd ? result.out : result.err;
      if (r > 0) {
        sink.append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        int& fd = fds[i].fd == outFd ? outFd : errFd;
        close(fd);
        fd = -1;
      }
    }
  }
  for (int fd : {inFd, outFd, errFd})
    if (fd >= 0) close(fd);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (WIFEXITED(wstatus)) {
    result.status = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    result.signaled = true;
    result.signal = WTERMSIG(wstatus);
    result.status = 128 + result.signal;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Recording with the real CLI

struct Recorded {
  std::shared_ptr<TempDir> dir;  // holds the database; removed with the last copy
  std::string db;                // <dir>/x.db
  RunResult program;             // `memledger record`'s stdout/stderr/status = the program's
};

// memledger record -o <tmp>/x.db -- PROGRAM ARGS...
inline Recorded record(const std::string& program, const std::vector<std::string>& args = {},
                       const RunOptions& options = {}) {
  Recorded rec;
  rec.dir = std::make_shared<TempDir>();
  rec.db = rec.dir->file("x.db");
  std::vector<std::string> argv = {memledgerBinary(), "record", "-o", rec.db, "--", program};
  argv.insert(argv.end(), args.begin(), args.end());
  rec.program = run(argv, options);
  if (rec.program.timedOut) throw std::runtime_error("timed out: " + joinArgs(argv));
  return rec;
}

// One recording per (program, args) for the whole test binary: several tests check different
// facts of the same run without recording it again. (Under ctest each test is its own process,
// so this only saves time when the binary runs all tests at once.)
inline const Recorded& recordOnce(const std::string& program, const std::vector<std::string>& args = {}) {
  static std::map<std::string, Recorded> cache;
  std::string key = program + '\0' + joinArgs(args);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, record(program, args)).first;
  return it->second;
}

// memledger report DB --json, parsed. Throws (failing the test) with memledger's stderr when it
// does not exit 0 or prints something that is not one JSON document.
inline json reportJson(const std::string& db, const std::vector<std::string>& extraArgs = {}) {
  std::vector<std::string> argv = {memledgerBinary(), "report", db, "--json"};
  argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
  RunResult r = run(argv);
  if (r.status != 0)
    throw std::runtime_error(joinArgs(argv) + " exited " + std::to_string(r.status) + ": " + r.err);
  try {
    return json::parse(r.out);
  } catch (const std::exception& e) {
    throw std::runtime_error(joinArgs(argv) + " printed invalid JSON (" + e.what() + "): " +
                             r.out.substr(0, 400));
  }
}

inline const json& reportOnce(const Recorded& rec) {
  static std::map<std::string, json> cache;
  auto it = cache.find(rec.db);
  if (it == cache.end()) it = cache.emplace(rec.db, reportJson(rec.db)).first;
  return it->second;
}

// ---------------------------------------------------------------------------------------------
// Finding sites by function name

// A frame "is" function `name` when its demangled name is exactly `name` (C) or `name(...)`
// (C++: demangled names carry their parameter list).
inline bool frameIs(const json& frame, std::string_view name) {
  if (!frame.is_object() || !frame.contains("function") || !frame["function"].is_string()) return false;
  const std::string& fn = frame["function"].get_ref<const std::string&>();
  if (fn == name) return true;
  return fn.size() > name.size() && fn.compare(0, name.size(), name) == 0 && fn[name.size()] == '(';
}

inline bool stackHas(const json& stack, std::string_view name) {
  if (!stack.is_array()) return false;
  for (const auto& frame : stack)
    if (frameIs(frame, name)) return true;
  return false;
}

// The innermost frame's function ("" when there is none or it is unknown).
inline std::string innermost(const json& site) {
  const json& stack = site.value("stack", json::array());
  if (!stack.is_array() || stack.empty() || !stack[0].contains("function") || !stack[0]["function"].is_string())
    return "";
  return stack[0]["function"].get<std::string>();
}

// Every site of `sites` (an array of {count, bytes, kind, stack, ...}) whose stack has `name`.
inline std::vector<json> sitesWith(const json& sites, std::string_view name) {
  std::vector<json> found;
  if (!sites.is_array()) return found;
  for (const auto& site : sites)
    if (stackHas(site.value("stack", json::array()), name)) found.push_back(site);
  return found;
}

// Sum of `field` ("count" or "bytes") over the sites whose stack has `name`.
inline int64_t sumWith(const json& sites, std::string_view name, const char* field) {
  int64_t sum = 0;
  for (const auto& site : sitesWith(sites, name)) sum += site.value(field, int64_t{0});
  return sum;
}

// One line per site, for failure messages: "3 x 3000 B malloc pid 12: leak_malloc < main < ...".
inline std::string describeSites(const json& sites, size_t maxFrames = 6) {
  std::ostringstream text;
  if (!sites.is_array()) return "(not an array: " + sites.dump().substr(0, 200) + ")";
  for (const auto& site : sites) {
    text << "  " << site.value("count", int64_t{-1}) << " x " << site.value("bytes", int64_t{-1}) << " B "
         << site.value("kind", std::string("?")) << " pid " << site.value("pid", int64_t{0}) << ": ";
    const json& stack = site.value("stack", json::array());
    for (size_t i = 0; i < stack.size() && i < maxFrames; i++) {
      if (i) text << " < ";
      const json& fn = stack[i].value("function", json());
      text << (fn.is_string() ? fn.get<std::string>() : std::string("??"));
    }
    text << '\n';
  }
  return text.str();
}

// The `processes` entries for which pred(process) is true.
template <typename Pred>
std::vector<json> processesWhere(const json& report, Pred pred) {
  std::vector<json> found;
  for (const auto& p : report.value("processes", json::array()))
    if (pred(p)) found.push_back(p);
  return found;
}

// ---------------------------------------------------------------------------------------------
// Compressed recordings: `record` compresses the finished file with zstd (recorder/compress.h).

inline std::string fileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline bool isCompressed(const std::string& path) {
  return fileBytes(path).rfind(std::string("\x28\xB5\x2F\xFD", 4), 0) == 0;
}

inline bool isPlainSqlite(const std::string& path) {
  return fileBytes(path).rfind(std::string("SQLite format 3\0", 16), 0) == 0;
}

// The plain SQLite file of a recording, for tests that read its tables directly: the file itself
// when it is not compressed, else a copy beside it (<db>.plain.db) decompressed with libzstd
// directly (not through memledger's reader, which other tests check against it).
inline std::string plainRecording(const std::string& db) {
  if (!isCompressed(db)) return db;
  std::string packed = fileBytes(db);
  unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > (1ull << 32))
    throw std::runtime_error("plainRecording: no usable zstd frame header in " + db);
  std::string plain(size, '\0');
  size_t got = ZSTD_decompress(plain.data(), plain.size(), packed.data(), packed.size());
  if (ZSTD_isError(got) || got != size) throw std::runtime_error("plainRecording: cannot decompress " + db);
  std::string out = db + ".plain.db";
  std::ofstream(out, std::ios::binary | std::ios::trunc) << plain;
  return out;
}

// One integer from a recording, read directly with SQLite (independent of the report code);
// -1 when the file or the query fails.
inline int64_t sqlInt(const std::string& dbFile, const char* sql) {
  sqlite3* h = nullptr;
  int64_t v = -1;
  std::string db = plainRecording(dbFile);
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return v;
}

}  // namespace memledger::test
