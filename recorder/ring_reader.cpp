// The recorder's side of the wire (interpose/wire.h): the control socket images register on and
// the reader of one image's ring. The reader rejects anything that is not a ring of this wire
// version loudly ("invalid ring: ..."); it never trusts a count from shared memory to index its
// own buffers without a bound check.
#include "recorder/ring_reader.h"
#include "recorder/tsc_clock.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace memledger::recorder {
namespace {

// A registering image sends its Hello right after connecting; do not wait on a silent peer longer.
constexpr int kHelloTimeoutMs = 2000;
// How often drain() hands consumed slots back to the writers (one shared store per batch).
constexpr uint64_t kTailBatch = 256;
constexpr uint64_t kPrefetchAhead = 16;  // slots: ~8 records of a malloc/free storm
constexpr size_t kBurstRound = 4096;     // slots: a round at least this large is followed by another
// The largest payload one record can carry: 65535 text bytes (aux is 16 bits).
constexpr size_t kScratchWords = (65535 + sizeof(uint64_t) - 1) / sizeof(uint64_t) + 8;

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void parseCommand(const char* p, size_t n, Registration* reg) {
  // NUL-separated argv (each argument ends with a NUL; tolerate a missing last one).
  std::string out;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && p[j] != '\0') ++j;
    if (!out.empty()) out += ' ';
    out.append(p + i, j - i);
    i = j + 1;
  }
  reg->command = std::move(out);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ControlSocket

std::unique_ptr<ControlSocket> ControlSocket::listen(const std::string& dir, std::string* error) {
  std::string path = dir + "/" + wire::kSocketName;
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    if (error) *error = "control socket path too long: " + path;
    return nullptr;
  }
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    if (error) *error = errnoText("socket");
    return nullptr;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::chmod(path.c_str(), 0600) != 0 || ::listen(fd, 128) != 0) {
    if (error) *error = errnoText(("control socket " + path).c_str());
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<ControlSocket>(new ControlSocket(fd));
}

ControlSocket::~ControlSocket() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<Registration> ControlSocket::accept() {
  int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (conn < 0) return std::nullopt;
  pollfd pfd{conn, POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&pfd, 1, kHelloTimeoutMs);
  } while (ready < 0 && errno == EINTR);

  std::unique_ptr<char[]> buf(new char[wire::kMaxHelloMessage + 1]);
  iovec iov{buf.get(), wire::kMaxHelloMessage + 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n = -1;
  if (ready > 0) {
    do {
      n = ::recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
  }
  ::close(conn);

  // Collect every descriptor that came along so none leaks, whatever else is wrong.
  int fds[4];
  int nfds = 0;
  if (n >= 0) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count && nfds < 4; ++i) {
        std::memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      }
    }
  }
  auto reject = [&]() -> std::optional<Registration> {
    for (int i = 0; i < nfds; ++i) ::close(fds[i]);
    return std::nullopt;
  };
  if (n < static_cast<ssize_t>(sizeof(wire::Hello)) || n > static_cast<ssize_t>(wire::kMaxHelloMessage) ||
      (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || nfds != 1) {
    return reject();
  }
  Registration reg;
  std::memcpy(&reg.hello, buf.get(), sizeof(wire::Hello));
  const wire::Hello& h = reg.hello;
  size_t rest = static_cast<size_t>(n) - sizeof(wire::Hello);
  if (h.version != wire::kWireVersion || h.cmdline_bytes > rest || h.capacity == 0 ||
      (h.capacity & (h.capacity - 1)) != 0) {
    return reject();
  }
  const char* cmd = buf.get() + sizeof(wire::Hello);
  parseCommand(cmd, h.cmdline_bytes, &reg);
  reg.exe.assign(cmd + h.cmdline_bytes, rest - h.cmdline_bytes);
  while (!reg.exe.empty() && reg.exe.back() == '\0') reg.exe.pop_back();
  reg.memfd = fds[0];
  return reg;
}

// ---------------------------------------------------------------------------------------------
// RingReader

std::unique_ptr<RingReader> RingReader::map(Registration reg, std::string* error, bool leakScan) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<RingReader> {
    if (error) *error = "invalid ring: " + why;
    if (reg.memfd >= 0) ::close(reg.memfd);
    return nullptr;
  };
  const uint32_t cap = reg.hello.capacity;
  if (cap == 0 || (cap & (cap - 1)) != 0) return fail("capacity is not a power of two");
  struct stat st {};
  if (::fstat(reg.memfd, &st) != 0) return fail(errnoText("fstat"));
  // The lane count is in the header: map the header alone first, then the whole ring.
  if (static_cast<size_t>(st.st_size) < wire::kRingHeaderBytes) {
    return fail("size " + std::to_string(st.st_size) + " is smaller than a ring header");
  }
  void* head = ::mmap(nullptr, wire::kRingHeaderBytes, PROT_READ, MAP_SHARED, reg.memfd, 0);
  if (head == MAP_FAILED) return fail(errnoText("mmap"));
  const auto* h = static_cast<const wire::RingHeader*>(head);
  const uint32_t magic = h->magic, version = h->version, headerCap = h->capacity, lanes = h->lanes,
                 mainCap = h->mainCapacity, clock = h->clock;
  ::munmap(head, wire::kRingHeaderBytes);
  if (magic != wire::kRingMagic || version != wire::kWireVersion || headerCap != cap) {
    return fail("bad magic, version or capacity in the ring header");
  }
  if (lanes == 0 || lanes > wire::kMaxRingLanes || (lanes & (lanes - 1)) != 0) {
    return fail("bad lane count " + std::to_string(lanes) + " in the ring header");
  }
  if (mainCap == 0 || (mainCap & (mainCap - 1)) != 0 || mainCap > (1u << 26) || cap > (1u << 26)) {
    return fail("bad lane capacity in the ring header");
  }
  if (clock != wire::kClockMonotonic && clock != wire::kClockTsc) {
    return fail("unknown clock in the ring header");
  }
  size_t bytes = wire::ringBytes(cap, mainCap, lanes);
  if (static_cast<size_t>(st.st_size) != bytes) {
    return fail("size " + std::to_string(st.st_size) + " does not match " + std::to_string(lanes) +
                " lanes of " + std::to_string(cap) + " slots (lane 1: " + std::to_string(mainCap) +
                ")");
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, reg.memfd, 0);
  if (base == MAP_FAILED) return fail(errnoText("mmap"));
  ::close(reg.memfd);
  reg.memfd = -1;
  std::unique_ptr<RingReader> r(new RingReader());
  r->hello_ = reg.hello;
  r->base_ = base;
  r->bytes_ = bytes;
  r->header_ = static_cast<wire::RingHeader*>(base);
  r->setScanMode(leakScan);  // leak kinds: before anything is drained (ring_reader_scan.cpp)
  r->tsc_ = clock == wire::kClockTsc;
  r->laneCount_ = lanes;
  r->lanes_.reset(new Lane[lanes]);
  r->active_.reset(new uint32_t[lanes]);
  for (uint32_t l = 0; l < lanes; ++l) {
    Lane& lane = r->lanes_[l];
    lane.header = wire::laneHeader(base, l);
    lane.records = wire::laneRecords(base, cap, mainCap, lanes, l);
    lane.capacity = wire::laneCapacity(cap, mainCap, l);
    lane.mask = lane.capacity - 1;
    lane.tail = lane.published = lane.header->tail.load(std::memory_order_relaxed);
  }
  r->scratch_.reset(new uint64_t[kScratchWords]);
  return r;
}

RingReader::~RingReader() {
  if (base_) ::munmap(base_, bytes_);
}

// Decodes the record whose head is at `index` of `lane`. Returns the slots consumed, 0 when the
// record is not complete yet (only when !final). With `final`, slots that will never be
// published (their writer died) are skipped one by one, as are orphan continuations (wire.h,
// continuation stamps).
// Inlined into merge(), its one caller: as a call its entry and exit were ~20 instructions of
// every record's ~400.
[[gnu::always_inline]] inline size_t RingReader::decodeAt(Lane& lane, uint64_t index, RecordSink& sink, bool final) {
  const wire::Record& head = lane.records[index & lane.mask];
  uint32_t stamp = head.seq.load(std::memory_order_acquire);
  if (stamp != wire::headStamp(index)) {
    if (stamp == wire::continuationStamp(index)) return 1;  // orphan continuation: its head never came
    return final ? 1 : 0;
  }
  Decoded d{};
  d.type = head.type;
  d.kind = head.kind;
  d.aux = head.aux;
  d.tid = head.tid;
  d.ts = tsc_ ? clock_.toNs(head.ts) : head.ts;
  d.a = head.a;
  d.b = head.b;
  d.c = head.c;
  d.tag = head.tag;
  uint32_t conts = 0;
  if (d.type == wire::RecordType::Alloc || d.type == wire::RecordType::Free) {
    conts = (d.aux & wire::kAuxExtra) ? 1 : 0;  // a collector's EventExtra
  } else if (d.type == wire::RecordType::Stack) {
    if (d.aux > wire::kMaxFrames) return 1;  // corrupt: its continuations are skipped as orphans
    conts = wire::continuationSlotsForFrames(d.aux);
  } else {
    conts = wire::continuationSlotsFor(d.type, d.aux);
  }
  auto* bytes = reinterpret_cast<char*>(scratch_.get());
  for (uint32_t k = 1; k <= conts; ++k) {
    const wire::Record& c = lane.records[(index + k) & lane.mask];
    if (c.seq.load(std::memory_order_acquire) != wire::continuationStamp(index + k)) {
      if (!final) return 0;
      return k;  // the head and the published part are dropped; the rest skips as unpublished
    }
    // Frames travel 5 whole frames per slot (wire::kFramesPerContinuation), text 44 bytes.
    size_t chunk = d.type == wire::RecordType::Stack ? wire::kFramesPerContinuation * sizeof(uint64_t)
                                                     : wire::kContinuationBytes;
    std::memcpy(bytes + (k - 1) * chunk, reinterpret_cast<const char*>(&c) + sizeof(uint32_t), chunk);
  }
  if (d.type == wire::RecordType::Stack) {
    d.frames = std::span<const uint64_t>(scratch_.get(), d.aux);
  } else if (d.type == wire::RecordType::Alloc || d.type == wire::RecordType::Free) {
    if (conts) {
      wire::EventExtra extra;
      std::memcpy(&extra, bytes, sizeof extra);
      d.stream = extra.stream;
      d.event_ns = extra.event_ns;  // CLOCK_MONOTONIC (collector.h), never a TSC stamp
    }
    d.aux &= wire::kAuxOpMask;
  } else if (conts > 0) {
    d.text = std::string_view(bytes, d.aux);
  }
  // Payload was copied into scratch_: the sink may keep nothing past onRecord, but what it sees
  // cannot change under it once the tail hands these slots back to the writers.
  sink.onRecord(d);
  return 1 + conts;
}

void RingReader::handBack(Lane& lane) {
  if (lane.tail == lane.published) return;
  lane.header->tail.store(lane.tail, std::memory_order_release);
  lane.published = lane.tail;
}

// The lanes a round looks at: those the writers counted, never more than the ring has.
uint32_t RingReader::lanesUsed() const {
  uint32_t used = header_->lanesUsed.load(std::memory_order_acquire);
  return used == 0 || used > laneCount_ ? laneCount_ : used;
}

namespace {

// The reader's side of the bound (wire.h): its clock, read before it loads any head.
uint64_t readerNow(bool tsc) {
  if (tsc) {
    __builtin_ia32_lfence();
    uint64_t t = __builtin_ia32_rdtsc();
    __builtin_ia32_lfence();
    return t;
  }
  return monotonicNs();
}

}  // namespace

// One round: the lanes merged by stamp (wire.h). A lane takes part with the record at its tail
// (`key`, its stamp) while that record lies below the head loaded this round; a reserved record
// not published yet lowers the bound to its stamp and keeps its lane out of the round. The lane
// with the smallest key delivers records until one of them reaches another lane's key or the
// bound. `final` (the writers are gone) has no bound and skips what was never published.
size_t RingReader::merge(RecordSink& sink, size_t max, bool final) {
  if (tsc_) clock_ = TscClock::instance().refresh();  // after every record published so far was written
  uint64_t bound = final ? UINT64_MAX : readerNow(tsc_);
  const uint32_t used = lanesUsed();
  const bool hint = sink.wantsPrefetch();
  // Positions the lane at its next published record; false when it has none in this round.
  auto admit = [&](Lane& lane) {
    while (lane.tail < lane.limit) {
      const wire::Record& r = lane.records[lane.tail & lane.mask];
      uint32_t stamp = r.seq.load(std::memory_order_acquire);
      if (stamp == wire::headStamp(lane.tail)) {
        lane.key = r.ts;
        return true;
      }
      if (final || stamp == wire::continuationStamp(lane.tail)) {
        ++lane.tail;  // never to be published, or an orphan continuation
        continue;
      }
      // Reserved, not published: its stamp was written before the head we loaded.
      uint64_t ts = __atomic_load_n(&r.ts, __ATOMIC_RELAXED);
      if (ts < bound) bound = ts;
      return false;
    }
    return false;
  };
  uint32_t active = 0;
  for (uint32_t l = 0; l < used; ++l) {
    Lane& lane = lanes_[l];
    uint64_t head = lane.header->head.load(std::memory_order_acquire);
    // The writer never has more than a lane's capacity reserved; a larger span is not trusted.
    lane.limit = head;
    if (head < lane.tail) lane.limit = lane.tail;
    else if (head - lane.tail > lane.capacity) lane.limit = lane.tail + lane.capacity;
    if (admit(lane)) active_[active++] = l;
  }
  size_t consumed = 0;
  while (active > 0 && consumed < max) {
    uint32_t best = 0;
    for (uint32_t k = 1; k < active; ++k)
      if (lanes_[active_[k]].key < lanes_[active_[best]].key) best = k;
    Lane& lane = lanes_[active_[best]];
    if (!final && lane.key >= bound) break;
    uint64_t until = final ? UINT64_MAX : bound;
    for (uint32_t k = 0; k < active; ++k)
      if (k != best && lanes_[active_[k]].key < until) until = lanes_[active_[k]].key;
    bool keep = true;
    while (consumed < max) {
      // A live set of millions of blocks misses the cache on every lookup: name the address of
      // the record kPrefetchAhead slots on, so its miss overlaps with the work on this one.
      uint64_t ahead = lane.tail + kPrefetchAhead;
      if (hint && ahead < lane.limit && published(lane, ahead)) sink.prefetch(lane.records[ahead & lane.mask]);
      // ... and the slots further on, still in the writer's cache: their lines travel meanwhile.
      __builtin_prefetch(&lane.records[(ahead + kPrefetchAhead) & lane.mask]);
      size_t slots = decodeAt(lane, lane.tail, sink, final);
      if (slots == 0) {  // published head, continuation still being written
        if (lane.key < bound) bound = lane.key;
        keep = false;
        break;
      }
      lane.tail += slots;
      consumed += slots;
      if (lane.tail - lane.published >= kTailBatch) handBack(lane);
      if (!admit(lane)) {
        keep = false;
        break;
      }
      if (lane.key >= until) break;  // another lane's turn (the outer loop picks the smallest)
    }
    if (!keep) active_[best] = active_[--active];
  }
  for (uint32_t l = 0; l < used; ++l) handBack(lanes_[l]);
  return consumed;
}

// A round takes only what was reserved when it began. After a large one the writers are in a
// burst and have reserved more meanwhile: another round follows, or the recorder would sit out
// its poll timeout while the lanes fill. Smaller rounds end the drain, so the reader does not
// chase the writers slot by slot (their lines would bounce between the cores).
size_t RingReader::drain(RecordSink& sink, size_t max) {
  size_t total = 0;
  while (total < max) {
    size_t n = merge(sink, max - total, false);
    total += n;
    if (n < kBurstRound) break;
  }
  return total;
}

size_t RingReader::drainFinal(RecordSink& sink) { return merge(sink, SIZE_MAX, true); }

void RingReader::heartbeat(uint64_t now_ns) {
  header_->heartbeat_ns.store(now_ns, std::memory_order_release);
}

uint64_t RingReader::waitNs() const { return header_->wait_ns.load(std::memory_order_relaxed); }

bool RingReader::detached() const { return header_->detached.load(std::memory_order_acquire) != 0; }

uint32_t RingReader::lost() const { return header_->lost.load(std::memory_order_relaxed); }

uint64_t RingReader::pending() const {
  uint64_t total = 0;
  for (uint32_t l = 0, used = lanesUsed(); l < used; ++l) {
    uint64_t head = lanes_[l].header->head.load(std::memory_order_acquire);
    uint64_t tail = lanes_[l].header->tail.load(std::memory_order_acquire);
    if (head > tail) total += head - tail;
  }
  return total;
}

}  // namespace memledger::recorder
