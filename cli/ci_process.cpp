#include "ci_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "commands.h"

namespace memledger::cli {

namespace {

int waitStatus(pid_t pid) {
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(ws)) return WEXITSTATUS(ws);
  if (WIFSIGNALED(ws)) return 128 + WTERMSIG(ws);
  return -1;
}

ChildResult spawn(const std::vector<std::string>& argv, bool capture) {
  ChildResult r;
  if (argv.empty()) return r;
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  int pipeFds[2] = {-1, -1};
  if (capture && pipe2(pipeFds, O_CLOEXEC) != 0) return r;
  pid_t pid = fork();
  if (pid < 0) {
    if (capture) {
      close(pipeFds[0]);
      close(pipeFds[1]);
    }
    return r;
  }
  if (pid == 0) {
    if (capture) dup2(pipeFds[1], 1);
    execvp(args[0], args.data());
    std::fprintf(stderr, "memledger: cannot run '%s': %s\n", args[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  if (capture) {
    close(pipeFds[1]);
    char buf[8192];
    for (;;) {
      ssize_t n = read(pipeFds[0], buf, sizeof buf);
      if (n > 0) {
        r.out.append(buf, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        break;
      }
    }
    close(pipeFds[0]);
  }
  r.status = waitStatus(pid);
  return r;
}

}  // namespace

ChildResult runChild(const std::vector<std::string>& argv) { return spawn(argv, false); }
ChildResult runChildCapture(const std::vector<std::string>& argv) { return spawn(argv, true); }

int recordProgram(const std::string& dbPath, const std::vector<std::string>& program, bool compress,
                  bool scan) {
  // A child process rather than an in-process call: `record` owns signals, the control socket
  // and the program's exit status, and a fresh process gives each recording a clean slate.
  std::vector<std::string> argv = {std::string(selfDir()) + "/memledger", "record", "-o", dbPath};
  if (!compress) argv.push_back("--no-compress");
  if (!scan) argv.insert(argv.end(), {"--scan", "off"});
  argv.push_back("--");
  argv.insert(argv.end(), program.begin(), program.end());
  return runChild(argv).status;
}

std::string makeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/memledger-check-XXXXXX";
  if (!mkdtemp(pattern.data())) return {};
  return pattern;
}

void removeTree(const std::string& path) {
  std::error_code ignored;
  if (!path.empty()) std::filesystem::remove_all(path, ignored);
}

}  // namespace memledger::cli
