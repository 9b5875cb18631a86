// The recorder's Python parts of an image (docs/python.md): code objects for the symbolizer and
// the live set per site when the interpreter started finalizing.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "image_recorder.h"
#include "recording.h"

namespace memledger::recorder {

// The live set per site and allocation time when the interpreter started finalizing
// (python_finalize_lists): one pass over the live blocks (py_dict's 3.5M: tens of ms), not a row
// per block freed later. The blocks are grouped by the timeline bucket they were allocated in, so
// a time filter can ask which of them came from a time range.
void ImageRecorder::writeFinalizeSites() {
  struct Part {
    uint32_t site;
    uint64_t bucket, count, bytes;
  };
  std::vector<Part> parts;
  FlatMap<uint32_t> partOf;  // (bucket, site) -> index in parts + 1
  const uint64_t nSites = sites_.size() + 1;
  auto add = [&](uint32_t site, uint64_t tAlloc, uint64_t size) {
    // One key per (bucket, site), never 0; a run longer than the keys allow shares its last bucket.
    uint64_t bucket = std::min<uint64_t>(tAlloc / opt_.bucket_ns, (UINT64_MAX - nSites) / nSites);
    auto [slot, isNew] = partOf.insert(bucket * nSites + site + 1);
    if (isNew) {
      parts.push_back(Part{site, bucket, 0, 0});
      *slot = static_cast<uint32_t>(parts.size());
    }
    Part& p = parts[*slot - 1];
    ++p.count;
    p.bytes += size;
  };
  auto addBlock = [&](uint64_t, LiveBlock& b) { add(b.site, b.tAlloc(), b.size()); };
  heap_.forEach(addBlock);
  for (Account& a : accounts_)
    if (a.blocks) a.blocks->forEach(addBlock);
  std::vector<bool> seen(mappings_.size());
  for (auto& [start, range] : ranges_) {
    const Mapping& m = mappings_[range.mapping];
    if (m.remaining == 0 || seen[range.mapping]) continue;
    seen[range.mapping] = true;  // one mapping, however many pieces it was split into
    add(m.site, m.t_alloc, m.size);
  }
  std::vector<packed::FinalizeSiteEntry> entries;
  entries.reserve(parts.size());
  for (const Part& p : parts)
    entries.push_back({static_cast<uint64_t>(sites_[p.site].stack_id), static_cast<uint64_t>(sites_[p.site].kind),
                       p.bucket, p.count, p.bytes});
  db_.insertPythonFinalizeSites(id_, opt_.bucket_ns, entries);
}

// A Python code object (wire.h PyCode): name, file and line table, for the symbolizer. A table
// longer than one record holds waits for its PyCodeTable records.
void ImageRecorder::onPyCode(const Decoded& r) {
  size_t name = r.tag & 0xffff, file = r.tag >> 16;
  if (name + file > r.text.size()) return;
  uint64_t version = r.c & 0xffffffff, tableBytes = r.c >> 32;
  std::string_view table = r.text.substr(name + file);
  if (tableBytes > table.size()) {
    PendingCode& p = pendingCodes_[r.a];
    p = PendingCode{std::string(r.text.substr(0, name)), std::string(r.text.substr(name, file)), std::string(table),
                    static_cast<int32_t>(r.b), version, tableBytes};
    return;
  }
  db_.insertPythonCode(id_, r.a, r.text.substr(0, name), r.text.substr(name, file), static_cast<int32_t>(r.b),
                       version, table);
}

// The next part of a pending code object's line table; the row is written once it is whole.
void ImageRecorder::onPyCodeTable(const Decoded& r) {
  auto it = pendingCodes_.find(r.a);
  if (it == pendingCodes_.end()) return;
  PendingCode& p = it->second;
  if (r.b != p.table.size()) return;  // a part was lost (ring detached): the table stays cut
  p.table.append(r.text);
  if (p.table.size() < p.tableBytes) return;
  db_.insertPythonCode(id_, r.a, p.name, p.file, p.firstLine, p.version, p.table);
  pendingCodes_.erase(it);
}

// At the image's end: what arrived of each table still pending (lines past it are unknown).
void ImageRecorder::flushPendingCodes() {
  for (auto& [serial, p] : pendingCodes_)
    db_.insertPythonCode(id_, serial, p.name, p.file, p.firstLine, p.version, p.table);
  pendingCodes_.clear();
}

}  // namespace memledger::recorder
