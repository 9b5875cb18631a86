#include "leak_scan.h"

#include <dirent.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "../interpose/wire.h"

namespace memledger::recorder::leakscan {
namespace {

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

constexpr uint64_t kArenaBytes = 64ull << 20;  // glibc's HEAP_MAX_SIZE on 64-bit

struct Mapping {
  uint64_t start, end;
  std::string perms, path;
};

bool readMaps(uint32_t pid, std::vector<Mapping>* out, std::string* error) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  if (!in) {
    *error = "cannot read /proc/" + std::to_string(pid) + "/maps";
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    Mapping m;
    unsigned long long s = 0, e = 0;
    char perms[8] = {};
    int pathAt = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %*s %*s %*s %n", &s, &e, perms, &pathAt) < 3) continue;
    m.start = s;
    m.end = e;
    m.perms = perms;
    if (pathAt > 0 && static_cast<size_t>(pathAt) <= line.size()) m.path = line.substr(static_cast<size_t>(pathAt));
    out->push_back(std::move(m));
  }
  return true;
}

class ProcessMemory final : public Memory {
 public:
  explicit ProcessMemory(uint32_t pid) : pid_(static_cast<pid_t>(pid)) {}
  void readMany(const Region* ranges, size_t n, uint8_t* out, std::vector<bool>& ok) override {
    ok.assign(n, false);
    size_t i = 0;
    uint8_t* dst = out;
    while (i < n) {
      // One call for as many ranges as it reads; it stops at the first that fails.
      std::vector<iovec> remote;
      size_t total = 0;
      for (size_t k = i; k < n && remote.size() < 1024; ++k) {
        size_t len = ranges[k].end - ranges[k].start;
        remote.push_back({reinterpret_cast<void*>(ranges[k].start), len});
        total += len;
      }
      iovec local{dst, total};
      ssize_t got = process_vm_readv(pid_, &local, 1, remote.data(), remote.size(), 0);
      size_t done = got > 0 ? static_cast<size_t>(got) : 0;
      // Ranges read whole are good; the one it stopped in is skipped (zeroed), then go on after it.
      size_t k = i;
      while (k < i + remote.size()) {
        size_t len = ranges[k].end - ranges[k].start;
        if (done >= len) {
          ok[k] = true;
          done -= len;
          dst += len;
          ++k;
        } else {
          std::memset(dst, 0, len);
          dst += len;
          ++k;
          break;
        }
      }
      i = k;
    }
  }

 private:
  pid_t pid_;
};

// The stack pointers of the process's other threads that are blocked in a system call.
std::vector<uint64_t> threadStackPointers(uint32_t pid, uint32_t skipTid) {
  std::vector<uint64_t> out;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (static_cast<uint32_t>(std::strtoul(e->d_name, nullptr, 10)) == skipTid) continue;
    std::ifstream in(dir + "/" + e->d_name + "/syscall");
    std::string line;
    if (!std::getline(in, line)) continue;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string x; fields >> x;) f.push_back(x);
    if (f.size() >= 9) out.push_back(std::strtoull(f[7].c_str(), nullptr, 16));  // nr a1..a6 sp pc
  }
  closedir(d);
  return out;
}

}  // namespace

bool rootRegions(const ScanRequest& req, const std::vector<Block>& blocks, std::vector<Region>* roots,
                 std::string* error) {
  std::vector<Mapping> maps;
  if (!readMaps(req.pid, &maps, error)) return false;
  ProcessMemory mem(req.pid);
  std::vector<Region> own;
  if (req.ownTable && req.ownCount && req.ownCount <= wire::kMaxOwnRanges) {
    std::vector<uint64_t> table(req.ownCount * 2);
    Region r{req.ownTable, req.ownTable + table.size() * 8};
    std::vector<bool> ok;
    mem.readMany(&r, 1, reinterpret_cast<uint8_t*>(table.data()), ok);
    if (!ok.empty() && ok[0])
      for (size_t i = 0; i + 1 < table.size(); i += 2)
        if (table[i] && table[i + 1] > table[i]) own.push_back({table[i], table[i + 1]});
  }
  std::vector<uint64_t> sps = threadStackPointers(req.pid, req.tid);
  sps.push_back(req.sp);
  auto holdsBlock = [&](uint64_t s, uint64_t e) {
    auto it = std::lower_bound(blocks.begin(), blocks.end(), s,
                               [](const Block& b, uint64_t a) { return b.address < a; });
    return it != blocks.end() && it->address < e;
  };
  for (size_t i = 0; i < maps.size(); ++i) {
    const Mapping& m = maps[i];
    if (m.perms.size() < 2 || m.perms[0] != 'r' || m.perms[1] != 'w') continue;
    const std::string& p = m.path;
    if (p == "[heap]" || p == "[vvar]" || p == "[vsyscall]" || p == "[vdso]") continue;
    if (p.rfind("/dev/", 0) == 0 && p != "/dev/zero") continue;
    if (p.find("memledger-ring") != std::string::npos) continue;
    if (p.find("libmemledger_preload") != std::string::npos) continue;
    if (holdsBlock(m.start, m.end)) continue;
    if (m.start % kArenaBytes == 0 && i + 1 < maps.size() && maps[i + 1].start == m.end &&
        maps[i + 1].perms.rfind("---", 0) == 0 && maps[i + 1].end - m.start <= kArenaBytes &&
        maps[i + 1].path.empty() && p.empty())
      continue;  // a glibc thread arena whose blocks are all free
    // Cut out the preload's own mappings.
    std::vector<Region> parts{{m.start, m.end}};
    for (const Region& o : own) {
      std::vector<Region> next;
      for (const Region& r : parts) {
        if (o.end <= r.start || o.start >= r.end) {
          next.push_back(r);
          continue;
        }
        if (o.start > r.start) next.push_back({r.start, o.start});
        if (o.end < r.end) next.push_back({o.end, r.end});
      }
      parts.swap(next);
    }
    for (Region r : parts) {
      for (uint64_t sp : sps)
        if (sp >= r.start && sp < r.end) r.start = sp & ~uint64_t{7};  // dead frames below sp
      if (r.end > r.start) roots->push_back(r);
    }
  }
  return true;
}

ScanOutcome scanProcess(const ScanRequest& req, const std::vector<Block>& blocks,
                        std::vector<LeakKind>* kinds) {
  ScanOutcome out;
  uint64_t t0 = nowNs();
  std::vector<Region> roots;
  if (!rootRegions(req, blocks, &roots, &out.error)) return out;
  // A probe: no access (another user's process, Yama) is one clear reason, not all-definite.
  if (!roots.empty()) {
    uint64_t probe = 0;
    iovec local{&probe, 8}, remote{reinterpret_cast<void*>(roots.front().start), 8};
    if (process_vm_readv(static_cast<pid_t>(req.pid), &local, 1, &remote, 1, 0) < 0 && errno != EFAULT) {
      out.error = std::string("cannot read the process's memory: ") + std::strerror(errno);
      return out;
    }
  }
  ProcessMemory mem(req.pid);
  *kinds = classify(blocks, roots, mem, /*glibcChunks*/ true, &out.stats);
  out.ok = true;
  out.durationNs = nowNs() - t0;
  return out;
}

}  // namespace memledger::recorder::leakscan
