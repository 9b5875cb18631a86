#include "recording.h"

#include "end_times.h"

#include <algorithm>

#include <sys/wait.h>

namespace memledger::recorder {

Recording::Recording(DbWriter& db, const RecordingOptions& opt) : db_(db), opt_(opt) {
  // Written first, so that even a recording whose recorder is killed says what its rows mean.
  db_.setMeta("schema_version", std::to_string(kSchemaVersion));
  writePolicyMeta();
}

void Recording::writePolicyMeta() {
  db_.setMeta("allocation_rows", allocationRowsPolicy(opt_));
  db_.setMeta("fold_threshold_ns", std::to_string(foldThresholdMeta(opt_)));
}

Recording::~Recording() = default;

Recording::Image* Recording::find(int64_t id) {
  if (id < 1 || id > static_cast<int64_t>(images_.size())) return nullptr;
  return &images_[static_cast<size_t>(id - 1)];
}

ImageRecorder* Recording::image(int64_t id) {
  Image* im = find(id);
  return im ? im->rec.get() : nullptr;
}

ImageRecorder* Recording::openImageOf(uint32_t pid) {
  for (auto it = images_.rbegin(); it != images_.rend(); ++it)
    if (it->row.pid == pid && !it->rec->closed()) return it->rec.get();
  return nullptr;
}

ImageRecorder& Recording::openImage(const ImageStart& s) {
  std::optional<int64_t> parent;
  const ImageRecorder* forkParent = nullptr;
  std::optional<int> status;
  if (auto p = pendingStatus_.find(s.pid); p != pendingStatus_.end()) {
    status = p->second;
    pendingStatus_.erase(p);
  }
  if (!s.forked) {
    // The same pid registering a fresh image: it exec'd. The old image ends here.
    if (ImageRecorder* old = openImageOf(s.pid)) closeImage(old->id(), s.start_ns, 0, true);
    for (auto it = images_.rbegin(); it != images_.rend(); ++it) {
      if (it->row.pid == s.pid && it->execd) {
        parent = it->row.id;
        // A status that arrived before this registration was meant for the last image: this one.
        if (it->waitStatus && !status) status = it->waitStatus;
        it->waitStatus.reset();
        break;
      }
    }
  }
  uint32_t ppid = s.ppid;
  uint64_t startRel = s.start_ns > opt_.origin_ns ? s.start_ns - opt_.origin_ns : 0;
  if (!parent && s.forked && s.orphaned) {
    // Forked without exec: the parent ran the same command. Take the newest such image that
    // started before this one (a daemon's middle process, often gone before its child registers).
    for (auto it = images_.rbegin(); it != images_.rend(); ++it) {
      if (it->row.command != s.command || it->row.exe != s.exe || it->row.start_ns > startRel) continue;
      parent = it->row.id;
      forkParent = it->rec.get();
      ppid = it->row.pid;
      break;
    }
  }
  if (!parent) {
    // The newest image of the parent pid, preferring one still running (pids get reused).
    Image* best = nullptr;
    for (auto it = images_.rbegin(); it != images_.rend(); ++it) {
      if (it->row.pid != s.ppid) continue;
      if (!best) best = &*it;
      if (!it->rec->closed()) {
        best = &*it;
        break;
      }
    }
    if (best) {
      parent = best->row.id;
      if (s.forked) forkParent = best->rec.get();
    }
  }
  Image im;
  im.row.id = static_cast<int64_t>(images_.size()) + 1;
  im.row.pid = s.pid;
  im.row.ppid = ppid;
  im.row.parent_id = parent;
  im.row.command = s.command;
  im.row.exe = s.exe;
  im.row.start_ns = startRel;
  im.row.forked = s.forked;
  im.waitStatus = status;
  im.rec = std::make_unique<ImageRecorder>(*this, im.row.id, opt_, forkParent);
  images_.push_back(std::move(im));
  writeProcess(images_.back());
  return *images_.back().rec;
}

void Recording::closeImage(int64_t id, uint64_t ts, uint64_t waitNs, bool byExec) {
  Image* im = find(id);
  if (!im || im->rec->closed()) return;
  {
    EndTimer timer("image close");
    im->rec->close(ts);
  }
  im->row.end_ns = ts > opt_.origin_ns ? ts - opt_.origin_ns : 0;
  im->row.wait_ns = waitNs;
  im->execd = byExec;
  writeProcess(*im);
}

void Recording::noteWaitStatus(uint32_t pid, int status) {
  // The status belongs to the pid's last image (after an exec, the new program's).
  for (auto it = images_.rbegin(); it != images_.rend(); ++it) {
    if (it->row.pid != pid) continue;
    it->waitStatus = status;
    if (it->rec->closed()) writeProcess(*it);
    return;
  }
  // The reaping parent's record can be drained before the child's registration is accepted.
  pendingStatus_[pid] = status;
}

void Recording::writeProcess(Image& im) {
  ProcessRow& row = im.row;
  const ImageRecorder& r = *im.rec;
  row.peak_rss = r.peakRss();
  row.peak_heap_bytes = r.peakHeapBytes();
  row.peak_heap_ns = r.peakHeapNs();
  row.peak_mmap_bytes = r.peakMmapBytes();
  row.peak_mmap_ns = r.peakMmapNs();
  row.unknown_frees = r.unknownFrees();
  row.ended_by.reset();
  row.exit_code.reset();
  row.signal.reset();
  if (r.closed()) {
    // A death by signal is what really ended it, even after exit() began (atexit handlers).
    if (im.execd) {
      row.ended_by = "exec";
    } else if (im.waitStatus && WIFSIGNALED(*im.waitStatus)) {
      row.ended_by = "signal";
      row.signal = WTERMSIG(*im.waitStatus);
    } else if (r.exitRecord()) {
      row.ended_by = "exit";
      row.exit_code = *r.exitRecord();
    } else if (im.waitStatus && WIFEXITED(*im.waitStatus)) {
      row.ended_by = "exit";
      row.exit_code = WEXITSTATUS(*im.waitStatus);
    } else {
      row.ended_by = "unknown";
    }
  }
  db_.writeProcess(row);
}

void Recording::noteCollector(std::string_view keyValue) {
  size_t eq = keyValue.find('=');
  if (eq == 0 || eq == std::string_view::npos) return;
  std::string key(keyValue.substr(0, eq));
  std::string_view value = keyValue.substr(eq + 1);
  auto digits = [](std::string_view v) {
    return !v.empty() && v.size() < 19 && v.find_first_not_of("0123456789") == std::string_view::npos;
  };
  std::string& kept = collectorNotes_[key];
  if (digits(value) && (kept.empty() || digits(kept)))
    kept = std::to_string((kept.empty() ? 0 : std::stoull(kept)) + std::stoull(std::string(value)));
  else
    kept = std::string(value);
}

void Recording::finish(uint64_t ts, uint64_t lostRecords) {
  for (Image& im : images_)
    if (!im.rec->closed()) closeImage(im.row.id, ts, im.row.wait_ns, false);
  int64_t peakImage = 0;
  uint64_t peak = 0;
  for (Image& im : images_) {
    writeProcess(im);  // statuses may have arrived after the image closed
    if (!peakImage || im.rec->peakHeapBytes() > peak) {
      peakImage = im.row.id;
      peak = im.rec->peakHeapBytes();
    }
  }
  uint64_t duration = ts > opt_.origin_ns ? ts - opt_.origin_ns : 0;
  db_.setMeta("duration_ns", std::to_string(duration));
  db_.setMeta("wait_ns", std::to_string(totalWaitNs()));
  db_.setMeta("lost_records", std::to_string(lostRecords));
  writePolicyMeta();
  db_.setMeta("bucket_ns", std::to_string(opt_.bucket_ns));
  if (peakImage) db_.setMeta("peak_image", std::to_string(peakImage));
  writeGlobalPeaks();
  for (const auto& [key, value] : collectorNotes_) db_.setMeta("collector." + key, value);
  db_.commit();
}

uint32_t Recording::globalSpace(const std::string& name) {
  for (size_t i = 0; i < globals_.size(); ++i)
    if (globals_[i].name == name) return static_cast<uint32_t>(i);
  globals_.push_back(GlobalSpace{name});
  return static_cast<uint32_t>(globals_.size() - 1);
}

// Image 0's spaces rows and the live set at each simultaneous peak (schema: spaces,
// peak_site_lists: one list per space and image).
void Recording::writeGlobalPeaks() {
  EndTimer timer("global peaks");
  std::vector<packed::PeakSiteEntry> live;
  for (size_t g = 0; g < globals_.size(); ++g) {
    const GlobalSpace& gs = globals_[g];
    SpaceRow row;
    row.image_id = 0;
    row.account = static_cast<uint32_t>(g);
    row.name = row.space = gs.name;
    row.peak_bytes = gs.peak;
    row.peak_ns = gs.peakNs;
    row.end_bytes = static_cast<uint64_t>(std::max<int64_t>(gs.live, 0));
    db_.insertSpace(row);
    if (gs.epoch == 0) continue;  // never above zero: no instant to list
    for (const Image& im : images_) {
      live.clear();
      im.rec->peakSitesAt(static_cast<uint32_t>(g), gs.epoch, live);
      db_.insertPeakSites(gs.name, im.rec->id(), live);
    }
  }
}

void Recording::setWaitNs(int64_t id, uint64_t waitNs) {
  if (Image* im = find(id)) im->row.wait_ns = waitNs;
}

uint64_t Recording::totalWaitNs() const {
  uint64_t sum = 0;
  for (const Image& im : images_) sum += im.row.wait_ns;
  return sum;
}

uint64_t Recording::totalEvents() const {
  uint64_t sum = 0;
  for (const Image& im : images_) sum += im.rec->events();
  return sum;
}

size_t Recording::openImages() const {
  size_t n = 0;
  for (const Image& im : images_) n += im.rec->closed() ? 0 : 1;
  return n;
}

}  // namespace memledger::recorder
