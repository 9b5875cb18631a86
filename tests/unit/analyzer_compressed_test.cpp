// Compressed recordings (recorder/compress.h writes them, Recording::open reads them): the same
// answers as the plain file, in memory or through a temporary file, and every damaged or
// oversized frame refused as Corrupt.
#include <zstd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer_fixture.h"
#include "recorder/compress.h"

using namespace memledger::analyzer;
using memledger::testing::readFile;
using memledger::testing::RecordingBuilder;
using memledger::testing::tempPath;

namespace {

std::string plainRecording(const std::string& name) {
  RecordingBuilder b(name);
  b.process({.peak_heap_bytes = 100});
  int64_t s = b.stack(1, {{"f", "f.c", 1}});
  b.site({.stack = s, .alloc_count = 3000, .alloc_bytes = 3000, .leak_count = 3000, .leak_bytes = 3000});
  for (int i = 0; i < 3000; ++i) b.alloc(1, s, 0x10000 + 16 * i, 1, i);
  return b.finish();
}

std::string compressedCopy(const std::string& plain, const std::string& name) {
  std::string path = tempPath(name);
  std::filesystem::copy_file(plain, path, std::filesystem::copy_options::overwrite_existing);
  memledger::recorder::CompressStats stats;
  std::string err;
  EXPECT_TRUE(memledger::recorder::compressRecording(path, &stats, &err)) << err;
  EXPECT_EQ(stats.plainBytes, std::filesystem::file_size(plain));
  EXPECT_EQ(stats.compressedBytes, std::filesystem::file_size(path));
  return path;
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

ErrorKind openError(const std::string& path, const OpenOptions& options = {}) {
  try {
    Recording::open(path, options);
  } catch (const RecordingError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.kind();
  }
  ADD_FAILURE() << "opening " << path << " did not fail";
  return ErrorKind::NotFound;
}

// What a report of the file says, for comparing two files.
std::string summary(const Recording& rec) {
  Leaks l = leaks(rec);
  return std::to_string(rec.info().schema_version) + " " + std::to_string(rec.info().complete) + " " +
         std::to_string(l.count) + " " + std::to_string(l.bytes) + " " + std::to_string(sites(rec).size());
}

size_t filesIn(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// One zstd frame of `zeros` zero bytes, streamed; `declare` puts the size in the frame header.
std::string zeroFrame(uint64_t zeros, bool declare) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
  if (declare) ZSTD_CCtx_setPledgedSrcSize(c, zeros);
  std::vector<char> in(1 << 20, 0), out(ZSTD_CStreamOutSize());
  std::string frame;
  for (uint64_t done = 0; done < zeros;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(in.size(), zeros - done));
    done += n;
    ZSTD_inBuffer ib{in.data(), n, 0};
    ZSTD_EndDirective mode = done == zeros ? ZSTD_e_end : ZSTD_e_continue;
    size_t left;
    do {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      left = ZSTD_compressStream2(c, &ob, &ib, mode);
      frame.append(out.data(), ob.pos);
    } while (mode == ZSTD_e_end ? left != 0 : ib.pos < ib.size);
  }
  ZSTD_freeCCtx(c);
  return frame;
}

}  // namespace

TEST(AnalyzerCompressed, OpensLikeThePlainFile) {
  std::string plain = plainRecording("compressed-plain.db");
  std::string packed = compressedCopy(plain, "compressed.db");
  ASSERT_EQ(readFile(packed).substr(0, 4), std::string("\x28\xB5\x2F\xFD", 4));
  EXPECT_LT(std::filesystem::file_size(packed) * 4, std::filesystem::file_size(plain));
  Recording a = Recording::open(plain);
  Recording b = Recording::open(packed);
  EXPECT_EQ(b.info().path, packed);
  EXPECT_EQ(summary(a), summary(b));
  EXPECT_EQ(leaks(b).bytes, 3000);
}

TEST(AnalyzerCompressed, PastTheMemoryLimitItGoesThroughATemporaryFileRemovedOnClose) {
  std::string plain = plainRecording("spill-plain.db");
  std::string packed = compressedCopy(plain, "spill.db");
  std::string tmp = tempPath("spill-tmp");
  std::filesystem::create_directories(tmp);
  const char* old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  setenv("TMPDIR", tmp.c_str(), 1);
  {
    Recording rec = Recording::open(packed, OpenOptions{.max_in_memory = 4096});
    EXPECT_EQ(filesIn(tmp), 1u);
    EXPECT_EQ(summary(rec), summary(Recording::open(plain)));
  }
  EXPECT_EQ(filesIn(tmp), 0u);
  // A damaged file that had started to spill leaves nothing behind either.
  std::string bytes = readFile(packed);
  writeBytes(packed, bytes.substr(0, bytes.size() - 3));
  EXPECT_EQ(openError(packed, OpenOptions{.max_in_memory = 4096}), ErrorKind::Corrupt);
  EXPECT_EQ(filesIn(tmp), 0u);
  if (old) setenv("TMPDIR", saved.c_str(), 1);
  else unsetenv("TMPDIR");
}

// Cut at every length: never a crash, never a half-read recording. Under 4 bytes it is not even
// recognisable as compressed.
TEST(AnalyzerCompressed, TruncatedAtAnyLengthIsCorrupt) {
  std::string packed = compressedCopy(plainRecording("cut-plain.db"), "cut-source.db");
  std::string bytes = readFile(packed);
  std::string path = tempPath("cut.db");
  for (size_t len = 0; len < bytes.size(); len += len < 64 ? 1 : 37) {
    writeBytes(path, bytes.substr(0, len));
    EXPECT_EQ(openError(path), len < 4 ? ErrorKind::NotARecording : ErrorKind::Corrupt) << len;
  }
}

// A frame that expands far beyond what any recording compresses to is refused before its output
// is all produced, whether its header declares the size or not.
TEST(AnalyzerCompressed, ABombIsRefused) {
  std::string path = tempPath("bomb.db");
  writeBytes(path, zeroFrame(uint64_t(300) << 20, true));
  EXPECT_LT(std::filesystem::file_size(path), 64u * 1024);
  EXPECT_EQ(openError(path), ErrorKind::Corrupt);
  writeBytes(path, zeroFrame(uint64_t(300) << 20, false));
  EXPECT_EQ(openError(path), ErrorKind::Corrupt);
}

// Zeros are not SQLite: a valid frame holding something else is not a recording.
TEST(AnalyzerCompressed, AValidFrameOfSomethingElseIsNotARecording) {
  std::string path = tempPath("zeros.db");
  writeBytes(path, zeroFrame(8192, true));
  EXPECT_EQ(openError(path), ErrorKind::NotARecording);
}
