// Turns code addresses into functions, files and lines, once per distinct address, after the
// recording: libdw (elfutils) for DWARF with inline frames, the ELF symbol table when there is no
// debug info (an exported function is never unresolved), separate debug files via build id
// (/usr/lib/debug/.build-id) and .gnu_debuglink. Modules are opened lazily and cached; a module
// that was dlclose'd (or deleted) is still read from its path.
// At most 128 modules are held open at once (each costs a file descriptor or two); the least
// recently used is closed, its answers stay cached.
//
// Thread-safe, built for one thread warming it up ahead of time (prefetch(), at low priority while
// the program runs) and one answering (symbolize(), at the end). A module's libdw session is used
// by one thread at a time; the answers are shared. symbolize() on a module another thread is using
// waits while that thread makes progress, and otherwise (it is starved of CPU, e.g. SCHED_IDLE on a
// busy machine) takes the module over with a fresh session: the answers are the same either way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memledger::recorder {

struct SymbolFrame {
  std::string function;  // demangled; empty when unknown
  std::string file;      // source file; empty when unknown
  int line = 0;
};

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Frames for the code at `address` (already module-relative: runtime address - load bias;
  // for a return address the caller passes ip - 1). Innermost first: inlined functions, then the
  // function the code belongs to last. Never empty: an unknown address gives one empty frame.
  std::vector<SymbolFrame> symbolize(const std::string& modulePath, uint64_t address);

  // Looks `address` up into the cache, for a later symbolize() to find. Never waits: when another
  // thread is using the module it does nothing and returns false; true when the answer is cached.
  bool prefetch(const std::string& modulePath, uint64_t address);

  // The module's GNU build id as lowercase hex, or empty.
  std::string buildId(const std::string& modulePath);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memledger::recorder
