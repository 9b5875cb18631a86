// `memledger mark NAME`: a phase marker from a shell script that runs under `memledger record`.
// The preload library is in this process too then (LD_PRELOAD is inherited) and defines
// memledger_mark; the marker is recorded in this process image, at this instant.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "commands.h"
#include "interpose/include/memledger/memledger.h"
#include "interpose/wire.h"

namespace memledger::cli {

int cmdMark(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::puts("usage: memledger mark NAME\n"
              "Sets a phase marker NAME on the timeline of the recording this process runs under.\n"
              "Exit: 0 marked, 2 bad usage or not running under `memledger record`.");
    return 0;
  }
  if (argc != 2 || argv[1][0] == '\0') {
    std::fputs("usage: memledger mark NAME\n", stderr);
    return 2;
  }
  // The weak reference is bound by the dynamic loader when the preload library is loaded; dlsym
  // covers a loader that left it unbound. Both are needed only to find the one definition.
  using MarkFn = void (*)(const char*);
  MarkFn mark = memledger_mark;
  if (!mark) mark = reinterpret_cast<MarkFn>(dlsym(RTLD_DEFAULT, "memledger_mark"));
  if (!mark || !std::getenv(memledger::wire::kEnvDir)) {
    std::fputs("memledger: not running under memledger record\n", stderr);
    return 2;
  }
  mark(argv[1]);
  return 0;
}

}  // namespace memledger::cli
