#include <cstdio>
#include <cstring>
#include <string_view>

#include "commands.h"

namespace {

constexpr const char* kUsage =
    "usage: memledger COMMAND [ARGS...]\n"
    "\n"
    "  record [-o FILE] [--force] -- PROGRAM ARGS...   record a program's memory\n"
    "  report FILE [--json]                             the full report\n"
    "  leaks|peak|phases|fragmentation|suggest FILE [--json] [--pid P] [--kind K] [--time A:B] [--top N]\n"
    "  check [LIMITS] (FILE | -- PROGRAM ARGS...)       fail (exit 1) when a limit does not hold\n"
    "  diff A B [--json]                                per-site differences of two recordings\n"
    "  export FILE --format folded|chrome-trace|pprof|json [-o OUT [--force]]\n"
    "  mark NAME                                        set a phase marker (from inside a traced program)\n"
    "  gui [FILE]                                       open the GUI (memledger-gui FILE --help for its options)\n"
    "  --version                                        print memledger's version\n"
    "\n"
    "COMMAND --help describes a command's options.\n"
    "Exit codes: 0 ok, 1 check failed, 2 usage or unreadable file, 126/127 program not runnable;\n"
    "record passes the program's own status through (128+N for death by signal N).\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace memledger::cli;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::puts("memledger " MEMLEDGER_VERSION);
    return 0;
  }
  // Each command sees argv starting at its own name.
  int subArgc = argc - 1;
  char** subArgv = argv + 1;
  if (cmd == "record") return cmdRecord(subArgc, subArgv);
  if (cmd == "report") return cmdReport(subArgc, subArgv);
  if (cmd == "leaks" || cmd == "peak" || cmd == "phases" || cmd == "fragmentation" || cmd == "suggest")
    return cmdView(argv[1], subArgc, subArgv);
  if (cmd == "check") return cmdCheck(subArgc, subArgv);
  if (cmd == "diff") return cmdDiff(subArgc, subArgv);
  if (cmd == "export") return cmdExport(subArgc, subArgv);
  if (cmd == "mark") return cmdMark(subArgc, subArgv);
  if (cmd == "gui") return cmdGui(subArgc, subArgv);
  std::fprintf(stderr, "memledger: unknown command '%s'\n%s", argv[1], kUsage);
  return 2;
}
