// `memledger export FILE --format F`: a recording in the formats other tools read.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>

#include "analyzer/export_formats.h"
#include "ci_errors.h"
#include "commands.h"
#include "output_file.h"
#include "parse.h"

namespace memledger::cli {

namespace an = memledger::analyzer;

int cmdExport(int argc, char** argv) {
  CLI::App app{"memledger export: a recording as folded stacks, Chrome trace, pprof or JSON", "memledger export"};
  app.footer(
      "\nFormats:\n"
      "  folded        collapsed stacks, outermost first (\"main;f;g 4096\") for flamegraph.pl, speedscope,\n"
      "                inferno; the value is --metric: leaked (default), peak, allocated (bytes), count\n"
      "  chrome-trace  Trace Event JSON (Perfetto, chrome://tracing): heap/mmap/RSS counters per process,\n"
      "                markers and peaks as instants, phases as slices\n"
      "  pprof         gzipped profile.proto: alloc_objects, alloc_space, inuse_objects, inuse_space\n"
      "                (inuse = the leaks: still live at exit; in a Python process, when its interpreter\n"
      "                started finalizing); written to -o, or to stdout when it is not a terminal\n"
      "  json          the full report (as `memledger report --json`): every site, or --top N per list;\n"
      "                lists of more than 2,000,000 stack frames in all are an error (exit 2)\n");
  std::string file, format, out, metricName = "leaked";
  app.add_option("FILE", file, "the recording")->required();
  app.add_option("--format,-f", format, "folded | chrome-trace | pprof | json")->required();
  bool force = false;
  app.add_option("-o,--output", out, "output file (default: stdout); an existing one is kept unless --force");
  app.add_flag("--force", force, "replace the -o file if it exists");
  app.add_option("--metric", metricName, "folded value: leaked | peak | allocated | count");
  size_t top = 0;
  auto* topOpt = app.add_option("--top", top, "json: at most N sites per list (default: every site)")
                     ->check(CLI::Range(size_t{1}, size_t{1000000000}));
  if (int rc = parseCommandLine(app, argc, argv, "export"); rc >= 0) return rc;
  auto metric = an::parseMetric(metricName);
  if (!metric) {
    std::fprintf(stderr, "memledger: export: --metric '%s' is not leaked, peak, allocated or count\n",
                 metricName.c_str());
    return 2;
  }
  if (format != "folded" && format != "chrome-trace" && format != "pprof" && format != "json") {
    std::fprintf(stderr, "memledger: export: unknown --format '%s' (folded, chrome-trace, pprof, json)\n",
                 format.c_str());
    return 2;
  }
  if (format == "pprof" && out.empty() && isatty(STDOUT_FILENO)) {
    std::fprintf(stderr, "memledger: export: pprof is binary: give -o FILE or redirect stdout\n");
    return 2;
  }
  if (topOpt->count() && format != "json") {
    std::fprintf(stderr, "memledger: export: --top applies to --format json only\n");
    return 2;
  }
  const bool toStdout = out.empty() || out == "-";
  if (!toStdout && !outputAllowed(out, force, "export")) return 2;
  std::string data;
  try {
    an::Recording rec = an::Recording::open(file);
    if (format == "folded")
      data = an::exportFolded(rec, *metric);
    else if (format == "chrome-trace")
      data = an::jsonText(an::exportChromeTrace(rec)) + "\n";
    else if (format == "pprof")
      data = an::exportPprof(rec);
    else {
      rec.limitStackFrames(kMaxListedFrames);
      an::Filter filter;
      if (topOpt->count()) filter.top = top;
      data = an::jsonText(an::toJson(an::report(rec, filter)), 2) + "\n";
    }
  } catch (const std::exception& e) {
    return recordingErrorExit(e);
  }
  if (toStdout) {
    if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size() || std::fflush(stdout) != 0) {
      std::fprintf(stderr, "memledger: export: cannot write to stdout\n");
      return 2;
    }
    return 0;
  }
  std::ofstream o(out, std::ios::binary | std::ios::trunc);
  o.write(data.data(), static_cast<std::streamsize>(data.size()));
  o.close();
  if (!o) {
    std::fprintf(stderr, "memledger: export: cannot write '%s'\n", out.c_str());
    return 2;
  }
  return 0;
}

}  // namespace memledger::cli
