#include "launch.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace memledger::recorder {

namespace {
int checkFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errno;
  if (S_ISDIR(st.st_mode)) return EACCES;
  if (::access(path.c_str(), X_OK) != 0) return errno;
  return 0;
}

template <class Ehdr, class Phdr>
void readPhdrs(int fd, const Ehdr& eh, BinaryInfo* info) {
  info->isStatic = true;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Phdr ph;
    off_t at = static_cast<off_t>(eh.e_phoff + static_cast<uint64_t>(i) * eh.e_phentsize);
    if (::pread(fd, &ph, sizeof ph, at) != static_cast<ssize_t>(sizeof ph)) return;
    if (ph.p_type == PT_INTERP) {
      info->isStatic = false;
      return;
    }
  }
}
}  // namespace

ResolvedProgram resolveProgram(const std::string& name) {
  ResolvedProgram r;
  if (name.empty()) {
    r.error = ENOENT;
    return r;
  }
  if (name.find('/') != std::string::npos) {
    r.path = name;
    r.error = checkFile(name);
    return r;
  }
  const char* envPath = std::getenv("PATH");
  std::string path = envPath ? envPath : "/bin:/usr/bin";
  int firstError = ENOENT;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t colon = path.find(':', pos);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(pos, colon - pos);
    if (dir.empty()) dir = ".";  // an empty PATH entry is the current directory
    std::string cand = dir + "/" + name;
    int err = checkFile(cand);
    if (err == 0) {
      r.path = cand;
      r.error = 0;
      return r;
    }
    if (err == EACCES && firstError == ENOENT) {
      firstError = EACCES;
      r.path = cand;
    }
    pos = colon + 1;
  }
  r.error = firstError;
  if (r.path.empty()) r.path = name;
  return r;
}

BinaryInfo inspectBinary(const std::string& path) {
  BinaryInfo info;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return info;
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    // The loader runs in secure mode (and drops LD_PRELOAD) when ids change across the exec.
    info.secure = ((st.st_mode & S_ISUID) && st.st_uid != ::geteuid()) ||
                  ((st.st_mode & S_ISGID) && st.st_gid != ::getegid());
  }
  unsigned char ident[EI_NIDENT];
  if (::pread(fd, ident, sizeof ident, 0) == static_cast<ssize_t>(sizeof ident) &&
      std::memcmp(ident, ELFMAG, SELFMAG) == 0) {
    info.elf = true;
    if (ident[EI_CLASS] == ELFCLASS64) {
      Elf64_Ehdr eh;
      if (::pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) &&
          (eh.e_type == ET_EXEC || eh.e_type == ET_DYN))
        readPhdrs<Elf64_Ehdr, Elf64_Phdr>(fd, eh, &info);
    } else if (ident[EI_CLASS] == ELFCLASS32) {
      Elf32_Ehdr eh;
      if (::pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) &&
          (eh.e_type == ET_EXEC || eh.e_type == ET_DYN))
        readPhdrs<Elf32_Ehdr, Elf32_Phdr>(fd, eh, &info);
    }
  }
  ::close(fd);
  return info;
}

std::vector<std::string> programEnvironment(const std::string& preload, const std::string& dir,
                                            bool followChildren) {
  std::vector<std::string> env;
  std::string oldPreload;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("LD_PRELOAD=", 0) == 0) {
      oldPreload = kv.substr(11);
      continue;
    }
    if (kv.rfind("MEMLEDGER_DIR=", 0) == 0 || kv.rfind("MEMLEDGER_NO_FOLLOW=", 0) == 0) continue;
    env.push_back(std::move(kv));
  }
  env.push_back("LD_PRELOAD=" + preload + (oldPreload.empty() ? "" : ":" + oldPreload));
  env.push_back("MEMLEDGER_DIR=" + dir);
  if (!followChildren) env.push_back("MEMLEDGER_NO_FOLLOW=1");
  return env;
}

pid_t spawnProgram(const std::string& path, const std::vector<std::string>& argv,
                   const std::vector<std::string>& env) {
  std::vector<char*> av, ev;
  for (const std::string& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const std::string& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  // The recorder blocks the signals it reads through signalfd and ignores none; the program
  // must start as if a shell had started it.
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, path.c_str(), nullptr, &attr, av.data(), ev.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return pid;
}

}  // namespace memledger::recorder
