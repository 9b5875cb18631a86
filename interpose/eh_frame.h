// The DWARF call frame information of loaded code, read where the loader mapped it: a module's
// PT_GNU_EH_FRAME segment (.eh_frame_hdr, with its sorted table of FDEs) leads to .eh_frame in
// the same mapping. No file is opened and no library loaded (libdw did this before, and brought
// libelf, libz, liblzma and libbz2 into every traced process); nothing here allocates.
// Internal to the preload library (unwind_rules.cpp).
#pragma once

#include <cstdint>

namespace memledger::preload::unwind {

// A loaded module: its PT_LOAD extent and its .eh_frame_hdr (null: none, every pc is unknown).
struct EhModule {
  uint64_t lo, hi;
  const uint8_t* hdr;
};

// The rule word (unwind_rules.h) for `pc` in `m`: kUnknown for anything the walker cannot follow
// (no FDE, a signal frame, a CFA or save slot given by an expression, malformed data).
uint64_t ehFrameRule(const EhModule& m, uint64_t pc);
// The code range [*begin, *end) of the FDE covering `pc` in `m`. False: none covers it.
bool ehFrameRange(const EhModule& m, uint64_t pc, uint64_t* begin, uint64_t* end);

}  // namespace memledger::preload::unwind
