// The exit scan of a live process (docs/leak-kinds.md): while the process waits in its exit
// (interpose/hooks_scan.cpp), the recorder reads its memory with process_vm_readv and classifies
// its live heap blocks (leak_classify.h).
//
// Roots: every readable and writable mapping of /proc/PID/maps except
// - glibc's heap: [heap], a mapping that holds a live block (a thread arena, a large block's own
//   mmap) and a thread arena without one (64 MiB aligned, followed by its PROT_NONE reserve);
// - the preload's own mappings (the table it sends: its heap, rings, caches) and its own image;
// - [vvar], [vsyscall] and device mappings (/dev/zero excepted), as memcheck;
// - a thread stack below its stack pointer: the exiting thread's comes with the request (its
//   registers are saved above it), another thread's from /proc/PID/task/TID/syscall when it is
//   blocked in a system call (a running thread's whole stack is scanned).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "leak_classify.h"

namespace memledger::recorder::leakscan {

struct ScanRequest {
  uint32_t pid = 0, tid = 0;
  uint64_t sp = 0;                    // the exiting thread's stack pointer
  uint64_t ownTable = 0, ownCount = 0;  // wire::OwnRange[ownCount] in the process
};

struct ScanOutcome {
  bool ok = false;
  std::string error;  // why not, when !ok
  uint64_t durationNs = 0;
  ClassifyStats stats;
};

// blocks: the process's live heap blocks, sorted by address. On success kinds has one per block.
ScanOutcome scanProcess(const ScanRequest& req, const std::vector<Block>& blocks,
                        std::vector<LeakKind>* kinds);

// The roots of a process as above (for tests and the scan itself); false + *error when
// /proc/PID/maps cannot be read.
bool rootRegions(const ScanRequest& req, const std::vector<Block>& blocks,
                 std::vector<Region>* roots, std::string* error);

}  // namespace memledger::recorder::leakscan
