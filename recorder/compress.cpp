#include "compress.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

namespace memledger::recorder {
namespace {

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

bool writeAll(int fd, const void* data, size_t n) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::string dirOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Streams `in` (plainBytes long) into `out` as one frame. Returns "" or what failed.
std::string compressStream(int in, int out, uint64_t plainBytes, CompressionLevel level) {
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
  if (!cctx) return "out of memory";
  auto set = [&](ZSTD_cParameter p, int v) { return !ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), p, v)); };
  // The checksum lets a reader tell a damaged file from a recording; the content size lets it
  // size its buffer once (bounded: it is never trusted alone).
  if (!set(ZSTD_c_compressionLevel, level.level) || !set(ZSTD_c_checksumFlag, 1) ||
      !set(ZSTD_c_contentSizeFlag, 1))
    return "cannot set up the compressor";
  if (level.workers > 0) set(ZSTD_c_nbWorkers, level.workers);  // fails harmlessly without threads
  if (ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cctx.get(), plainBytes))) return "cannot set up the compressor";

  std::vector<char> inBuf(size_t(1) << 20), outBuf(ZSTD_CStreamOutSize());
  uint64_t done = 0;
  // The caller fsyncs the output before it replaces the recording: start its write-back as it is
  // written, so that the fsync finds the disk's work mostly done (torch_mlp's 8 MB: the fsync
  // waited ~10 ms for it all).
  uint64_t written = 0, queued = 0;
  constexpr uint64_t kWriteBackEvery = uint64_t(1) << 20;
  while (true) {
    ssize_t got = ::read(in, inBuf.data(), inBuf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return std::string("read: ") + std::strerror(errno);
    done += static_cast<uint64_t>(got);
    bool last = got == 0;
    if (done > plainBytes) return "the file grew while it was compressed";
    ZSTD_inBuffer input{inBuf.data(), static_cast<size_t>(got), 0};
    ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_continue;
    bool finished = false;
    while (!finished) {
      ZSTD_outBuffer output{outBuf.data(), outBuf.size(), 0};
      size_t left = ZSTD_compressStream2(cctx.get(), &output, &input, mode);
      if (ZSTD_isError(left)) return std::string("zstd: ") + ZSTD_getErrorName(left);
      if (!writeAll(out, outBuf.data(), output.pos)) return std::string("write: ") + std::strerror(errno);
      written += output.pos;
      if (written - queued >= kWriteBackEvery) {
        ::sync_file_range(out, static_cast<off_t>(queued), static_cast<off_t>(written - queued), SYNC_FILE_RANGE_WRITE);
        queued = written;  // a file system without it says so, harmlessly: the fsync does it all
      }
      finished = last ? left == 0 : input.pos == input.size;
    }
    if (last) break;
  }
  if (done != plainBytes) return "the file changed size while it was compressed";
  return {};
}

// VACUUM INTO a temporary beside the recording: each table's pages together and full, no free
// space left by the recorder's interleaved inserts. 3-5% smaller compressed for ~20 ms per MB, so
// only below kVacuumUpTo (torch_mlp's 68 MB took 0.25 s for 6%). The recording itself is not
// touched. Returns the copy's path, or "" (then the recording is compressed as it is).
constexpr uint64_t kVacuumUpTo = uint64_t(16) << 20;

std::string vacuumedCopy(const std::string& path) {
  std::string tmp = path + ".vacuum-XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);  // VACUUM INTO accepts an empty file
  if (fd < 0) return {};
  ::close(fd);
  sqlite3* db = nullptr;
  bool ok = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK;
  if (ok) {
    char* sql = sqlite3_mprintf("VACUUM INTO %Q", tmp.c_str());
    ok = sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_free(sql);
  }
  sqlite3_close(db);
  if (!ok) {
    ::unlink(tmp.c_str());
    return {};
  }
  return tmp;
}

}  // namespace

CompressionLevel compressionLevelFor(uint64_t plainBytes) {
  // The time counts in the recorder's end-to-end overhead. Measured with zstd on the bench's
  // recordings (2 shared cores): 144-224 KiB (the storms, sqlite_insert): level 15 in 24-40 ms,
  // 8-10% smaller than 6 (sqlite_insert: 37.6 kB vs 41.9, heaptrack's trace 42.5) and within 1%
  // of 19 at half its time; 548 KiB (py_dict): 6 in 18 ms, 15 in 66 ms, 1.5% apart; 696 KiB (a
  // 60 s soak): 6 in 32 ms, 15 in 112 ms, 0.6% apart. Level 3 on 2 threads runs at ~300 MB/s.
  // 47 MiB (torch_mlp with Python frames, 700k stacks): level 1 in 0.12 s of CPU, 3 in 0.19 s,
  // 4% apart (10.5 MB vs 10.1; heaptrack's trace 13.3 MB).
  constexpr uint64_t KiB = 1024, MiB = KiB * KiB;
  if (plainBytes <= 256 * KiB) return {15, 0};
  if (plainBytes <= 2 * MiB) return {6, 0};
  if (plainBytes <= 8 * MiB) return {6, 2};
  if (plainBytes <= 32 * MiB) return {3, 2};
  return {1, 2};
}

bool compressRecording(const std::string& path, CompressStats* stats, std::string* error) {
  auto started = std::chrono::steady_clock::now();
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (in.fd < 0 || ::fstat(in.fd, &st) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  // The temporaries disappear with the process whenever it is killed (Ctrl-C while compressing
  // leaves only the plain recording): the VACUUM copy is unlinked as soon as it is open, the
  // compressed file is unnamed (O_TMPFILE) until it is complete.
  std::string vacuumed = static_cast<uint64_t>(st.st_size) <= kVacuumUpTo ? vacuumedCopy(path) : "";
  Fd copy(vacuumed.empty() ? -1 : ::open(vacuumed.c_str(), O_RDONLY | O_CLOEXEC));
  if (!vacuumed.empty()) ::unlink(vacuumed.c_str());
  struct stat copySt {};
  bool useCopy = copy.fd >= 0 && ::fstat(copy.fd, &copySt) == 0;
  int source = useCopy ? copy.fd : in.fd;
  uint64_t sourceBytes = static_cast<uint64_t>(useCopy ? copySt.st_size : st.st_size);
  CompressionLevel level = compressionLevelFor(sourceBytes);
  // In the same folder: the rename over the recording is atomic.
  Fd out(::open(dirOf(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
  std::string tmpl = path + ".zst-XXXXXX";
  bool named = out.fd < 0;  // a file system without O_TMPFILE: a named temporary, 0600
  if (named) out.fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (out.fd < 0) {
    *error = std::string("cannot create a temporary file beside it: ") + std::strerror(errno);
    return false;
  }
  std::string why = compressStream(source, out.fd, sourceBytes, level);
  // Same permissions as the plain file; then on disk before it replaces the plain one.
  if (why.empty() && ::fchmod(out.fd, st.st_mode & 07777) != 0) why = std::string("chmod: ") + std::strerror(errno);
  if (why.empty() && ::fsync(out.fd) != 0) why = std::string("fsync: ") + std::strerror(errno);
  struct stat outSt {};
  if (why.empty() && ::fstat(out.fd, &outSt) != 0) why = std::string("stat: ") + std::strerror(errno);
  if (why.empty() && !named) {
    // Give it a name now that it is complete (linkat cannot replace: a fresh name, then rename).
    std::string fdPath = "/proc/self/fd/" + std::to_string(out.fd);
    for (int attempt = 0; attempt < 100; ++attempt) {
      tmpl = path + ".zst-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
      if (::linkat(AT_FDCWD, fdPath.c_str(), AT_FDCWD, tmpl.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        named = true;
        break;
      }
      if (errno != EEXIST) break;
    }
    if (!named) why = std::string("link: ") + std::strerror(errno);
  }
  if (why.empty() && ::rename(tmpl.c_str(), path.c_str()) != 0) why = std::string("rename: ") + std::strerror(errno);
  if (!why.empty()) {
    if (named) ::unlink(tmpl.c_str());
    *error = why;
    return false;
  }
  // The rename itself is durable once the folder is synced.
  Fd dir(::open(dirOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd >= 0) ::fsync(dir.fd);
  if (stats) {
    stats->plainBytes = static_cast<uint64_t>(st.st_size);
    stats->vacuumedBytes = useCopy ? sourceBytes : 0;
    stats->compressedBytes = static_cast<uint64_t>(outSt.st_size);
    stats->level = level;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  return true;
}

}  // namespace memledger::recorder
