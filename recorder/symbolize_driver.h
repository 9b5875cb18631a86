// Symbolization of a finished recording: every distinct ip of every image is matched to the module
// that covered it (a fork child also looks at the modules it inherited from its parent), each
// distinct (module path, module-relative address) is symbolized once, and `frames`,
// `ips.module_id` and `modules.build_id` are written. Works on the SQLite file itself, so the
// core never depends on the symbolizer, and tests can pass a fake SymbolSource.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "symbolizer.h"

struct sqlite3;

namespace memledger::recorder {

class SymbolSource {
 public:
  virtual ~SymbolSource() = default;
  virtual std::vector<SymbolFrame> symbolize(const std::string& modulePath, uint64_t address) = 0;
  virtual std::string buildId(const std::string& modulePath) = 0;
  // Looks the address up ahead of time, from another thread than symbolize()'s, for a later
  // symbolize() to answer from a cache (SymbolWarmer). Returns whether it did; by default nothing.
  virtual bool prefetch(const std::string& modulePath, uint64_t address) {
    (void)modulePath;
    (void)address;
    return false;
  }
};

struct SymbolizeStats {
  uint64_t ips = 0;          // distinct ips in the file
  uint64_t withModule = 0;   // ips a module covered
  uint64_t lookups = 0;      // distinct (path, address) pairs asked of the source
  uint64_t resolved = 0;     // ips whose innermost frame has a function name
};

// Fills frames/ips.module_id/modules.build_id in one transaction. False + *error on SQL failure.
bool symbolizeRecording(sqlite3* db, SymbolSource& source, SymbolizeStats* stats, std::string* error);

// The same in three steps, so the lookups (compute: libdw, no SQLite) can run on another thread
// while the connection does other work: read() the processes, modules and ips (those with an id
// above afterIp), compute() on any one thread, then write() on the connection's thread. Only
// what read() saw is symbolized: a later job with afterIp = lastIp() takes the ips added since.
class SymbolizeJob {
 public:
  SymbolizeJob();
  ~SymbolizeJob();
  bool read(sqlite3* db, std::string* error, int64_t afterIp = 0);
  int64_t lastIp() const;  // the highest ips.id read (afterIp when none)
  void compute(SymbolSource& source);
  // compute()'s lookups as prefetches, results not kept (no build ids): warms the source while
  // the program still runs. Returns after the lookup in progress once `stop` is set. Adds the
  // lookups the source answered to `answered` as it goes.
  void warm(SymbolSource& source, const std::atomic<bool>& stop, std::atomic<uint64_t>& answered);
  bool write(sqlite3* db, SymbolizeStats* stats, std::string* error);

 private:
  struct Data;
  std::unique_ptr<Data> d_;
};

// A SymbolSource over the real Symbolizer (libdw), safe to prefetch into from one thread while
// another symbolizes. In its own file: linking it needs symbolizer.cpp.
std::unique_ptr<SymbolSource> makeNativeSymbolSource();

}  // namespace memledger::recorder
