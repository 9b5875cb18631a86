// The recorder core across images: process images come and go (start, fork, exec), each with its
// ImageRecorder; this class hands out the table ids, keeps the `processes` facts (how each image
// ended, from Exit/ChildStatus records and waitpid) and finishes the file (meta, peak image).
// No processes, sockets or rings in here: tests drive it with Decoded records.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db_writer.h"
#include "image_recorder.h"

namespace memledger::recorder {

struct ImageStart {
  uint32_t pid = 0, ppid = 0;
  bool forked = false;
  std::string command, exe;
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC
  // A fork child whose ppid is the recorder: its parent died before it registered and it was
  // reparented to us (subreaper). Its parent is then found by command and lifetime.
  bool orphaned = false;
};

class Recording {
 public:
  Recording(DbWriter& db, const RecordingOptions& opt);
  ~Recording();

  // A new image registered. Its parent is the open image of the same pid (exec: that one is
  // closed as ended_by='exec') or else the newest image of its ppid.
  ImageRecorder& openImage(const ImageStart& s);
  ImageRecorder* image(int64_t id);
  // The newest image of `pid` that is still open, or nullptr.
  ImageRecorder* openImageOf(uint32_t pid);

  // The image ended at `ts` (CLOCK_MONOTONIC); waitNs: how long its writers waited for ring space.
  void closeImage(int64_t id, uint64_t ts, uint64_t waitNs = 0, bool byExec = false);
  // The ring's wait total so far (for images still open at finish()).
  void setWaitNs(int64_t id, uint64_t waitNs);
  // A wait status (waitpid's) for `pid`, from our own waitpid or a traced parent's ChildStatus.
  void noteWaitStatus(uint32_t pid, int status);

  // A collector's "key=value" (wire CollectorNote): meta collector.KEY at finish(); integer
  // values add up over the images and notes, any other value is kept as last told.
  void noteCollector(std::string_view keyValue);

  // Writes the remaining facts: processes rows, meta (duration, peak image, ...). Closes images
  // still open at `ts`. Does not set complete=1 (the caller does, after symbolization).
  void finish(uint64_t ts, uint64_t lostRecords);

  // Table ids, shared by all images so every table's id is unique in the file.
  int64_t nextStackId() { return ++stackIds_; }
  uint32_t nextIpId() { return ++ipIds_; }
  int64_t nextModuleId() { return ++moduleIds_; }
  uint32_t nextAllocationId() { return ++allocationIds_; }
  uint64_t totalWaitNs() const;
  uint64_t totalEvents() const;
  size_t imageCount() const { return images_.size(); }
  size_t openImages() const;
  DbWriter& db() { return db_; }
  const RecordingOptions& options() const { return opt_; }

  // The simultaneous total of one address space over the images alive at once: every image's
  // account of that space adds into it, and an image that ends takes its part out.
  struct GlobalSpace {
    std::string name;
    int64_t live = 0;
    uint64_t peak = 0, peakNs = 0, epoch = 0;  // epoch: bumped at every new peak
  };
  uint32_t globalSpace(const std::string& name);  // its index, made on first use
  GlobalSpace& global(uint32_t index) { return globals_[index]; }
  const std::vector<GlobalSpace>& globals() const { return globals_; }

 private:
  struct Image {
    ProcessRow row;
    std::optional<int> waitStatus;
    bool execd = false;
    std::unique_ptr<ImageRecorder> rec;
  };
  void writeProcess(Image& im);
  void writePolicyMeta();  // allocation_rows and fold_threshold_ns
  void writeGlobalPeaks();
  Image* find(int64_t id);

  DbWriter& db_;
  RecordingOptions opt_;
  std::vector<Image> images_;  // index = id - 1
  std::vector<GlobalSpace> globals_;
  std::map<std::string, std::string> collectorNotes_;  // noteCollector()
  std::map<uint32_t, int> pendingStatus_;  // wait statuses of pids not registered (yet)
  int64_t stackIds_ = 0, moduleIds_ = 0;
  uint32_t ipIds_ = 0, allocationIds_ = 0;
};

}  // namespace memledger::recorder
