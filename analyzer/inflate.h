// Reading a compressed recording (recorder/compress.h writes them: one zstd frame holding the
// SQLite file). Internal to the analyzer: Recording::open is the only caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace memledger::analyzer::detail {

// Whether the file starts with the zstd frame magic 28 B5 2F FD (a plain SQLite file starts
// with "SQLite format 3").
bool isCompressedRecording(const std::string& path);

struct SqliteFree {
  void operator()(unsigned char* p) const;
};

// A decompressed recording: either in memory (a sqlite3_malloc64 buffer, ready for
// sqlite3_deserialize) or, when larger than the in-memory limit, in a private file under
// $TMPDIR that the caller must remove.
struct Inflated {
  std::unique_ptr<unsigned char, SqliteFree> bytes;
  uint64_t size = 0;
  std::string tempPath;
};

// Decompresses `path` (fileSize bytes). Output is bounded: never more than kMaxRatio times the
// compressed size (a real recording compresses ~4-40x; a frame that claims or produces more is
// damaged or hostile), whatever the frame header says. Throws RecordingError: Corrupt for a
// damaged, truncated or oversized frame (or trailing bytes after it), NotFound when the file or
// a temporary cannot be read or written.
inline constexpr uint64_t kMaxRatio = 1000;
inline constexpr uint64_t kMinBound = uint64_t(256) << 20;  // small files may still expand this far
Inflated inflateRecording(const std::string& path, uint64_t fileSize, uint64_t maxInMemory);

}  // namespace memledger::analyzer::detail
