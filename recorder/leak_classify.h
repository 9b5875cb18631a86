// Leak kinds by memcheck's rules (docs/leak-kinds.md): given the live heap blocks of a process
// (sorted by address), its root regions and a way to read its memory, classifies every block as
// definite, indirect, possible or reachable. No process handling here (leak_scan.h reads a real
// process); tests drive it with memory of their own.
//
// The rules, as valgrind 3.19's mc_leakcheck.c:
// - Words are 8-byte aligned. A word w points into block B when B.start <= w < B.start + B.size
//   (a block of size 0: w == B.start). A start pointer is w == B.start; anything else interior.
// - From the roots (and from blocks reached by a start pointer from them), a start pointer makes B
//   reachable; an interior pointer makes it possible unless a heuristic (stdstring, length64,
//   newarray: memcheck's defaults) says it is reachable; anything found from a possible block is at
//   most possible. Possible is upgraded to reachable when a reachable start pointer turns up later.
// - Then each block still unreached, in address order, leads a clique: every unreached block found
//   from it (transitively) is indirect; the leader stays definite (in a cycle of lost blocks the
//   lowest address leads). A block that led an earlier clique and is found now becomes indirect.
// - glibc's own bookkeeping (free-list heads, the top chunk) points at chunk headers, which overlap
//   the last 8 bytes of the preceding block when it is in use: a word equal to that next chunk
//   header of B (B.start - 16 + glibc's chunk size of B) is not taken for a pointer into B.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memledger::recorder::leakscan {

// Stored in leak_kinds.kind (schemas/memledger.sql).
enum class LeakKind : uint8_t { Definite = 0, Indirect = 1, Possible = 2, Reachable = 3 };
inline constexpr int kLeakKindCount = 4;
const char* leakKindName(LeakKind k);  // "definite" | "indirect" | "possible" | "reachable"

struct Block {
  uint64_t address, size;
};
struct Region {
  uint64_t start, end;
};

// Reads the target's memory. readMany: the ranges one after another into `out` (the sum of their
// lengths); returns, per range, false where it could not be read (its bytes are then zero).
class Memory {
 public:
  virtual ~Memory() = default;
  virtual void readMany(const Region* ranges, size_t n, uint8_t* out, std::vector<bool>& ok) = 0;
};

struct ClassifyStats {
  uint64_t rootBytes = 0, blockBytesScanned = 0, unreadableBytes = 0;
};

// blocks: sorted by address, not overlapping. roots: word-aligned regions (they should not
// overlap blocks; registers are scanned as part of the stack they were saved on). glibcChunks: apply the chunk
// header rule above. Returns one kind per block.
std::vector<LeakKind> classify(const std::vector<Block>& blocks, const std::vector<Region>& roots,
                               Memory& mem, bool glibcChunks, ClassifyStats* stats = nullptr);

}  // namespace memledger::recorder::leakscan
