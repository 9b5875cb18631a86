// `memledger report FILE [--json]` and the focused views `memledger leaks|peak|phases|
// fragmentation|suggest FILE [--json] [--pid P] [--kind K] [--time A:B] [--top N] [--by-process]`.
// Everything shown is computed by analyzer/; this file parses arguments and picks the output.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

#include "analyzer/analyzer.h"
#include "analyzer/format.h"
#include "commands.h"
#include "parse.h"
#include "report_devices.h"
#include "report_text.h"

namespace memledger::cli {

namespace an = memledger::analyzer;

namespace {

// Sites per list when --top is not given: the text report reads on one screen per list, the JSON
// one stays small on a big program (10^4 leak sites with full stacks ran to 115 MB); `export
// --format json` has everything.
constexpr size_t kTextTopDefault = 10;
constexpr size_t kJsonTopDefault = 20;

std::string kindList() {
  std::string out;
  for (const auto& k : an::knownKinds()) out += (out.empty() ? "" : ", ") + k;
  return out;
}

struct ViewArgs {
  std::string file;
  bool json = false;
  an::Filter filter;
  TextOptions text;
};

// Parses the arguments shared by report and the views. Returns -1 to go on, else an exit code.
int parseArgs(const std::string& name, const std::string& description, int argc, char** argv, ViewArgs& out) {
  CLI::App app{description, "memledger " + name};
  app.footer(
      "\n--time A:B keeps what was allocated between A and B (seconds since the recording started;\n"
      "units ns, us, ms, s, m may follow: 0.5:2, 100ms:2s, 1s: ). --pid takes the OS pid of a traced\n"
      "process, --kind a site kind (" + kindList() + "). A kind, pid or time range the recording\n"
      "does not have is an error (exit 2), not an empty answer; numbers a filter does not apply to\n"
      "are named in the report. Sites with the same code (the same module offsets per frame) are\n"
      "one site across processes, with per-process amounts; --by-process lists them per process.\n"
      "--top N: at most N sites per list, 10 in text and 20 in JSON by default (`memledger export\n"
      "--format json` writes every site); lists of more than 2,000,000 stack frames in all are an\n"
      "error (exit 2): export folded or pprof carry every site. --json prints one JSON document\n"
      "(schemas/report.schema.json). Exit codes: 0 ok, 2 bad usage, a filter that selects nothing\n"
      "the recording has, or a file that is not a readable recording.");
  int64_t pid = 0;
  std::string kind, time;
  size_t top = 0;
  app.add_option("FILE", out.file, "the recording (memledger record -o FILE)")->required();
  app.add_flag("--json", out.json, "print JSON instead of text");
  auto* pidOpt = app.add_option("--pid", pid, "only this process (OS pid)")->check(CLI::Range(int64_t{1}, int64_t{INT32_MAX}));
  auto* kindOpt = app.add_option("--kind", kind, "only sites of this kind: " + kindList());
  auto* timeOpt = app.add_option("--time", time, "only allocations made in A:B (seconds; e.g. 0.5:2, 100ms:2s)");
  auto* topOpt = app.add_option("--top", top, "at most N sites per list (default 10 in text, 20 in JSON)")
                     ->check(CLI::Range(size_t{1}, size_t{1000000000}));
  app.add_flag("--by-process", out.filter.by_process,
               "one site per process instead of one per piece of code across processes");
  if (int rc = parseCommandLine(app, argc, argv, name.c_str()); rc >= 0) return rc;
  if (pidOpt->count()) out.filter.pid = pid;
  if (kindOpt->count()) {
    if (kind.empty()) {
      std::fprintf(stderr, "memledger: %s: --kind needs a kind (%s)\n", name.c_str(), kindList().c_str());
      return 2;
    }
    out.filter.kind = kind;
  }
  if (timeOpt->count()) {
    auto range = an::parseTimeRange(time);
    if (!range) {
      std::fprintf(stderr,
                   "memledger: %s: bad --time '%s': expected A:B in seconds with optional units, "
                   "e.g. 0.5:2 or 100ms:2s\n",
                   name.c_str(), time.c_str());
      return 2;
    }
    out.filter.t_from_ns = range->from_ns;
    out.filter.t_to_ns = range->to_ns;
  }
  // Both show the first sites only: asking the analyzer for just those spares decoding the
  // stacks of thousands of sites (totals are still over all of them).
  out.text.top = topOpt->count() ? top : out.json ? kJsonTopDefault : kTextTopDefault;
  out.filter.top = out.text.top;
  return -1;
}

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

void printJson(const nlohmann::json& j) { print(an::jsonText(j, 2) + "\n"); }

// Runs `body` and turns a recording that cannot be read into its one-line message and exit 2.
template <typename F>
int guarded(F&& body) {
  try {
    body();
    return 0;
  } catch (const an::RecordingError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const an::FilterError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memledger: %s\n", e.what());
    return 2;
  }
}

}  // namespace

int cmdReport(int argc, char** argv) {
  ViewArgs args;
  int rc = parseArgs("report", "memledger report: the full report of a recording", argc, argv, args);
  if (rc >= 0) return rc;
  return guarded([&] {
    an::Recording rec = an::Recording::open(args.file);
    rec.limitStackFrames(kMaxListedFrames);
    an::validateFilter(rec, args.filter);
    args.text.complete = rec.info().complete;
    an::Report r = an::report(rec, args.filter);
    // CUDA spaces (analyzer/devices.h): whole-run values, present only when the run had any.
    std::vector<an::DeviceSpace> devices = an::deviceSpaces(rec, args.text.top);
    if (args.json) {
      nlohmann::json j = an::toJson(r);
      if (!devices.empty()) j["devices"] = jsonDevices(devices);
      printJson(j);
    } else {
      print(textReport(r, args.text) + textDevices(devices));
    }
  });
}

int cmdView(const char* view, int argc, char** argv) {
  const std::string name = view;
  const char* description = name == "leaks"           ? "memledger leaks: blocks never freed, by site"
                            : name == "peak"          ? "memledger peak: the heap peak and what was live then"
                            : name == "phases"        ? "memledger phases: the phases of the run"
                            : name == "fragmentation" ? "memledger fragmentation: heap memory that holds no live block"
                                                      : "memledger suggest: what to change, with evidence";
  ViewArgs args;
  int rc = parseArgs(name, description, argc, argv, args);
  if (rc >= 0) return rc;
  return guarded([&] {
    an::Recording rec = an::Recording::open(args.file);
    rec.limitStackFrames(kMaxListedFrames);
    an::validateFilter(rec, args.filter);
    args.text.complete = rec.info().complete;
    nlohmann::json j = {{"view", name}, {"recording", an::toJson(rec.info())}};
    std::string text = "memledger " + name + ": " + textRecordingLine(rec.info()) + textFilter(args.filter, name) + "\n";
    if (nlohmann::json f = an::toJson(args.filter, name); !f.is_null()) j["filter"] = f;
    if (name == "leaks") {
      an::Leaks l = an::leaks(rec, args.filter);
      j["leaks"] = an::toJson(l);
      text += textLeaks(l, args.text);
    } else if (name == "peak") {
      an::Peak p = an::peak(rec, args.filter);
      j["peak"] = an::toJson(p);
      text += textPeak(p, args.text);
    } else if (name == "phases") {
      auto ph = an::phases(rec, args.filter);
      j["phases"] = an::toJson(ph);
      text += textPhases(ph, args.text);
    } else if (name == "fragmentation") {
      an::Fragmentation f = an::fragmentation(rec, args.filter);
      j["fragmentation"] = an::toJson(f);
      text += textFragmentation(f);
    } else {
      auto s = an::suggestions(rec, args.filter);
      j["suggestions"] = an::toJson(s);
      text += textSuggestions(s, args.text);
    }
    if (args.json)
      printJson(j);
    else
      print(text);
  });
}

}  // namespace memledger::cli
