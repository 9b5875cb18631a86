// Reading side of the wire (interpose/wire.h): the control socket that images register on, and
// the reader of one image's ring. Decodes records (continuation slots assembled) and hands them
// to a RecordSink in ring order. Owned by the transport; the recorder core only sees Decoded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../interpose/wire.h"
#include "tsc_clock.h"

namespace memledger::recorder {

// One record as the writer meant it, continuation payload assembled.
struct Decoded {
  wire::RecordType type;
  wire::AllocKind kind;
  uint16_t aux;
  uint32_t tid;
  uint64_t ts;  // CLOCK_MONOTONIC ns (TSC stamps already converted)
  uint64_t a, b, c;
  uint32_t tag = 0;        // Alloc/Free: device number or pool id (wire.h)
  uint64_t event_ns = 0;   // a collector's own event time (CLOCK_MONOTONIC), 0: none
  uint64_t stream = 0;     // a collector's CUDA stream, 0: none
  std::span<const uint64_t> frames;  // Stack: return addresses, innermost first (hook frames removed)
  std::string_view text;             // Module: path; Marker: name; PoolCreate: pool name
};

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void onRecord(const Decoded& r) = 0;
  // A record a few slots ahead of the one being delivered, as it sits in the ring (not decoded:
  // timestamp raw, no payload): a sink may start fetching the memory it will touch for it.
  // Records still arrive at onRecord strictly in order.
  virtual void prefetch(const wire::Record& ahead) { (void)ahead; }
  // Asked once per round: whether prefetch() is worth calling for this round's records (a live
  // set that fits in the cache gains nothing, and the hint cost ~20 instructions a record).
  virtual bool wantsPrefetch() const { return false; }
};

// A registration received on the control socket.
struct Registration {
  wire::Hello hello;
  std::string command;  // argv joined by spaces
  std::string exe;
  int memfd = -1;  // owned by the receiver
};

// The listening control socket in the recorder's private directory.
class ControlSocket {
 public:
  // Creates `dir`/ctl.sock (0600) and listens. Returns nullptr and sets *error on failure.
  static std::unique_ptr<ControlSocket> listen(const std::string& dir, std::string* error);
  ~ControlSocket();
  int fd() const { return fd_; }  // poll for POLLIN: a new connection is waiting
  // Accepts one pending connection and receives its Hello and memfd (non-blocking; nullopt when
  // nothing is pending or the message was malformed).
  std::optional<Registration> accept();

 private:
  explicit ControlSocket(int fd) : fd_(fd) {}
  int fd_;
};

class RingReader {
 public:
  // Maps the ring of a registration (takes ownership of reg.memfd). nullptr + *error when the
  // memfd is not a valid ring of this wire version. leakScan: this reader answers the exit scan
  // (wire.h ScanBox; a reader that does not, tells the process not to ask).
  static std::unique_ptr<RingReader> map(Registration reg, std::string* error, bool leakScan = false);
  ~RingReader();

  // Delivers up to `max` published records, the lanes merged in stamp order below this round's
  // bound (wire.h); returns how many slots were consumed.
  size_t drain(RecordSink& sink, size_t max);
  // The writer is gone (its process died or exec'd): deliver everything published, merged,
  // skipping slots that were reserved but never published (a thread killed mid-write).
  size_t drainFinal(RecordSink& sink);

  void heartbeat(uint64_t now_ns);  // tells writers the recorder is alive
  uint64_t waitNs() const;          // total time writers waited for ring space
  bool detached() const;
  uint32_t lost() const;
  uint64_t pending() const;         // reserved but not yet consumed, all lanes
  const wire::Hello& hello() const { return hello_; }
  // ---- leak kinds (ring_reader_scan.cpp): the header's ScanBox (wire.h) ----
  void setScanMode(bool scan);       // tells the process whether to ask for the exit scan
  void answerScan(bool scanned);     // wakes the process waiting in its exit

 private:
  struct Lane {
    wire::LaneHeader* header = nullptr;
    wire::Record* records = nullptr;
    uint32_t capacity = 0;
    uint32_t mask = 0;
    uint64_t tail = 0;       // next slot to read (the shared tail lags by up to a batch)
    uint64_t published = 0;  // the tail as last stored for the writers
    uint64_t limit = 0;      // this round: the head as loaded (slots below are reserved)
    uint64_t key = 0;        // this round: the stamp of the record at tail (published)
  };
  RingReader() = default;
  size_t merge(RecordSink& sink, size_t max, bool final);
  size_t decodeAt(Lane& lane, uint64_t index, RecordSink& sink, bool final);
  static bool published(const Lane& lane, uint64_t index) {
    return lane.records[index & lane.mask].seq.load(std::memory_order_acquire) ==
           wire::headStamp(index);
  }
  void handBack(Lane& lane);
  uint32_t lanesUsed() const;
  wire::Hello hello_{};
  void* base_ = nullptr;
  size_t bytes_ = 0;
  wire::RingHeader* header_ = nullptr;
  std::unique_ptr<Lane[]> lanes_;
  uint32_t laneCount_ = 0;
  bool tsc_ = false;  // records carry TSC stamps (wire.h RingClock)
  TscClock::Line clock_{};  // the TSC mapping for the batch being drained
  std::unique_ptr<uint64_t[]> scratch_;  // assembled frames / text of the record being decoded
  std::unique_ptr<uint32_t[]> active_;   // this round: lanes with a published record below the bound
};

}  // namespace memledger::recorder
