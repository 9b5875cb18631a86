// Commands whose implementation has not landed yet. Each one is removed from this file when its
// own file (record_cmd.cpp, report_cmd.cpp, ...) defines it.
#include <cstdio>

#include "commands.h"

namespace memledger::cli {
namespace {
[[maybe_unused]] int notYet(const char* what) {
  std::fprintf(stderr, "memledger: '%s' is not available in this build\n", what);
  return 2;
}
}  // namespace


}  // namespace memledger::cli
