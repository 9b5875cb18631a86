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

std::unique_ptr<RingReader> RingReader::map(Registration reg, std::string* error) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<RingReader> {
    if (error) *error = "invalid ring: " + why;
    if (reg.memfd >= 0) ::close(reg.memfd);
    return nullptr;
  };
  const uint32_t cap = reg.hello.capacity;
  if (cap == 0 || (cap & (cap - 1)) != 0) return fail("capacity is not a power of two");
  struct stat st {};
  if (::fstat(reg.memfd, &st) != 0) return fail(errnoText("fstat"));
  size_t bytes = wire::ringBytes(cap);
  if (static_cast<size_t>(st.st_size) != bytes) {
    return fail("size " + std::to_string(st.st_size) + " does not match " + std::to_string(cap) + " slots");
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, reg.memfd, 0);
  if (base == MAP_FAILED) return fail(errnoText("mmap"));
  ::close(reg.memfd);
  reg.memfd = -1;
  auto* header = static_cast<wire::RingHeader*>(base);
  if (header->magic != wire::kRingMagic || header->version != wire::kWireVersion ||
      header->capacity != cap) {
    ::munmap(base, bytes);
    return fail("bad magic, version or capacity in the ring header");
  }
  std::unique_ptr<RingReader> r(new RingReader());
  r->hello_ = reg.hello;
  r->base_ = base;
  r->bytes_ = bytes;
  r->header_ = header;
  if (header->clock != wire::kClockMonotonic && header->clock != wire::kClockTsc) {
    return fail("unknown clock in the ring header");
  }
  r->tsc_ = header->clock == wire::kClockTsc;
  r->records_ = wire::ringRecords(base);
  r->mask_ = cap - 1;
  r->scratch_.reset(new uint64_t[kScratchWords]);
  return r;
}

RingReader::~RingReader() {
  if (base_) ::munmap(base_, bytes_);
}

// Decodes the record whose head is at `index`. Returns the slots consumed, 0 when the record is
// not complete yet (only when !final). With `final`, slots that will never be published (their
// writer died) are skipped one by one, as are orphan continuations (wire.h, continuation stamps).
size_t RingReader::decodeAt(uint64_t index, RecordSink& sink, bool final) {
  const wire::Record& head = records_[index & mask_];
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
  uint32_t conts = 0;
  if (d.type == wire::RecordType::Stack) {
    if (d.aux > wire::kMaxFrames) return 1;  // corrupt: its continuations are skipped as orphans
    conts = wire::continuationSlotsForFrames(d.aux);
  } else if (d.type == wire::RecordType::Module || d.type == wire::RecordType::Marker) {
    conts = wire::continuationSlotsForText(d.aux);
  }
  auto* bytes = reinterpret_cast<char*>(scratch_.get());
  for (uint32_t k = 1; k <= conts; ++k) {
    const wire::Record& c = records_[(index + k) & mask_];
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
  } else if (conts > 0) {
    d.text = std::string_view(bytes, d.aux);
  }
  // Payload was copied into scratch_: the sink may keep nothing past onRecord, but what it sees
  // cannot change under it once the tail hands these slots back to the writers.
  sink.onRecord(d);
  return 1 + conts;
}

size_t RingReader::drain(RecordSink& sink, size_t max) {
  if (tsc_) clock_ = TscClock::instance().refresh();  // after every record published so far was written
  uint64_t tail = header_->tail.load(std::memory_order_relaxed);
  uint64_t start = tail;
  uint64_t published = tail;
  while (tail - start < max) {
    // A live set of millions of blocks misses the cache on every lookup: name the address of the
    // record kPrefetchAhead slots on, so its miss overlaps with the work on this one.
    const wire::Record& ahead = records_[(tail + kPrefetchAhead) & mask_];
    if (ahead.seq.load(std::memory_order_acquire) == wire::headStamp(tail + kPrefetchAhead)) sink.prefetch(ahead);
    size_t used = decodeAt(tail, sink, false);
    if (used == 0) break;
    tail += used;
    if (tail - published >= kTailBatch) {
      header_->tail.store(tail, std::memory_order_release);
      published = tail;
    }
  }
  if (tail != published) header_->tail.store(tail, std::memory_order_release);
  return static_cast<size_t>(tail - start);
}

size_t RingReader::drainFinal(RecordSink& sink) {
  if (tsc_) clock_ = TscClock::instance().refresh();
  uint64_t tail = header_->tail.load(std::memory_order_relaxed);
  uint64_t start = tail;
  uint64_t head = header_->head.load(std::memory_order_acquire);
  // Writers that died waiting for room reserved past tail + capacity and never wrote there.
  while (tail < head) {
    size_t used = decodeAt(tail, sink, true);
    tail += used;
  }
  header_->tail.store(tail, std::memory_order_release);
  return static_cast<size_t>(tail - start);
}

void RingReader::heartbeat(uint64_t now_ns) {
  header_->heartbeat_ns.store(now_ns, std::memory_order_release);
}

uint64_t RingReader::waitNs() const { return header_->wait_ns.load(std::memory_order_relaxed); }

bool RingReader::detached() const { return header_->detached.load(std::memory_order_acquire) != 0; }

uint32_t RingReader::lost() const { return header_->lost.load(std::memory_order_relaxed); }

uint64_t RingReader::pending() const {
  uint64_t head = header_->head.load(std::memory_order_acquire);
  uint64_t tail = header_->tail.load(std::memory_order_acquire);
  return head > tail ? head - tail : 0;
}

}  // namespace memledger::recorder
