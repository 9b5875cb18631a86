#include "runnable.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "recorder/launch.h"

namespace memledger::cli {

namespace {

// The interpreter named by a "#!" line (up to the first blank), or "" when there is none.
std::string interpreterOf(const char* head, size_t n) {
  size_t i = 2;
  while (i < n && (head[i] == ' ' || head[i] == '\t')) ++i;
  size_t b = i;
  while (i < n && head[i] != ' ' && head[i] != '\t' && head[i] != '\n' && head[i] != '\r') ++i;
  return std::string(head + b, i - b);
}

}  // namespace

int checkRunnable(const std::string& name, std::string* path) {
  recorder::ResolvedProgram prog = recorder::resolveProgram(name);
  if (prog.error) {
    std::fprintf(stderr, "memledger: cannot run '%s': %s\n", name.c_str(), std::strerror(prog.error));
    return prog.error == ENOENT ? 127 : 126;
  }
  if (path) *path = prog.path;
  // An executable that we may not read (mode --x) is left to exec to judge.
  int fd = ::open(prog.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char head[256];
  ssize_t got = ::read(fd, head, sizeof head);
  ::close(fd);
  size_t n = got > 0 ? static_cast<size_t>(got) : 0;
  if (n >= 4 && std::memcmp(head, "\x7f" "ELF", 4) == 0) return 0;
  if (n >= 2 && head[0] == '#' && head[1] == '!') {
    std::string interp = interpreterOf(head, n);
    if (!interp.empty() && ::access(interp.c_str(), X_OK) == 0) return 0;
    if (interp.empty()) {
      std::fprintf(stderr, "memledger: cannot run '%s': its '#!' line names no interpreter\n", name.c_str());
      return 126;
    }
    int e = errno;
    std::fprintf(stderr, "memledger: cannot run '%s': its interpreter '%s': %s\n", name.c_str(), interp.c_str(),
                 std::strerror(e));
    return e == ENOENT ? 127 : 126;
  }
  std::fprintf(stderr, "memledger: cannot run '%s': %s (neither an ELF program nor a '#!' script)\n",
               name.c_str(), std::strerror(ENOEXEC));
  return 126;
}

}  // namespace memledger::cli
