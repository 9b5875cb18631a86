// Streaming decompression of a compressed recording, bounded whatever its frame header claims.
#include "analyzer/inflate.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer::detail {

void SqliteFree::operator()(unsigned char* p) const { sqlite3_free(p); }

namespace {

constexpr unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
constexpr size_t kReadChunk = size_t(1) << 20;
constexpr size_t kFileStage = size_t(4) << 20;  // output staged before each write to the temporary

[[noreturn]] void corrupt(const std::string& path) {
  throw RecordingError(ErrorKind::Corrupt, path, "memledger: '" + path + "' is truncated or corrupt");
}

[[noreturn]] void ioError(const std::string& path, const std::string& what, int err) {
  throw RecordingError(ErrorKind::NotFound, path,
                       "memledger: cannot decompress '" + path + "': " + what + ": " + std::strerror(err));
}

struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Where decompressed bytes go: a growing sqlite3 buffer until maxInMemory, then a temporary
// file (what is already in memory is written there first).
class Sink {
 public:
  Sink(std::string path, uint64_t maxInMemory) : path_(std::move(path)), maxInMemory_(maxInMemory) {}
  ~Sink() {
    if (!tempPath_.empty()) ::unlink(tempPath_.c_str());  // released() clears it on success
  }

  void start(uint64_t expected) {
    if (expected > maxInMemory_) {
      spill();
      return;
    }
    reserve(std::max<uint64_t>(expected, 4096));
  }

  // A buffer with room for at least one byte.
  ZSTD_outBuffer room() {
    if (file_.fd >= 0) {
      if (used_ == stage_.size()) flush();
      return {stage_.data(), stage_.size(), used_};
    }
    if (used_ == cap_) {
      if (cap_ >= maxInMemory_) {
        spill();
        return room();
      }
      reserve(std::min<uint64_t>(maxInMemory_, std::max<uint64_t>(cap_ * 2, kReadChunk)));
    }
    return {mem_.get(), cap_, used_};
  }
  void advance(size_t pos) { used_ = pos; }

  Inflated finish(uint64_t total) {
    Inflated out;
    out.size = total;
    if (file_.fd >= 0) {
      flush();  // read back by this process only: no fsync
      out.tempPath = std::move(tempPath_);
      tempPath_.clear();
    } else {
      out.bytes = std::move(mem_);
    }
    return out;
  }

 private:
  void reserve(uint64_t cap) {
    auto* grown = static_cast<unsigned char*>(sqlite3_realloc64(mem_.get(), cap));
    if (!grown) throw RecordingError(ErrorKind::NotFound, path_, "memledger: cannot decompress '" + path_ + "': out of memory");
    (void)mem_.release();
    mem_.reset(grown);
    cap_ = static_cast<size_t>(cap);
  }

  void spill() {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = tmp && *tmp ? tmp : "/tmp";
    std::string pattern = dir + "/memledger-inflate-XXXXXX";
    file_.fd = ::mkostemp(pattern.data(), O_CLOEXEC);  // 0600
    if (file_.fd < 0) ioError(path_, "cannot create a temporary file in " + dir, errno);
    tempPath_ = pattern;
    writeOut(mem_.get(), used_);
    mem_.reset();
    cap_ = used_ = 0;
    stage_.resize(kFileStage);
  }

  void flush() {
    writeOut(stage_.data(), used_);
    used_ = 0;
  }

  void writeOut(const unsigned char* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(file_.fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ioError(path_, "write " + tempPath_, w < 0 ? errno : ENOSPC);
      p += w;
      n -= static_cast<size_t>(w);
    }
  }

  std::string path_;
  uint64_t maxInMemory_;
  std::unique_ptr<unsigned char, SqliteFree> mem_;
  size_t cap_ = 0, used_ = 0;
  FdGuard file_;
  std::string tempPath_;
  std::vector<unsigned char> stage_;
};

}  // namespace

bool isCompressedRecording(const std::string& path) {
  FdGuard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  unsigned char head[4] = {};
  if (f.fd < 0) return false;
  ssize_t got = ::read(f.fd, head, sizeof head);
  return got == static_cast<ssize_t>(sizeof head) && std::memcmp(head, kZstdMagic, sizeof head) == 0;
}

Inflated inflateRecording(const std::string& path, uint64_t fileSize, uint64_t maxInMemory) {
  FdGuard in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) ioError(path, "open", errno);
  std::vector<unsigned char> inBuf(kReadChunk);
  auto readSome = [&]() -> size_t {
    while (true) {
      ssize_t got = ::read(in.fd, inBuf.data(), inBuf.size());
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) ioError(path, "read", errno);
    }
  };
  uint64_t bound = fileSize > kMinBound / kMaxRatio ? fileSize * kMaxRatio : kMinBound;

  std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx(ZSTD_createDCtx());
  if (!dctx) throw RecordingError(ErrorKind::NotFound, path, "memledger: cannot decompress '" + path + "': out of memory");

  size_t got = readSome();
  ZSTD_inBuffer input{inBuf.data(), got, 0};
  // The declared size only sizes the first buffer, and only within the bound; the output is
  // checked against it at the end.
  unsigned long long declared = ZSTD_getFrameContentSize(inBuf.data(), got);
  if (declared == ZSTD_CONTENTSIZE_ERROR) corrupt(path);
  bool known = declared != ZSTD_CONTENTSIZE_UNKNOWN;
  if (known && declared > bound) corrupt(path);

  Sink sink(path, maxInMemory);
  sink.start(known ? declared : std::min<uint64_t>(maxInMemory, std::max<uint64_t>(fileSize * 4, kReadChunk)));
  uint64_t total = 0;
  bool frameDone = false, outFull = false;
  while (true) {
    if (frameDone) {
      if (input.pos < input.size || readSome() > 0) corrupt(path);  // bytes after the one frame
      break;
    }
    if (input.pos == input.size && !outFull) {
      got = readSome();
      if (got == 0) corrupt(path);  // the frame is cut short
      input = {inBuf.data(), got, 0};
    }
    ZSTD_outBuffer out = sink.room();
    size_t before = out.pos;
    size_t ret = ZSTD_decompressStream(dctx.get(), &out, &input);
    if (ZSTD_isError(ret)) corrupt(path);  // bad block, checksum mismatch, size mismatch...
    total += out.pos - before;
    if (total > bound) corrupt(path);
    sink.advance(out.pos);
    outFull = out.pos == out.size;
    frameDone = ret == 0;
  }
  if (known && total != declared) corrupt(path);
  return sink.finish(total);
}

}  // namespace memledger::analyzer::detail
