// Compress on exit. While the program runs a recording is a plain SQLite file, so a recorder
// killed at any moment still leaves a valid, readable file. Once the file is complete it becomes
// one zstd frame (with content size and checksum): written to a temporary file beside it, synced,
// and renamed over it, so at every instant the path holds either the plain or the compressed
// recording, never a partial one. A small recording is VACUUM'ed INTO a copy first (the copy is
// compressed, so the frame holds the same tables, packed). The analyzer (analyzer/recording.cpp)
// opens both kinds.
#pragma once

#include <cstdint>
#include <string>

namespace memledger::recorder {

struct CompressionLevel {
  int level = 3;
  int workers = 0;  // ZSTD_c_nbWorkers: 0 compresses on the calling thread
};

// Small files can afford a high level for little time; big ones take a fast level on 2 threads.
CompressionLevel compressionLevelFor(uint64_t plainBytes);

struct CompressStats {
  uint64_t plainBytes = 0, compressedBytes = 0;
  uint64_t vacuumedBytes = 0;  // the VACUUM'ed copy that was compressed; 0: none (a large file)
  CompressionLevel level;
  double seconds = 0;
};

// Replaces the plain recording at `path` by its compressed form. On failure the plain file is
// left as it was (any temporary removed) and *error says why: the recording stays usable.
bool compressRecording(const std::string& path, CompressStats* stats, std::string* error);

}  // namespace memledger::recorder
