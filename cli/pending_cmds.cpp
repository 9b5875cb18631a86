// Commands whose implementation has not landed yet. Each one is removed from this file when its
// own file (record_cmd.cpp, report_cmd.cpp, ...) defines it.
#include <cstdio>

#include "commands.h"

namespace memledger::cli {
namespace {
int notYet(const char* what) {
  std::fprintf(stderr, "memledger: '%s' is not available in this build\n", what);
  return 2;
}
}  // namespace

int cmdRecord(int, char**) { return notYet("record"); }
int cmdReport(int, char**) { return notYet("report"); }
int cmdView(const char* view, int, char**) { return notYet(view); }

}  // namespace memledger::cli
