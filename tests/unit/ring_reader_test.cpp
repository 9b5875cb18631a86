// RingReader and ControlSocket against rings and Hello messages written by hand, exactly as
// wire.h describes them: in-order decoding, continuation assembly, the stall on an unpublished
// slot, wrap-around, what drainFinal skips, the merge of lanes by stamp and the bound a reserved
// record sets, and what the control socket refuses.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

#include "ring_test_support.h"

using namespace memledger;
using namespace memledger::ringtest;

namespace {

// A ring made in this process: the test plays the writers. Every reservation takes the next
// stamp of the ring's own clock (1001, 1002, ...) unless given one; lane 0 unless told.
class HandRing {
 public:
  explicit HandRing(uint32_t capacity, uint32_t magic = wire::kRingMagic, size_t extraBytes = 0,
                    uint32_t lanes = 1)
      : lanes_(lanes) {
    bytes_ = wire::ringBytes(capacity, capacity, lanes);
    fd_ = memfd_create("handring", MFD_CLOEXEC);
    EXPECT_EQ(ftruncate(fd_, static_cast<off_t>(bytes_ + extraBytes)), 0);
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    header()->magic = magic;
    header()->version = wire::kWireVersion;
    header()->capacity = capacity;
    header()->pid = 4242;
    header()->lanes = lanes;
    header()->mainCapacity = capacity;
    header()->lanesUsed = lanes;
    capacity_ = capacity;
  }
  ~HandRing() { munmap(base_, bytes_); }
  wire::RingHeader* header() { return static_cast<wire::RingHeader*>(base_); }
  wire::LaneHeader* lane(uint32_t l = 0) { return wire::laneHeader(base_, l); }
  wire::Record& slot(uint64_t i, uint32_t l = 0) {
    return wire::laneRecords(base_, capacity_, capacity_, lanes_, l)[i & (capacity_ - 1)];
  }
  void useLane(uint32_t l) { lane_ = l; }  // where the next reservations go

  recorder::Registration registration() {
    recorder::Registration reg;
    reg.hello.version = wire::kWireVersion;
    reg.hello.pid = 4242;
    reg.hello.capacity = capacity_;
    reg.memfd = dup(fd_);
    return reg;
  }
  // As the preload does: the stamp goes into the first slot before the head moves past it.
  uint64_t reserve(uint32_t n, uint64_t ts = 0) {
    uint64_t i = lane(lane_)->head.load();
    slot(i, lane_).ts = ts ? ts : ++clock_;
    lane(lane_)->head.store(i + n);
    return i;
  }
  void head(uint64_t i, wire::RecordType t, uint16_t aux, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
    wire::Record& r = slot(i, lane_);
    r.type = t;
    r.kind = wire::AllocKind::Malloc;
    r.aux = aux;
    r.tid = 7 + lane_;
    r.a = a;
    r.b = b;
    r.c = c;
    r.seq.store(wire::headStamp(i), std::memory_order_release);
  }
  void continuations(uint64_t first, const void* data, size_t len) {
    const char* p = static_cast<const char*>(data);
    for (uint64_t i = first; len > 0; ++i) {
      size_t n = std::min(len, wire::kContinuationBytes);
      std::memcpy(reinterpret_cast<char*>(&slot(i, lane_)) + 4, p, n);
      slot(i, lane_).seq.store(wire::continuationStamp(i), std::memory_order_release);
      p += n;
      len -= n;
    }
  }
  void frameContinuations(uint64_t first, const uint64_t* frames, size_t n) {
    for (uint64_t i = first; n > 0; ++i) {
      size_t k = std::min(n, wire::kFramesPerContinuation);
      std::memcpy(reinterpret_cast<char*>(&slot(i, lane_)) + 4, frames, k * 8);
      slot(i, lane_).seq.store(wire::continuationStamp(i), std::memory_order_release);
      frames += k;
      n -= k;
    }
  }
  // One complete record of each shape the preload writes.
  uint64_t alloc(uint64_t addr, uint64_t size, uint64_t ts = 0) {
    uint64_t i = reserve(1, ts);
    head(i, wire::RecordType::Alloc, 0, addr, size, 0);
    return i;
  }
  uint64_t stack(const std::vector<uint64_t>& frames) {
    uint32_t conts = wire::continuationSlotsForFrames(static_cast<uint32_t>(frames.size()));
    uint64_t i = reserve(1 + conts);
    frameContinuations(i + 1, frames.data(), frames.size());
    head(i, wire::RecordType::Stack, static_cast<uint16_t>(frames.size()),
         wire::hashFrames(frames.data(), static_cast<int>(frames.size())));
    return i;
  }
  uint64_t text(wire::RecordType t, const std::string& s) {
    uint32_t conts = wire::continuationSlotsForText(static_cast<uint32_t>(s.size()));
    uint64_t i = reserve(1 + conts);
    continuations(i + 1, s.data(), s.size());
    head(i, t, static_cast<uint16_t>(s.size()), 1, 2, 3);
    return i;
  }

 private:
  int fd_ = -1;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  uint32_t capacity_ = 0;
  uint32_t lanes_ = 1;
  uint32_t lane_ = 0;
  uint64_t clock_ = 1000;
};

std::unique_ptr<recorder::RingReader> mapOrFail(HandRing& ring) {
  std::string err;
  auto r = recorder::RingReader::map(ring.registration(), &err);
  EXPECT_NE(r, nullptr) << err;
  return r;
}

TEST(RingReader, AssemblesContinuationsInOrder) {
  HandRing ring(64);
  std::vector<uint64_t> frames = {0x401000, 0x402000, 0x403000, 0x404000, 0x405000, 0x406000, 0x407000};
  std::string path(100, 'p');
  path[0] = '/';
  ring.text(wire::RecordType::Module, path);
  ring.stack(frames);
  ring.alloc(0x1000, 64);
  ring.text(wire::RecordType::Marker, "load");
  std::vector<uint64_t> deep(wire::kMaxFrames);
  for (size_t k = 0; k < deep.size(); ++k) deep[k] = 0x500000 + k;
  ring.stack(deep);
  auto reader = mapOrFail(ring);
  ASSERT_TRUE(reader);
  Image img;
  Collector sink(&img, true);
  size_t used = reader->drain(sink, 1000);
  EXPECT_EQ(used, (1u + 3) + (1u + 2) + 1 + (1u + 1) + (1u + 26));
  ASSERT_EQ(img.recs.size(), 5u);
  EXPECT_EQ(img.recs[4].frames, deep);
  EXPECT_EQ(img.recs[0].type, RecordType::Module);
  EXPECT_EQ(img.recs[0].text, path);
  EXPECT_EQ(img.recs[0].c, 3u);
  EXPECT_EQ(img.recs[1].type, RecordType::Stack);
  EXPECT_EQ(img.recs[1].frames, frames);
  EXPECT_EQ(img.recs[2].type, RecordType::Alloc);
  EXPECT_EQ(img.recs[2].b, 64u);
  EXPECT_EQ(img.recs[3].text, "load");
  EXPECT_EQ(reader->pending(), 0u);
  EXPECT_EQ(ring.lane()->tail.load(), used);
}

TEST(RingReader, StopsAtAnUnpublishedSlotUntilItIsPublished) {
  HandRing ring(64);
  ring.alloc(0x1000, 1);
  uint64_t held = ring.reserve(1);  // a writer between reserve and publish
  ring.alloc(0x3000, 3);
  auto reader = mapOrFail(ring);
  Image img;
  Collector sink(&img, true);
  EXPECT_EQ(reader->drain(sink, 1000), 1u);
  EXPECT_EQ(reader->pending(), 2u);
  EXPECT_EQ(reader->drain(sink, 1000), 0u);
  ring.head(held, RecordType::Free, 0, 0x1000);
  EXPECT_EQ(reader->drain(sink, 1000), 2u);
  ASSERT_EQ(img.recs.size(), 3u);
  EXPECT_EQ(img.recs[1].type, RecordType::Free);
  EXPECT_EQ(img.recs[2].a, 0x3000u);
}

TEST(RingReader, StopsInsideARecordWhoseContinuationIsNotPublishedYet) {
  HandRing ring(64);
  uint64_t i = ring.reserve(3);
  uint64_t frames[6] = {1, 2, 3, 4, 5, 6};
  ring.frameContinuations(i + 1, frames, 5);  // first continuation only
  ring.head(i, RecordType::Stack, 6, 99);
  auto reader = mapOrFail(ring);
  Image img;
  Collector sink(&img, true);
  EXPECT_EQ(reader->drain(sink, 1000), 0u);
  ring.frameContinuations(i + 2, frames + 5, 1);
  EXPECT_EQ(reader->drain(sink, 1000), 3u);
  ASSERT_EQ(img.recs.size(), 1u);
  EXPECT_EQ(img.recs[0].frames, std::vector<uint64_t>(frames, frames + 6));
}

TEST(RingReader, WrapsAroundManyLaps) {
  HandRing ring(64);
  auto reader = mapOrFail(ring);
  Image img;
  Collector sink(&img, true);
  uint64_t expected = 0;
  for (int batch = 0; batch < 50; ++batch) {
    for (int k = 0; k < 20; ++k) {
      ring.alloc(0x10000 + expected * 16, expected);
      if (k % 7 == 0) ring.stack({expected, expected + 1, expected + 2, expected + 3, expected + 4, expected + 5});
      ++expected;
    }
    reader->drain(sink, 1 << 20);
    EXPECT_EQ(reader->pending(), 0u);
  }
  uint64_t next = 0;
  for (const Rec& r : img.recs) {
    if (r.type != RecordType::Alloc) {
      ASSERT_EQ(r.frames.size(), 6u);
      EXPECT_EQ(r.frames[0] + 1, next);
      continue;
    }
    EXPECT_EQ(r.b, next++);
  }
  EXPECT_EQ(next, expected);
}

TEST(RingReader, MaxLimitsOneCall) {
  HandRing ring(64);
  for (int i = 0; i < 10; ++i) ring.alloc(0x1000 + i, i);
  auto reader = mapOrFail(ring);
  Image img;
  Collector sink(&img, true);
  EXPECT_EQ(reader->drain(sink, 4), 4u);
  EXPECT_EQ(reader->pending(), 6u);
  EXPECT_EQ(reader->drain(sink, 100), 6u);
  EXPECT_EQ(img.recs.size(), 10u);
}

// A thread killed mid-write leaves slots reserved and never published: after the process is gone
// drainFinal skips exactly those and delivers everything around them.
TEST(RingReader, DrainFinalSkipsWhatADeadWriterLeftHalfDone) {
  HandRing ring(64);
  ring.alloc(0x1000, 1);
  // A Stack record whose head was never published, its continuations were.
  uint64_t orphan = ring.reserve(3);
  uint64_t frames[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ring.frameContinuations(orphan + 1, frames, 8);
  ring.alloc(0x2000, 2);
  // A Stack record whose head was published but its second continuation was not.
  uint64_t half = ring.reserve(3);
  ring.frameContinuations(half + 1, frames, 5);
  ring.head(half, RecordType::Stack, 8, 77);
  ring.alloc(0x3000, 3);
  ring.reserve(1);  // reserved, never written
  ring.alloc(0x4000, 4);
  auto reader = mapOrFail(ring);
  Image img;
  Collector sink(&img, true);
  EXPECT_EQ(reader->drain(sink, 1000), 1u) << "a live ring stalls at the first unpublished slot";
  reader->drainFinal(sink);
  ASSERT_EQ(img.recs.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(img.recs[i].type, RecordType::Alloc);
    EXPECT_EQ(img.recs[i].b, i + 1);
  }
  EXPECT_EQ(reader->pending(), 0u);
}

// ---- lanes (wire.h): merged by stamp, below the bound a reserved record sets

// Addresses of the delivered Allocs, in delivery order.
std::vector<uint64_t> allocOrder(const Image& img) {
  std::vector<uint64_t> out;
  for (const Rec& r : img.recs)
    if (r.type == RecordType::Alloc) out.push_back(r.a);
  return out;
}

TEST(RingReader, MergesLanesInStampOrder) {
  HandRing ring(64, wire::kRingMagic, 0, 4);
  // Three threads' lanes, stamps interleaved; the address is the stamp.
  const std::vector<std::pair<uint32_t, uint64_t>> writes = {
      {1, 10}, {2, 11}, {1, 12}, {3, 13}, {3, 14}, {2, 15}, {1, 16}, {0, 17}, {2, 18}, {1, 19}};
  for (auto [lane, ts] : writes) {
    ring.useLane(lane);
    ring.alloc(ts, 1, ts);
  }
  auto reader = mapOrFail(ring);
  Image img;
  Collector sink(&img, true);
  EXPECT_EQ(reader->drain(sink, 1000), writes.size());
  EXPECT_EQ(allocOrder(img),
            (std::vector<uint64_t>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
  EXPECT_EQ(reader->pending(), 0u);
  for (uint32_t l = 0; l < 4; ++l) EXPECT_EQ(ring.lane(l)->tail.load(), ring.lane(l)->head.load());
}

// A free reserved (stamped) on one lane and not published yet: another lane's allocation
// stamped after it may be the same address reused, so it must wait; one stamped before it not.
TEST(RingReader, AReservedRecordHoldsBackLaterStampsOnOtherLanes) {
  HandRing ring(64, wire::kRingMagic, 0, 4);
  ring.useLane(1);
  ring.alloc(0x1000, 1, 10);
  uint64_t freeSlot = ring.reserve(1, 20);  // between reserve and publish: the real free runs
  ring.useLane(2);
  ring.alloc(0x2000, 2, 15);
  ring.alloc(0x1000, 3, 25);  // the address the free releases, handed out again
  auto reader = mapOrFail(ring);
  Image img;
  Collector sink(&img, true);
  EXPECT_EQ(reader->drain(sink, 1000), 2u);
  EXPECT_EQ(allocOrder(img), (std::vector<uint64_t>{0x1000, 0x2000}));
  EXPECT_EQ(reader->drain(sink, 1000), 0u) << "stamp 25 is above the reserved free's 20";
  ring.useLane(1);
  ring.head(freeSlot, RecordType::Free, 0, 0x1000);
  EXPECT_EQ(reader->drain(sink, 1000), 2u);
  ASSERT_EQ(img.recs.size(), 4u);
  EXPECT_EQ(img.recs[2].type, RecordType::Free);
  EXPECT_EQ(img.recs[3].type, RecordType::Alloc);
  EXPECT_EQ(img.recs[3].b, 3u);
}

// Records stamped after the reader's clock read of a round wait for a later round; the lanes
// a round sees are those counted in lanesUsed.
TEST(RingReader, TakesOnlyWhatWasStampedBeforeTheRoundBegan) {
  HandRing ring(64, wire::kRingMagic, 0, 4);
  ring.header()->lanesUsed = 2;
  ring.useLane(1);
  ring.alloc(0x1000, 1, 10);
  ring.alloc(0x2000, 2, UINT64_MAX - 1);  // a stamp no clock read reaches
  ring.useLane(3);
  ring.alloc(0x3000, 3, 5);  // on a lane the ring does not count yet
  auto reader = mapOrFail(ring);
  Image img;
  Collector sink(&img, true);
  EXPECT_EQ(reader->drain(sink, 1000), 1u);
  EXPECT_EQ(reader->drain(sink, 1000), 0u);
  ring.header()->lanesUsed = 4;
  EXPECT_EQ(reader->drain(sink, 1000), 1u);
  reader->drainFinal(sink);  // the writers are gone: no bound
  EXPECT_EQ(allocOrder(img), (std::vector<uint64_t>{0x1000, 0x3000, 0x2000}));
}

TEST(RingReader, DrainFinalMergesLanesAndSkipsWhatWasNeverPublished) {
  HandRing ring(64, wire::kRingMagic, 0, 2);
  ring.useLane(1);
  ring.alloc(0x1, 1, 1);
  ring.reserve(1, 2);  // its thread died between reserve and publish
  ring.alloc(0x4, 1, 4);
  ring.useLane(0);
  ring.alloc(0x3, 1, 3);
  ring.reserve(2, 5);  // a lane-0 writer died too, after another thread reserved behind it
  ring.alloc(0x6, 1, 6);
  auto reader = mapOrFail(ring);
  Image img;
  Collector sink(&img, true);
  EXPECT_EQ(reader->drain(sink, 1000), 1u) << "only stamp 1 lies below the reserved stamp 2";
  reader->drainFinal(sink);
  EXPECT_EQ(allocOrder(img), (std::vector<uint64_t>{0x1, 0x3, 0x4, 0x6}));
  EXPECT_EQ(reader->pending(), 0u);
}

TEST(RingReader, RejectsABadLaneCount) {
  for (uint32_t lanes : {0u, 3u, wire::kMaxRingLanes * 2}) {
    HandRing ring(64, wire::kRingMagic, 0, 1);
    ring.header()->lanes = lanes;
    std::string err;
    EXPECT_EQ(recorder::RingReader::map(ring.registration(), &err), nullptr) << lanes;
    EXPECT_NE(err.find("lane"), std::string::npos) << err;
  }
}

TEST(RingReader, ReportsWriterCounters) {
  HandRing ring(64);
  ring.header()->wait_ns = 12345;
  ring.header()->detached = 1;
  ring.header()->lost = 9;
  auto reader = mapOrFail(ring);
  EXPECT_EQ(reader->waitNs(), 12345u);
  EXPECT_TRUE(reader->detached());
  EXPECT_EQ(reader->lost(), 9u);
  reader->heartbeat(555);
  EXPECT_EQ(ring.header()->heartbeat_ns.load(), 555u);
  EXPECT_EQ(reader->hello().pid, 4242u);
}

TEST(RingReader, RejectsWhatIsNotARing) {
  std::string err;
  HandRing badMagic(64, 0x12345678);
  EXPECT_EQ(recorder::RingReader::map(badMagic.registration(), &err), nullptr);
  EXPECT_NE(err.find("invalid ring"), std::string::npos) << err;
  HandRing badSize(64, wire::kRingMagic, 4096);
  err.clear();
  EXPECT_EQ(recorder::RingReader::map(badSize.registration(), &err), nullptr);
  EXPECT_NE(err.find("size"), std::string::npos) << err;
  HandRing ok(64);
  auto reg = ok.registration();
  reg.hello.capacity = 128;  // claims a bigger ring than the memfd holds
  EXPECT_EQ(recorder::RingReader::map(std::move(reg), &err), nullptr);
  reg = ok.registration();
  reg.hello.capacity = 48;
  EXPECT_EQ(recorder::RingReader::map(std::move(reg), &err), nullptr);
}

// ---- control socket

struct SocketDir {
  std::string dir;
  SocketDir() {
    char tmpl[] = "/tmp/memledger-ctltest.XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~SocketDir() {
    unlink((dir + "/" + wire::kSocketName).c_str());
    rmdir(dir.c_str());
  }
};

// Sends one message like the preload does; fd < 0 sends none.
void sendHello(const std::string& dir, const std::string& payload, int fd) {
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = dir + "/" + wire::kSocketName;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  iovec iov{const_cast<char*>(payload.data()), payload.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  ASSERT_EQ(sendmsg(s, &msg, 0), static_cast<ssize_t>(payload.size()));
  close(s);
}

std::string helloBytes(uint32_t version, const std::string& cmdline, const std::string& exe) {
  wire::Hello h{};
  h.version = version;
  h.pid = 77;
  h.ppid = 1;
  h.capacity = 64;
  h.forked = 1;
  h.cmdline_bytes = static_cast<uint32_t>(cmdline.size());
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + cmdline + exe;
}

TEST(ControlSocket, AcceptsAHelloWithItsMemfd) {
  SocketDir d;
  std::string err;
  auto sock = recorder::ControlSocket::listen(d.dir, &err);
  ASSERT_TRUE(sock) << err;
  EXPECT_FALSE(sock->accept().has_value()) << "nothing pending";
  HandRing ring(64);
  auto reg0 = ring.registration();
  sendHello(d.dir, helloBytes(wire::kWireVersion, std::string("prog\0-x\0a b\0", 12), "/usr/bin/prog"),
            reg0.memfd);
  close(reg0.memfd);
  auto reg = sock->accept();
  ASSERT_TRUE(reg.has_value());
  EXPECT_EQ(reg->hello.pid, 77u);
  EXPECT_EQ(reg->hello.forked, 1u);
  EXPECT_EQ(reg->command, "prog -x a b");
  EXPECT_EQ(reg->exe, "/usr/bin/prog");
  ASSERT_GE(reg->memfd, 0);
  auto reader = recorder::RingReader::map(std::move(*reg), &err);
  EXPECT_TRUE(reader) << err;
}

TEST(ControlSocket, RefusesOtherVersionsAndMessagesWithoutARing) {
  SocketDir d;
  std::string err;
  auto sock = recorder::ControlSocket::listen(d.dir, &err);
  ASSERT_TRUE(sock) << err;
  HandRing ring(64);
  auto reg0 = ring.registration();
  sendHello(d.dir, helloBytes(wire::kWireVersion + 1, "p", ""), reg0.memfd);
  EXPECT_FALSE(sock->accept().has_value());
  sendHello(d.dir, helloBytes(wire::kWireVersion, "p", ""), -1);
  EXPECT_FALSE(sock->accept().has_value());
  sendHello(d.dir, helloBytes(wire::kWireVersion, "p", "").substr(0, 20), reg0.memfd);
  EXPECT_FALSE(sock->accept().has_value());
  std::string lying = helloBytes(wire::kWireVersion, "p", "");
  reinterpret_cast<wire::Hello*>(lying.data())->cmdline_bytes = 5000;
  sendHello(d.dir, lying, reg0.memfd);
  EXPECT_FALSE(sock->accept().has_value());
  close(reg0.memfd);
}

TEST(ControlSocket, ListenFailsClearlyOnAMissingDirectory) {
  std::string err;
  EXPECT_EQ(recorder::ControlSocket::listen("/nonexistent/memledger", &err), nullptr);
  EXPECT_NE(err.find("ctl.sock"), std::string::npos) << err;
}

}  // namespace
