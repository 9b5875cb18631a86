// `memledger diff A B`: per-site differences of two recordings, biggest change first.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "analyzer/diff.h"
#include "ci_errors.h"
#include "commands.h"
#include "parse.h"

namespace memledger::cli {

namespace an = memledger::analyzer;

int cmdDiff(int argc, char** argv) {
  CLI::App app{"memledger diff: per-site differences of two recordings (A = before, B = after)", "memledger diff"};
  app.footer(
      "\nSites are matched by function and source file names of their frames (not addresses or lines),\n"
      "so two builds compare. Sorted by impact: the largest absolute byte change among leaked, peak,\n"
      "allocated and temporary bytes. Sites marked [new] exist only in B, [gone] only in A.\n");
  std::string a, b;
  bool json = false;
  size_t top = 20;
  app.add_option("A", a, "the earlier recording")->required();
  app.add_option("B", b, "the later recording")->required();
  app.add_flag("--json", json, "print JSON");
  app.add_option("--top", top, "sites to show in text (0 = all; JSON always has all)");
  if (int rc = parseCommandLine(app, argc, argv, "diff"); rc >= 0) return rc;
  try {
    an::Recording ra = an::Recording::open(a);
    an::Recording rb = an::Recording::open(b);
    an::DiffResult d = an::diff(ra, rb);
    if (json)
      std::puts(an::jsonText(an::toJson(d), 2).c_str());
    else
      std::fputs(an::formatDiff(d, top).c_str(), stdout);
    return 0;
  } catch (const std::exception& e) {
    return recordingErrorExit(e);
  }
}

}  // namespace memledger::cli
