#include "proc_sample.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace memledger::recorder {
namespace {

// Reads a small /proc file into buf (NUL-terminated). No stdio: this runs every few ms.
ssize_t readProc(uint32_t pid, const char* leaf, char* buf, size_t size) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%u/%s", pid, leaf);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t total = 0;
  while (static_cast<size_t>(total) < size - 1) {
    ssize_t n = ::read(fd, buf + total, size - 1 - static_cast<size_t>(total));
    if (n <= 0) break;
    total += n;
  }
  ::close(fd);
  buf[total] = '\0';
  return total;
}

}  // namespace

bool processAlive(uint32_t pid) {
  char buf[512];
  if (readProc(pid, "stat", buf, sizeof buf) <= 0) return false;
  // The state follows the command name, which is in parentheses and may itself contain ')'.
  const char* close = std::strrchr(buf, ')');
  if (!close || close[1] != ' ') return true;
  char state = close[2];
  return state != 'Z' && state != 'X' && state != 'x';
}

bool readZombieStatus(uint32_t pid, int* status) {
  char buf[1024];
  if (readProc(pid, "stat", buf, sizeof buf) <= 0) return false;
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ' || p[2] != 'Z') return false;
  // Fields after the command start at field 3 (state); exit_code is field 52.
  p += 2;
  for (int field = 3; field < 52; ++field) {
    p = std::strchr(p, ' ');
    if (!p) return false;
    ++p;
  }
  *status = static_cast<int>(std::strtol(p, nullptr, 10));
  return true;
}

bool readRss(uint32_t pid, uint64_t* bytes) {
  char buf[256];
  if (readProc(pid, "statm", buf, sizeof buf) <= 0) return false;
  char* end = nullptr;
  std::strtoull(buf, &end, 10);                     // size
  unsigned long long resident = std::strtoull(end, &end, 10);
  static const long page = ::sysconf(_SC_PAGESIZE);
  *bytes = static_cast<uint64_t>(resident) * static_cast<uint64_t>(page);
  return true;
}

// RssAnon of /proc/PID/status comes from the kernel's per-mm counters: reading it costs the same
// for any process size. smaps_rollup's "Anonymous:" walks every page table of the process: for a
// program with a GB resident that was milliseconds per sample, 5% of the recorder's time.
bool readAnon(uint32_t pid, uint64_t* bytes) {
  char buf[4096];
  if (readProc(pid, "status", buf, sizeof buf) <= 0) return false;
  const char* at = std::strstr(buf, "\nRssAnon:");
  if (!at) return false;
  *bytes = std::strtoull(at + 9, nullptr, 10) * 1024;
  return true;
}

}  // namespace memledger::recorder
