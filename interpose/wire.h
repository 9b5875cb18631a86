// The wire format between a traced process (libmemledger_preload.so) and the recorder.
// Shared, header-only, no dependencies: both sides include exactly this file.
//
// Transport
//   The recorder makes a private directory (0700) and passes it as MEMLEDGER_DIR. It listens on
//   MEMLEDGER_DIR/ctl.sock (SOCK_SEQPACKET). Each process image (a new process, a forked child,
//   an exec'd image) creates one ring in a memfd, sends a Hello message with the memfd attached
//   (SCM_RIGHTS) and then only ever writes into the ring. Nothing is flushed at exit: records live
//   in shared memory the moment they are published, so a process that crashes loses nothing.
//
// Ring layout (one memfd per process image, MAP_SHARED on both sides)
//
//   +-------------------+----------------------------+-----------------------------------------+
//   | RingHeader (4096) | LaneHeader[lanes] (→ 4096) | Record[capacity] per lane, lane after lane |
//   +-------------------+----------------------------+-----------------------------------------+
//
//   A ring is `lanes` lanes of `capacity` slots each (both powers of two). A thread claims a lane
//   of its own (1 .. lanes-1) on its first record and gives it back when it exits; while no lane
//   is free, threads share lane 0 and take its lock for each reservation. A lane is a bounded
//   queue in the style of Vyukov: a writer reserves n consecutive slots by advancing `head`,
//   fills them and publishes each slot by storing `seq = index + 1` (mod 2^32) with release
//   order; the reader consumes a lane in index order and waits for each slot's stamp. No slot
//   index is shared between threads, so the hot path has no atomic read-modify-write: on four
//   threads the contended fetch_add of one shared head was a third of the program's time.
//
//   One order per process image comes from the stamps (Record::ts). A reservation stamps its
//   first record (a fenced clock read) and writes that stamp into the slot *before* publishing
//   the new head (release); a free stamps before the real free runs, an allocation after the
//   real allocation returned. The reader merges the lanes by stamp, and only below a bound W it
//   takes each round: its own clock read before it loads the heads, lowered to the stamp of
//   any reserved but unpublished record it meets. Why that is exact: if a free F of an address
//   causes an allocation A of it on another lane (A's allocator saw F's stores), then
//   F.ts < A.ts; if F is reserved but unpublished, its stamp bounds W; if F's head store was not
//   yet visible when the reader loaded the heads, F's real free ran after that load (x86 keeps
//   stores in order), so A, stamped after seeing it, is stamped after the reader's clock read,
//   which is at least W. Either way A waits for F. The same holds for an allocation and the
//   free of what it returned on another thread. Records that are not so ordered may be merged
//   a little out of stamp order; nothing pairs them.
//
//   Fences: "stamped after the allocator's loads" needs a fenced clock read (rdtscp, or lfence
//   before rdtsc), ~8 ns. Only stamps compared across lanes need it: a writer fences once it sees
//   `crossLane` set, which every thread does before its first record on a lane other than
//   lane 1. A thread that could take part in a cross-lane pair has loaded what the other thread
//   stored after setting it (x86 keeps loads in order), so it fences; a free's own stamp is
//   read before the real free's stores are visible, fenced or not.
//
//   When a lane is full its writer waits (exact mode) and adds the time to `wait_ns`. If the
//   recorder's heartbeat goes stale the writer sets `detached` and the library stops recording.
//
// Compatibility: append only. New record types and fields go at the end; bump kWireVersion when
// a layout changes. The recorder refuses a Hello with another version.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../schemas/kinds.h"

namespace memledger::wire {

inline constexpr uint32_t kWireVersion = 5;
inline constexpr uint32_t kRingMagic = 0x4d4c5247;  // "MLRG"
inline constexpr const char* kEnvDir = "MEMLEDGER_DIR";
inline constexpr const char* kEnvRingSlots = "MEMLEDGER_RING_SLOTS";   // slots of every lane (override)
inline constexpr const char* kEnvRingLanes = "MEMLEDGER_RING_LANES";   // lanes per ring (override)
inline constexpr const char* kEnvNoFollow = "MEMLEDGER_NO_FOLLOW";     // "1": only the first image records
inline constexpr const char* kSocketName = "ctl.sock";
// Lane 1 goes to the first thread that records, usually the main thread, which mostly makes the
// longest bursts (freeing a big structure at exit): 96 MiB of records; every other lane 12 MiB.
// (py_dict frees 3.5M blocks in ~0.1 s at exit: with 48 MiB it waited 15-56 ms for the recorder,
// with 96 MiB not at all, 3 runs each.) The memfd's pages exist only once written, so a ring
// costs what its threads' lanes hold.
inline constexpr uint32_t kDefaultRingSlots = 1u << 18;
inline constexpr uint32_t kDefaultMainLaneSlots = 1u << 21;
inline constexpr uint32_t kDefaultRingLanes = 16;
inline constexpr uint32_t kMaxRingLanes = 256;
inline constexpr int kMaxFrames = 128;

// What a record describes. Append only.
enum class RecordType : uint8_t {
  Nop = 0,          // a reserved slot that carries nothing (e.g. a failed realloc's reservation)
  Alloc = 1,        // a=address b=size c=stack hash; kind, op
  Free = 2,         // a=address; kind, op                       (reserved before the real free)
  Stack = 3,        // a=stack hash, aux=frames carried, b=outer frames shared, c=their base
                    // (see "Stack records" below); the carried frames follow in continuations
  Module = 4,       // a=load bias, b=start, c=end; aux=path length; path follows in continuation
  Unmap = 5,        // a=address b=length: a mapped range goes away (see "Unmap" below)
  Exit = 6,         // a=exit status & 0xff (exit/_exit/_Exit was called); aux 0 exit, 1 _exit, 2 _Exit
  ChildStatus = 7,  // a=child pid, b=wait status as from waitpid (the parent reaped a child)
  Marker = 8,       // aux=name length; name follows in continuation slots
  ThreadName = 9,   // reserved
  Continuation = 10,
  ModuleGone = 11,  // a=load bias, b=start (dlclose made a module go away)
  PoolCreate = 12,  // a=base, b=reserved bytes, tag=pool id (> 0); aux=name length, name follows
  PoolDestroy = 13, // tag=pool id: the pool and every block still in it go away
  // --- CUDA collector (issue 16; range 14..17) ---
  CollectorNote = 14,  // aux=text length; text "key=value" follows (memledger_collector_note):
                       // a collector's own facts (CUPTI status, dropped activity records), kept
                       // in the recording's meta as collector.KEY (integer values summed)
  // ---- Python frames (docs/python.md; values 18..23 are this feature's)
  // a=code serial, b=first line, c=PY_VERSION_HEX | line table bytes << 32 (0: all of it is
  // here), tag=name bytes | file bytes << 16, aux=text bytes: name, file, then the code object's
  // line table (co_linetable), in continuations; as much of the table as fits 60,000 text bytes
  PyCode = 18,
  PyFinalize = 19,  // the interpreter started finalizing (_PyRuntime._finalizing became set)
  // The rest of a PyCode's line table, right after it from the same thread: a=code serial,
  // b=offset of these bytes in the table, aux=bytes (text, in continuations)
  PyCodeTable = 20,
  // ---- leak kinds (docs/leak-kinds.md): this feature's values are 24..27 ----
  // The process is at its normal exit (after atexit handlers and destructors) and waits for the
  // recorder to scan its memory: a=the exiting thread's stack pointer (its registers are saved
  // above it), b=address of the preload's own mappings table (OwnRange[c], in the process), c=its
  // entries. The recorder answers in the header's ScanBox.
  LeakScan = 24,
  // ---- end leak kinds ----
  Count
};

// Which kind of memory, and which call made or released it: the registry in schemas/kinds.h
// (codes and positions there are append only, as the wire's are).
using AllocKind = kinds::Kind;
using Op = kinds::Op;

// Alloc/Free aux: the op in the low bits; kAuxExtra set: one continuation slot follows with an
// EventExtra (collectors: the event's own time and stream, see memledger/collector.h).
inline constexpr uint16_t kAuxOpMask = 0x7f;
inline constexpr uint16_t kAuxExtra = 0x8000;
struct EventExtra {
  uint64_t event_ns;  // CLOCK_MONOTONIC of the event itself (0: the record's own stamp)
  uint64_t stream;    // CUDA stream (0: none / the default stream)
  uint64_t flags;     // reserved, 0
};

struct alignas(16) Record {
  std::atomic<uint32_t> seq;  // publication stamp: slot index + 1 (mod 2^32); written last
  RecordType type;
  AllocKind kind;
  uint16_t aux;               // Stack: frame count; Module/Marker/PoolCreate: text bytes; Alloc/Free: Op
  uint32_t tid;
  uint32_t tag;               // Alloc/Free: device number (device kinds) or pool id (pool blocks)
  uint64_t ts;                // stamp (RingClock below); a head's is written at reservation
  uint64_t a, b, c;
};
static_assert(sizeof(Record) == 48, "the ring's record layout is part of the wire format");
static_assert(static_cast<int>(RecordType::Count) == 25, "append new record types at the end");

// A continuation slot carries payload for the record before it. Its first 4 bytes are its own
// publication stamp; the remaining 44 bytes are payload (5 frames, or 44 bytes of text).
inline constexpr size_t kContinuationBytes = sizeof(Record) - sizeof(uint32_t);
inline constexpr size_t kFramesPerContinuation = kContinuationBytes / sizeof(uint64_t);  // 5

// Continuation stamping (refined, compatible with v1: no layout change). A continuation slot at
// ring index i is stamped ~(i + 1) instead of i + 1, so a reader can tell an orphan continuation
// (its head slot was reserved but never published: a thread killed mid-write) from a record head
// and skip it. ~(i + 1) never equals a stamp the same slot carried on an earlier lap: a head
// stamp i + 1 - k*capacity would need 2i = 2^32 - 3 + k*capacity (mod 2^32), odd = even, and a
// continuation stamp ~(i + 1 - k*capacity) differs because capacity < 2^32.
// Frames travel as 5 whole frames per continuation slot (the last 4 payload bytes unused); text
// as 44 bytes per slot. A thread sends a Stack record before its first Alloc with that hash on
// this ring (other threads may send the same hash again: dedup by hash).
// Record Alloc/Free/Unmap: aux = Op. Free and Unmap leave c = 0. Module text = path; the main
// program's path is /proc/self/exe's target. Every munmap/mremap emits an Unmap of its range,
// anonymous or not: intersect it with the ranges known. realloc/mremap = Free/Unmap (op
// Realloc/Mremap, slot reserved before the call) then Alloc (op Realloc/Mremap, reserved after),
// both from the same thread; other threads' records may come between. An Alloc with op Mremap
// follows the Unmap of the old range even when that range was not anonymous: pair it only when
// the old range was known.
inline constexpr uint32_t headStamp(uint64_t index) { return static_cast<uint32_t>(index + 1); }
inline constexpr uint32_t continuationStamp(uint64_t index) {
  return ~static_cast<uint32_t>(index + 1);
}

// Which slots follow a record head: Stack → frames (aux), Module/Marker → text bytes (aux).
inline constexpr uint32_t continuationSlotsFor(RecordType type, uint16_t aux);

inline constexpr uint32_t continuationSlotsForFrames(uint32_t frames) {
  return (frames + kFramesPerContinuation - 1) / kFramesPerContinuation;
}
inline constexpr uint32_t continuationSlotsForText(uint32_t bytes) {
  return static_cast<uint32_t>((bytes + kContinuationBytes - 1) / kContinuationBytes);
}

// Stack records. A thread's stacks are sent once each; consecutive ones mostly differ only in
// their innermost frames. So a Stack record carries its `aux` innermost frames and takes the
// `b` outermost ones from the previous Stack record of the same thread (same ring), whose hash
// is `c` (b = 0, c = 0: the record carries the whole stack). The stack is those aux + b frames,
// innermost first; `a` is the hash of all of them. A reader that does not have the base (c) at
// hand finds it among the stacks it interned.
inline constexpr uint32_t continuationSlotsFor(RecordType type, uint16_t aux) {
  switch (type) {
    case RecordType::Stack: return continuationSlotsForFrames(aux);
    case RecordType::Module:
    case RecordType::Marker:
    case RecordType::PoolCreate:
    case RecordType::CollectorNote:
    case RecordType::PyCode:
    case RecordType::PyCodeTable: return continuationSlotsForText(aux);
    case RecordType::Alloc:
    case RecordType::Free: return (aux & kAuxExtra) ? 1 : 0;
    case RecordType::Nop:
    case RecordType::Unmap:
    case RecordType::Exit:
    case RecordType::ChildStatus:
    case RecordType::ThreadName:
    case RecordType::Continuation:
    case RecordType::ModuleGone:
    case RecordType::PoolDestroy:
    case RecordType::PyFinalize:
    case RecordType::LeakScan:
    case RecordType::Count: return 0;
  }
  return 0;
}
static_assert(sizeof(EventExtra) <= kContinuationBytes);

// Record timestamps (Record::ts) of a ring: CLOCK_MONOTONIC nanoseconds, or the CPU's time-stamp
// counter where it is invariant and the kernel's own clocksource (one rdtsc instead of a vDSO
// clock_gettime per record: ~11 ns vs ~22 ns here). The recorder maps TSC stamps to
// CLOCK_MONOTONIC with its own (tsc, ns) pairs; everything else in the wire (Hello, heartbeat,
// wait_ns) stays CLOCK_MONOTONIC.
enum RingClock : uint32_t { kClockMonotonic = 0, kClockTsc = 1 };

struct alignas(64) RingHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t capacity;                    // slots of each lane but lane 1, a power of two
  uint32_t pid;
  uint32_t clock;                       // RingClock of every record's ts
  uint32_t lanes;                       // a power of two, at most kMaxRingLanes
  uint32_t mainCapacity;                // slots of lane 1, a power of two
  // 0 while only lane 1 was ever written (one thread at a time): stamps need no fence, nothing is
  // merged. A thread sets it before its first record on any other lane (wire.h, "fences").
  std::atomic<uint32_t> crossLane;
  alignas(64) std::atomic<uint32_t> lanesUsed;  // 1 + the highest lane ever claimed (lane 0 counts)
  alignas(64) std::atomic<uint64_t> heartbeat_ns;  // recorder's CLOCK_MONOTONIC, refreshed while it runs
  std::atomic<uint64_t> wait_ns;        // total time writers waited for space
  std::atomic<uint32_t> detached;       // 1: the writer gave up (recorder gone); nothing more comes
  std::atomic<uint32_t> lost;           // records that could not be written after detaching
};
inline constexpr size_t kRingHeaderBytes = 4096;
static_assert(sizeof(RingHeader) <= kRingHeaderBytes);

// ---- leak kinds (docs/leak-kinds.md) ----
// The exit scan's mailbox, at a fixed place in the header page (after RingHeader, which may grow
// up to it). `mode`, set by the recorder when it maps the ring: 0 not known yet (the process waits
// for it, at most 1 s), 1 scan, 2 no scan (`--scan off`, a reader that answers no scans). `state`: the process sets 1
// before it sends LeakScan and waits (futex, shared) until the recorder stores 2 (scanned) or 3
// (not scanned) and wakes it; it gives up when the heartbeat goes stale.
struct ScanBox {
  std::atomic<uint32_t> state;
  std::atomic<uint32_t> mode;
};
inline constexpr size_t kScanBoxOffset = 3072;
static_assert(sizeof(RingHeader) <= kScanBoxOffset && kScanBoxOffset + sizeof(ScanBox) <= kRingHeaderBytes);
inline ScanBox* scanBox(void* ringBase) {
  return reinterpret_cast<ScanBox*>(static_cast<char*>(ringBase) + kScanBoxOffset);
}
// One of the preload's own mappings (its heap, rings, caches): never a root of the scan.
struct OwnRange {
  std::atomic<uint64_t> start, end;  // 0, 0: a free entry
};
inline constexpr uint32_t kMaxOwnRanges = 256;
// ---- end leak kinds ----

// One lane: the writer's line (head, claim, lock) apart from the reader's (tail).
struct alignas(64) LaneHeader {
  std::atomic<uint64_t> head;   // slots reserved; the stamp of every record head below is written
  std::atomic<uint32_t> owner;  // lanes 1..: 1 while a thread holds the lane, 0 when free
  std::atomic<uint32_t> lock;   // lane 0: held by a writer while it reserves
  alignas(64) std::atomic<uint64_t> tail;  // next slot to read (reader)
};
static_assert(sizeof(LaneHeader) == 128);

inline constexpr size_t laneHeaderBytes(uint32_t lanes) {
  return (static_cast<size_t>(lanes) * sizeof(LaneHeader) + 4095) / 4096 * 4096;
}
// Lanes lie one after another: lane 0 (capacity slots), lane 1 (mainCapacity), lanes 2.. .
inline constexpr uint32_t laneCapacity(uint32_t capacity, uint32_t mainCapacity, uint32_t lane) {
  return lane == 1 ? mainCapacity : capacity;
}
inline constexpr size_t laneFirstSlot(uint32_t capacity, uint32_t mainCapacity, uint32_t lane) {
  return lane <= 1 ? static_cast<size_t>(lane) * capacity
                   : static_cast<size_t>(lane - 1) * capacity + mainCapacity;
}
inline constexpr size_t ringBytes(uint32_t capacity, uint32_t mainCapacity, uint32_t lanes) {
  return kRingHeaderBytes + laneHeaderBytes(lanes) +
         laneFirstSlot(capacity, mainCapacity, lanes) * sizeof(Record);  // the slots of lanes 0..lanes-1
}
inline LaneHeader* laneHeader(void* base, uint32_t lane) {
  return reinterpret_cast<LaneHeader*>(static_cast<char*>(base) + kRingHeaderBytes) + lane;
}
inline Record* laneRecords(void* base, uint32_t capacity, uint32_t mainCapacity, uint32_t lanes,
                           uint32_t lane) {
  return reinterpret_cast<Record*>(static_cast<char*>(base) + kRingHeaderBytes +
                                   laneHeaderBytes(lanes)) +
         laneFirstSlot(capacity, mainCapacity, lane);
}

// The one message a process image sends on ctl.sock, with its ring's memfd attached.
struct Hello {
  uint32_t version;      // kWireVersion
  uint32_t pid;
  uint32_t ppid;
  uint32_t capacity;     // slots per lane (the lane count is in the ring's header)
  uint64_t start_ns;     // CLOCK_MONOTONIC when the image initialised
  uint32_t forked;       // 1: a fork child (same image as the parent), 0: a fresh image (exec/start)
  uint32_t cmdline_bytes;  // the message goes on with /proc/self/cmdline (this many bytes, NUL
                           // separated), then /proc/self/exe's target up to the message's end
};
static_assert(sizeof(Hello) == 32);
inline constexpr size_t kMaxHelloMessage = 8192;

// Stack hashing: both the per-thread cache in the traced process and the recorder's check use it.
// Folded from the outermost frame inwards, so the hash of every suffix of a stack comes for free
// while it is computed (the unwinder keeps them to reuse an unchanged outer part of a stack).
inline constexpr uint64_t kHashSeed = 0x9e3779b97f4a7c15ull;
inline uint64_t hashStep(uint64_t outer, uint64_t ip) {
  uint64_t h = (outer ^ ip) * 0xff51afd7ed558ccdull;
  return h ^ (h >> 32);
}
inline uint64_t finalHash(uint64_t h) { return h ? h : 1; }  // 0 means "no stack"
inline uint64_t hashFrames(const uint64_t* ips, int n) {
  uint64_t h = kHashSeed;
  for (int i = n; i-- > 0;) h = hashStep(h, ips[i]);
  return finalHash(h);
}

}  // namespace memledger::wire
