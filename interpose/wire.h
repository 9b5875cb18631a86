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
//   +-------------------+---------------------------------------------------------------+
//   | RingHeader (4096) | Record[capacity]   (capacity is a power of two)               |
//   +-------------------+---------------------------------------------------------------+
//
//   Many writers (all threads of the image), one reader (the recorder): a bounded MPSC queue in
//   the style of Vyukov. A writer reserves n consecutive slots with one fetch_add on `head`,
//   fills them and publishes each slot by storing `seq = index + 1` (mod 2^32) with release
//   order. The reader consumes in index order and waits for each slot's stamp. One global order
//   per process image is what makes alloc/free pairing exact: a free reserves its slot *before*
//   the real free runs, an allocation *after* the real allocation returned, so an address can
//   never be seen re-allocated before it was seen freed.
//
//   When the ring is full a writer waits (exact mode) and adds the time to `wait_ns`. If the
//   recorder's heartbeat goes stale the writer sets `detached` and the library stops recording.
//
// Compatibility: append only. New record types and fields go at the end; bump kWireVersion when
// a layout changes. The recorder refuses a Hello with another version.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memledger::wire {

inline constexpr uint32_t kWireVersion = 3;
inline constexpr uint32_t kRingMagic = 0x4d4c5247;  // "MLRG"
inline constexpr const char* kEnvDir = "MEMLEDGER_DIR";
inline constexpr const char* kEnvRingSlots = "MEMLEDGER_RING_SLOTS";   // optional override
inline constexpr const char* kEnvNoFollow = "MEMLEDGER_NO_FOLLOW";     // "1": only the first image records
inline constexpr const char* kSocketName = "ctl.sock";
inline constexpr uint32_t kDefaultRingSlots = 1u << 20;  // 48 MiB of records per process image
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
  Count
};

// Which kind of memory (a site's kind in reports). Append only.
enum class AllocKind : uint8_t { Malloc = 0, New = 1, Mmap = 2, Custom = 3, Count };

// Which call made an allocation or free. Append only.
enum class Op : uint8_t {
  Malloc = 0, Calloc, Realloc, Reallocarray, Free, PosixMemalign, AlignedAlloc, Memalign, Valloc,
  Pvalloc, New, NewArray, Delete, DeleteArray, Mmap, Munmap, Mremap, CustomAlloc, CustomFree, Count
};

struct alignas(16) Record {
  std::atomic<uint32_t> seq;  // publication stamp: slot index + 1 (mod 2^32); written last
  RecordType type;
  AllocKind kind;
  uint16_t aux;               // Stack: frame count; Module/Marker: byte length of the text; Alloc: Op
  uint32_t tid;
  uint32_t reserved;
  uint64_t ts;                // CLOCK_MONOTONIC nanoseconds
  uint64_t a, b, c;
};
static_assert(sizeof(Record) == 48, "the ring's record layout is part of the wire format");
static_assert(static_cast<int>(RecordType::Count) == 12, "append new record types at the end");

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
    case RecordType::Marker: return continuationSlotsForText(aux);
    default: return 0;
  }
}

// Record timestamps (Record::ts) of a ring: CLOCK_MONOTONIC nanoseconds, or the CPU's time-stamp
// counter where it is invariant and the kernel's own clocksource (one rdtsc instead of a vDSO
// clock_gettime per record: ~11 ns vs ~22 ns here). The recorder maps TSC stamps to
// CLOCK_MONOTONIC with its own (tsc, ns) pairs; everything else in the wire (Hello, heartbeat,
// wait_ns) stays CLOCK_MONOTONIC.
enum RingClock : uint32_t { kClockMonotonic = 0, kClockTsc = 1 };

struct alignas(64) RingHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t capacity;                    // slots, a power of two
  uint32_t pid;
  uint32_t clock;                       // RingClock of every record's ts
  alignas(64) std::atomic<uint64_t> head;       // next slot to reserve (writers)
  alignas(64) std::atomic<uint64_t> tail;       // next slot to read (reader)
  alignas(64) std::atomic<uint64_t> heartbeat_ns;  // recorder's CLOCK_MONOTONIC, refreshed while it runs
  std::atomic<uint64_t> wait_ns;        // total time writers waited for space
  std::atomic<uint32_t> detached;       // 1: the writer gave up (recorder gone); nothing more comes
  std::atomic<uint32_t> lost;           // records that could not be written after detaching
};
inline constexpr size_t kRingHeaderBytes = 4096;
static_assert(sizeof(RingHeader) <= kRingHeaderBytes);

inline constexpr size_t ringBytes(uint32_t capacity) {
  return kRingHeaderBytes + static_cast<size_t>(capacity) * sizeof(Record);
}
inline Record* ringRecords(void* base) {
  return reinterpret_cast<Record*>(static_cast<char*>(base) + kRingHeaderBytes);
}

// The one message a process image sends on ctl.sock, with its ring's memfd attached.
struct Hello {
  uint32_t version;      // kWireVersion
  uint32_t pid;
  uint32_t ppid;
  uint32_t capacity;     // ring slots
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
