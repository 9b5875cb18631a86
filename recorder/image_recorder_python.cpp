// The recorder's Python parts of an image (docs/python.md): code objects for the symbolizer and
// the live set per site when the interpreter started finalizing.
#include <utility>
#include <vector>

#include "image_recorder.h"
#include "recording.h"

namespace memledger::recorder {

// The live set per site when the interpreter started finalizing (python_finalize_sites): one
// pass over the live blocks (py_dict's 3.5M: tens of ms), not a row per block freed later.
void ImageRecorder::writeFinalizeSites() {
  std::vector<std::pair<uint64_t, uint64_t>> live(sites_.size());
  auto add = [&live](uint64_t, LiveBlock& b) {
    ++live[b.site].first;
    live[b.site].second += b.size();
  };
  heap_.forEach(add);
  for (Account& a : accounts_)
    if (a.blocks) a.blocks->forEach(add);
  std::vector<bool> seen(mappings_.size());
  for (auto& [start, range] : ranges_) {
    const Mapping& m = mappings_[range.mapping];
    if (m.remaining == 0 || seen[range.mapping]) continue;
    seen[range.mapping] = true;  // one mapping, however many pieces it was split into
    ++live[m.site].first;
    live[m.site].second += m.size;
  }
  for (size_t i = 0; i < live.size(); ++i)
    if (live[i].first)
      db_.insertPythonFinalizeSite(id_, sites_[i].stack_id, kinds::name(sites_[i].kind), live[i].first, live[i].second);
}

// A Python code object (wire.h PyCode): name, file and line table, for the symbolizer.
void ImageRecorder::onPyCode(const Decoded& r) {
  size_t name = r.tag & 0xffff, file = r.tag >> 16;
  if (name + file > r.text.size()) return;
  db_.insertPythonCode(id_, r.a, r.text.substr(0, name), r.text.substr(name, file),
                       static_cast<int32_t>(r.b), r.c, r.text.substr(name + file));
}

}  // namespace memledger::recorder
