// RingReader's side of the exit scan's mailbox (wire.h ScanBox, docs/leak-kinds.md).
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring_reader.h"

namespace memledger::recorder {

void RingReader::setScanMode(bool scan) {
  wire::scanBox(header_)->mode.store(scan ? 1 : 2, std::memory_order_release);
}

void RingReader::answerScan(bool scanned) {
  wire::ScanBox* box = wire::scanBox(header_);
  box->state.store(scanned ? 2 : 3, std::memory_order_release);
  // Not FUTEX_PRIVATE: the word is in the memfd both processes map.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&box->state), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

}  // namespace memledger::recorder
