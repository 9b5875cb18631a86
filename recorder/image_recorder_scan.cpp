// ImageRecorder's part of the exit scan (docs/leak-kinds.md): the live heap set handed to the
// scan (leak_scan.h) and the kinds it found, written with the leaks when the image closes.
#include <algorithm>

#include "image_recorder.h"
#include "leak_scan.h"

namespace memledger::recorder {

bool ImageRecorder::runLeakScan(uint32_t pid, const Decoded& r) {
  std::vector<leakscan::Block> blocks;
  blocks.reserve(heap_.size());
  heap_.forEach([&](uint64_t key, LiveBlock& b) {
    blocks.push_back({fromMapKey(key), b.size()});
  });
  std::sort(blocks.begin(), blocks.end(),
            [](const leakscan::Block& a, const leakscan::Block& b) { return a.address < b.address; });
  leakscan::ScanRequest req;
  req.pid = pid;
  req.tid = r.tid;
  req.sp = r.a;
  req.ownTable = r.b;
  req.ownCount = r.c;
  std::vector<leakscan::LeakKind> kinds;
  leakscan::ScanOutcome out = leakscan::scanProcess(req, blocks, &kinds);
  LeakScanRow row;
  row.image_id = id_;
  row.t_ns = rel(r.ts);
  row.duration_ns = out.durationNs;
  row.blocks = blocks.size();
  row.root_bytes = out.stats.rootBytes;
  row.block_bytes = out.stats.blockBytesScanned;
  if (!out.ok) {
    row.status = "failed";
    row.error = out.error;
    scanRow_ = row;
    return false;
  }
  scanRow_ = row;
  scanAddress_.clear();
  scanTimeKind_.clear();
  scanAddress_.reserve(blocks.size());
  scanTimeKind_.reserve(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    const LiveBlock* b = heap_.find(mapKey(blocks[i].address));
    scanAddress_.push_back(blocks[i].address);
    scanTimeKind_.push_back((b ? b->tAlloc() : 0) << 8 | static_cast<uint64_t>(kinds[i]));
  }
  return true;
}

void ImageRecorder::noteLeakScanSkipped(const Decoded& r, const std::string& why) {
  LeakScanRow row;
  row.image_id = id_;
  row.t_ns = rel(r.ts);
  row.status = "failed";
  row.error = why;
  scanRow_ = row;
}

void ImageRecorder::writeLeakKind(uint32_t allocationId, uint64_t address, const LiveBlock& b) {
  if (scanAddress_.empty()) return;
  auto it = std::lower_bound(scanAddress_.begin(), scanAddress_.end(), address);
  if (it == scanAddress_.end() || *it != address) return;  // allocated after the scan
  uint64_t packed = scanTimeKind_[static_cast<size_t>(it - scanAddress_.begin())];
  if ((packed >> 8) != b.tAlloc()) return;  // the address was freed and handed out again since
  db_.insertLeakKind(allocationId, static_cast<int>(packed & 0xff));
}

}  // namespace memledger::recorder
