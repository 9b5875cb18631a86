// libFuzzer target over the recording reader: whatever bytes a file holds, opening it as a
// recording and building the full report (what `memledger report --json` does) must either
// succeed or fail with a RecordingError (the CLI's exit 2). Anything else — a crash, a sanitizer
// report, any other exception escaping — is a bug the CLI would show its users as a crash.
//
// The bytes go through a real file because the reader is SQLite on a path (its header checks
// look at the file size and the first 100 bytes before SQLite opens it).
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "analyzer/analyzer.h"

namespace {

namespace an = memledger::analyzer;

const std::string& scratchPath() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/memledger-fuzz-" + std::to_string(getpid()) + ".db";
  }();
  return path;
}

bool writeScratch(const uint8_t* data, size_t size) {
  const std::string& path = scratchPath();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return done == size;
}

// Everything a front end reads from an opened recording.
void readEverything(const an::Recording& rec) {
  an::Report report = an::report(rec);
  std::string text = an::jsonText(an::toJson(report));
  for (const auto& site : an::sites(rec)) {
    text += an::stackKey(site.stack);
    for (const auto& frame : site.stack) text += an::frameText(frame);
  }
  an::Filter narrow;
  narrow.t_from_ns = 0;
  narrow.t_to_ns = report.recording.duration_ns / 2;
  narrow.top = 3;
  text += an::jsonText(an::toJson(an::leaks(rec, narrow)));
  text += an::jsonText(an::toJson(an::phases(rec, narrow)));
  for (const auto& point : an::timeline(rec)) text += std::to_string(point.heap_bytes);
  for (const auto& p : report.processes) {
    an::HeapLayout layout = an::heapLayout(rec, p.image_id, 0, UINT64_MAX, report.peak.time_ns);
    text += std::to_string(layout.live_bytes);
  }
  if (text.empty()) std::abort();  // keeps the work observable; a report is never empty
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!writeScratch(data, size)) return 0;
  try {
    an::Recording rec = an::Recording::open(scratchPath());
    readEverything(rec);
  } catch (const an::RecordingError&) {
    // The documented way to refuse a bad file: `memledger` prints its one line and exits 2.
  }
  return 0;
}
