// `memledger check`: fail a CI job (exit 1) when a recording breaks its limits.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/format.h"
#include "analyzer/junit.h"
#include "analyzer/sarif.h"
#include "ci_gtest.h"
#include "ci_process.h"
#include "commands.h"
#include "parse.h"
#include "runnable.h"

namespace memledger::cli {

namespace an = memledger::analyzer;

namespace {

constexpr const char* kHelpFooter = R"(
Limits (sizes take suffixes: 4096, 4K, 4KiB, 10MB, 1GiB; KiB/MiB/GiB and bare K/M/G are powers
of 1024, kB/MB/GB powers of 1000):
  leaked bytes / leaks  blocks still live when their process ended (a Python process: when its
                        interpreter started finalizing), over all processes, after
                        suppressions. --max-leaks counts leaked BLOCKS (allocations), not sites.
  peak                  exact peak of --kind (heap: malloc/new family, default; mmap; rss), the
                        largest over all process images.
  --max-peak-growth     percent growth of that peak over --baseline's.
  --max-new-leak-sites  leak sites (matched by function and file names) the baseline did not have.
With no limit given, the check is --max-leaks 0: any unsuppressed leak fails it.
Leak kinds (docs/leak-kinds.md): at each normal exit the process's memory is scanned for pointers,
as memcheck does; only leaks of the kinds in --leak-kinds count (default: definite and indirect,
LeakSanitizer's semantics, plus leaks that could not be classified: a crash, _exit, exec, mmap,
and a Python process's, which its finalization freed before the scan); all counts every kind.
A program whose leftovers are all still reachable passes without suppressions.
The started program failing (non-zero exit or death by signal) always fails the check.

Suppressions use LeakSanitizer's syntax (leak:PATTERN, * wildcards, ^/$ anchors, # comments),
matched against the function, file and module of every frame. The built-in list (turned off by
--no-default-suppressions, shown by --print-default-suppressions) covers one-time allocations of
glibc, the dynamic loader and libstdc++, and in a Python process the interpreter's own blocks
(start-up, imports' module state, its allocator's arenas; docs/python.md).

--per-test: PROGRAM is a GoogleTest binary; each test (from --gtest_list_tests) is recorded in a
process of its own with --gtest_filter=Suite.Name and checked against the limits on its own.

Exit: 0 all limits hold, 1 a limit does not hold, 2 bad usage or unreadable file,
126/127 the program could not be started.
)";

bool writeFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  if (!out) {
    std::fprintf(stderr, "memledger: cannot write '%s'\n", path.c_str());
    return false;
  }
  return true;
}

std::string currentDir() {
  char buf[4096];
  return getcwd(buf, sizeof buf) ? std::string(buf) : std::string();
}

struct Options {
  std::string file;
  std::vector<std::string> program;
  an::Limits limits;
  std::string baseline;
  std::vector<std::string> suppressionFiles;
  bool noDefaultSuppressions = false;
  std::string junit, sarif, sarifRoot, recordDir;
  bool perTest = false;
  size_t top = 10;  // sites (with their stacks) printed per violation; 0 = all
  bool scan = true;  // leak kinds: the exit scan of `check -- PROGRAM`
};

// One evaluated recording: the name it is reported under and its result.
struct Checked {
  std::string classname, name;
  an::CheckResult result;
};

int writeReports(const Options& o, const std::vector<Checked>& checks, bool perProcessCases) {
  if (!o.junit.empty()) {
    std::vector<an::JUnitCase> cases;
    for (const auto& c : checks) {
      if (perProcessCases) {
        auto more = an::junitCasesPerProcess(c.result);
        cases.insert(cases.end(), more.begin(), more.end());
      } else {
        cases.push_back(an::junitCaseFor(c.result, c.classname, c.name));
      }
    }
    if (!writeFile(o.junit, an::junitXml("memledger check", cases))) return 2;
  }
  if (!o.sarif.empty()) {
    std::vector<an::SarifInput> in;
    for (const auto& c : checks) in.push_back({c.name, &c.result});
    if (!writeFile(o.sarif, an::jsonText(an::sarifLog(in, o.sarifRoot, MEMLEDGER_VERSION), 2) + "\n")) return 2;
  }
  return 0;
}

an::SuppressionList loadSuppressions(const Options& o) {
  an::SuppressionList list;
  for (const auto& f : o.suppressionFiles) list.addFile(f);
  if (!o.noDefaultSuppressions) list.addDefaults();
  return list;
}

// Checks one recording file; prints the verdict. Throws RecordingError/SuppressionError.
an::CheckResult checkFile(const Options& o, const std::string& path, const std::string& title) {
  an::Recording rec = an::Recording::open(path);
  std::optional<an::Recording> base;
  if (!o.baseline.empty()) base.emplace(an::Recording::open(o.baseline));
  an::SuppressionList supp = loadSuppressions(o);
  an::CheckResult r = an::check(rec, o.limits, supp, base ? &*base : nullptr);
  if (!rec.info().complete)
    std::fprintf(stderr, "memledger: warning: '%s' is an unfinished recording; its numbers may be partial\n",
                 path.c_str());
  std::fputs(an::formatCheck(r, title, o.top).c_str(), stdout);
  return r;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// keep: the recordings stay in --record-dir (compressed, like any kept recording).
int runPerTest(const Options& o, const std::string& dir, bool keep) {
  std::vector<GTestCase> tests;
  std::string why = listGTests(o.program, tests);
  if (!why.empty()) {
    std::fprintf(stderr, "memledger: %s\n", why.c_str());
    return 2;
  }
  std::vector<Checked> checks;
  int failed = 0;
  for (size_t i = 0; i < tests.size(); ++i) {
    const GTestCase& t = tests[i];
    std::vector<std::string> argv = o.program;
    argv.push_back("--gtest_filter=" + t.fullName());
    std::string db = dir + "/test-" + std::to_string(i) + ".db";
    std::fflush(stdout);
    int status = recordProgram(db, argv, keep, o.scan);
    if (access(db.c_str(), F_OK) != 0) {
      std::fprintf(stderr, "memledger: recording %s failed (status %d)\n", t.fullName().c_str(), status);
      return status == 126 || status == 127 ? status : 2;
    }
    an::CheckResult r = checkFile(o, db, t.fullName());
    failed += r.passed() ? 0 : 1;
    checks.push_back({t.suite, t.name, std::move(r)});
  }
  std::printf("memledger check --per-test: %zu tests, %d failed\n", tests.size(), failed);
  if (int rc = writeReports(o, checks, false)) return rc;
  return failed ? 1 : 0;
}

int runChecks(const Options& o) {
  if (!o.file.empty()) {
    std::vector<Checked> checks;
    checks.push_back({"memledger", o.file, checkFile(o, o.file, "'" + an::printable(o.file) + "'")});
    if (int rc = writeReports(o, checks, true)) return rc;
    return checks.front().result.passed() ? 0 : 1;
  }
  // A program that cannot be executed is one line and 126/127 before anything is recorded, for
  // --per-test too (whose listing run would otherwise report a failed listing, exit 2).
  if (int rc = checkRunnable(o.program.front(), nullptr)) return rc;
  std::string dir = o.recordDir;
  bool temporary = dir.empty();
  if (temporary && (dir = makeTempDir()).empty()) {
    std::fprintf(stderr, "memledger: cannot create a temporary folder\n");
    return 2;
  }
  struct Cleanup {
    std::string path;
    ~Cleanup() { removeTree(path); }
  } cleanup{temporary ? dir : std::string()};
  if (o.perTest) return runPerTest(o, dir, !temporary);
  std::string db = dir + "/check.db";
  std::fflush(stdout);
  int status = recordProgram(db, o.program, !temporary, o.scan);
  if (access(db.c_str(), F_OK) != 0) {
    if (status == 126 || status == 127) return status;
    std::fprintf(stderr, "memledger: recording failed (status %d)\n", status);
    return 2;
  }
  std::vector<Checked> checks;
  checks.push_back({"memledger", joined(o.program), checkFile(o, db, "'" + an::printable(joined(o.program)) + "'")});
  // A program that could not start leaves a recording without processes: say so by its status.
  if ((status == 126 || status == 127) && checks.front().result.processes.empty()) return status;
  if (int rc = writeReports(o, checks, true)) return rc;
  return checks.front().result.passed() ? 0 : 1;
}

}  // namespace

int cmdCheck(int argc, char** argv) {
  // Everything after "--" is the program; CLI11 only sees what comes before.
  int split = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      split = i;
      break;
    }
  Options o;
  for (int i = split + 1; i < argc; ++i) o.program.push_back(argv[i]);

  CLI::App app{"memledger check: fail (exit 1) when a recording breaks its limits", "memledger check"};
  app.formatter(std::make_shared<UsageFormatter>("memledger check [LIMITS...] (FILE | -- PROGRAM ARGS...)"));
  app.footer(kHelpFooter);
  std::string maxLeakedBytes, maxPeak, kind = "heap";
  std::optional<int64_t> maxLeaks, maxNewSites;
  std::optional<double> growth;
  bool printDefaults = false;
  app.add_option("file", o.file, "a recording (.db) to check");
  app.add_option("--max-leaked-bytes", maxLeakedBytes, "most leaked bytes allowed (size)");
  app.add_option("--max-leaks", maxLeaks, "most leaked blocks allowed")->check(CLI::NonNegativeNumber);
  app.add_option("--max-peak", maxPeak, "highest peak allowed for --kind (size)");
  app.add_option("--kind", kind, "peak kind: heap (default), mmap, rss; device, pinned, managed (CUDA: the "
                                 "leak limits then count only that memory)");
  app.add_option("--baseline", o.baseline, "an earlier recording to compare with");
  app.add_option("--max-peak-growth", growth, "most peak growth over the baseline, percent");
  app.add_option("--max-new-leak-sites", maxNewSites, "most leak sites the baseline did not have")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--suppressions", o.suppressionFiles, "LeakSanitizer-style suppressions file (repeatable)");
  app.add_flag("--no-default-suppressions", o.noDefaultSuppressions, "do not apply the built-in list");
  app.add_flag("--print-default-suppressions", printDefaults, "print the built-in list and exit");
  app.add_option("--junit", o.junit, "write JUnit XML here");
  app.add_option("--sarif", o.sarif, "write SARIF 2.1.0 here");
  app.add_option("--sarif-root", o.sarifRoot, "source root for relative SARIF paths (default: current folder)");
  app.add_option("--record-dir", o.recordDir, "keep the recordings made by `check -- PROGRAM` in this folder");
  app.add_flag("--per-test", o.perTest, "PROGRAM is a GoogleTest binary: record and check each test alone");
  std::string leakKinds = "definite,indirect,not_classified", scan = "on";
  app.add_option("--leak-kinds", leakKinds,
                 "leak kinds that count as leaks (docs/leak-kinds.md), as memcheck's "
                 "--errors-for-leak-kinds: definite,indirect,possible,reachable,not_classified or all (every kind) "
                 "(default definite,indirect,not_classified: still-reachable blocks pass)");
  app.add_option("--scan", scan,
                 "on|off: the exit scan that classifies leaks of `check -- PROGRAM` (off: every leak "
                 "is not_classified; the scan costs the exiting process ~5 s per GiB of live heap)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--top", o.top, "sites printed (with stacks) per violation (default 10, 0 = all)");
  if (int rc = parseCommandLine(app, split, argv, "check"); rc >= 0) return rc;
  if (printDefaults) {
    std::fputs(an::defaultSuppressionsText(), stdout);
    return 0;
  }
  auto usage = [](const std::string& msg) {
    std::fprintf(stderr, "memledger: check: %s\n", msg.c_str());
    return 2;
  };
  if (o.file.empty() == o.program.empty())
    return usage(o.file.empty() ? "give a recording FILE or -- PROGRAM ARGS..." : "give a FILE or a PROGRAM, not both");
  if (!maxLeakedBytes.empty() && !(o.limits.max_leaked_bytes = an::parseSize(maxLeakedBytes)))
    return usage("--max-leaked-bytes: '" + maxLeakedBytes + "' is not a size");
  if (!maxPeak.empty() && !(o.limits.max_peak = an::parseSize(maxPeak)))
    return usage("--max-peak: '" + maxPeak + "' is not a size");
  {
    std::string err;
    if (!an::parseLeakKinds(leakKinds, &o.limits.leak_kinds, &err)) return usage("--leak-kinds: " + err);
  }
  o.scan = scan == "on";
  auto pk = an::parsePeakKind(kind);
  if (!pk) return usage("--kind: '" + kind + "' is not heap, mmap, rss, device, pinned or managed");
  o.limits.peak_kind = *pk;
  o.limits.max_leaks = maxLeaks;
  o.limits.max_new_leak_sites = maxNewSites;
  if (growth && *growth < 0) return usage("--max-peak-growth must not be negative");
  o.limits.max_peak_growth_pct = growth;
  if ((growth || maxNewSites) && o.baseline.empty())
    return usage("--max-peak-growth and --max-new-leak-sites need --baseline OLD.db");
  if (o.perTest && o.program.empty()) return usage("--per-test needs -- PROGRAM (a GoogleTest binary)");
  if (o.perTest && !o.baseline.empty()) return usage("--baseline cannot be combined with --per-test");
  if (!o.recordDir.empty() && o.program.empty()) return usage("--record-dir needs -- PROGRAM");
  if (!o.limits.max_leaked_bytes && !o.limits.max_leaks && !o.limits.max_peak && !growth && !maxNewSites)
    o.limits.max_leaks = 0;  // no limit given: leak-free, as LeakSanitizer would demand
  if (o.sarifRoot.empty()) o.sarifRoot = currentDir();
  try {
    // Bad suppression files are usage errors: find them before running anything.
    loadSuppressions(o);
    return runChecks(o);
  } catch (const an::RecordingError& e) {
    std::string msg = e.what();
    std::fprintf(stderr, "%s%s\n", msg.starts_with("memledger:") ? "" : "memledger: ", msg.c_str());
    return 2;
  } catch (const an::SuppressionError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memledger: check: %s\n", e.what());
    return 2;
  }
}

}  // namespace memledger::cli
