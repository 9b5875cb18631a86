// memledger record [-o FILE] [--force] [options] -- PROGRAM ARGS...
// Checks everything that can fail before the program starts (program runnable, preload library
// present, output file creatable), then hands over to the recorder's session.
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "analyzer/format.h"
#include "commands.h"
#include "cuda_injection.h"
#include "output_file.h"
#include "recorder/launch.h"
#include "recorder/session.h"
#include "runnable.h"

namespace memledger::cli {
namespace {

constexpr const char* kRecordUsage = "memledger record [-o FILE] [--force] [OPTIONS] -- PROGRAM ARGS...";

std::string findPreload() {
  std::string self = selfDir();
  for (const char* rel : {"/../lib/", "/../lib/memledger/"}) {
    std::string cand = self + rel + MEMLEDGER_PRELOAD_NAME;
    char real[PATH_MAX];
    if (::access(cand.c_str(), R_OK) == 0 && ::realpath(cand.c_str(), real)) return real;
  }
  return {};
}

// The file is created here, exclusively and without following a planted symlink, before the
// program runs: a recording never overwrites anything unless --force says so.
bool createOutput(const std::string& path, bool force) {
  if (force) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      std::fprintf(stderr, "memledger: cannot write '%s': %s\n", path.c_str(), std::strerror(errno));
      return false;
    }
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::fprintf(stderr, "memledger: cannot write '%s': %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  ::close(fd);
  // A journal left beside a file of the same name would be replayed into the new recording.
  ::unlink((path + "-wal").c_str());
  ::unlink((path + "-shm").c_str());
  ::unlink((path + "-journal").c_str());
  return true;
}

}  // namespace

int cmdRecord(int argc, char** argv) {
  // Everything after `--` is the program. `--` is required: without it a typo in an option
  // could start the program (`record -o x.db prog` would be ambiguous with option values).
  std::vector<std::string> ours = {argv[0]};
  std::vector<std::string> program;
  bool separator = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      program.assign(argv + i + 1, argv + argc);
      separator = true;
      break;
    }
    if (a.empty() || a[0] != '-') {
      std::fprintf(stderr, "memledger: record: put '--' before the program: %s\n", kRecordUsage);
      return 2;
    }
    ours.push_back(a);
    bool takesValue = (a == "-o" || a == "--output" || a == "--bucket-ms" || a == "--fold-ms" || a == "--scan");
    if (takesValue && i + 1 < argc) ours.push_back(argv[++i]);
  }

  CLI::App app{"Record a program's memory into one SQLite file (zstd-compressed once complete)", "memledger record"};
  std::string output;
  bool force = false, noFollow = false, noFold = false, noSymbols = false, noCompress = false,
       noPython = false, pythonAllocators = false, noCuda = false;
  double bucketMs = 1.0, foldMs = 0;
  app.add_option("-o,--output", output, "recording file (default memledger.PROGRAM.PID.db, PID: the recorder's)");
  app.add_flag("--force", force, "replace FILE if it exists");
  app.add_flag("--no-follow-children", noFollow, "record only the started program, not its children");
  app.add_flag("--no-fold", noFold,
               "write every allocation as a row (default: only blocks still live when their process "
               "ends; freed ones are counted exactly in per-site totals and per-site activity over time)");
  auto* foldOpt = app.add_option("--fold-ms", foldMs,
                                 "also write a row for each freed block that lived at least this long")
                      ->check(CLI::NonNegativeNumber);
  app.add_option("--bucket-ms", bucketMs, "timeline bucket width")->check(CLI::PositiveNumber);
  app.add_flag("--no-python", noPython,
               "no Python frames in the stacks of CPython processes, native frames only (leaks still count when the interpreter starts finalizing: docs/python.md)");
  app.add_flag("--python-allocators", pythonAllocators,
               "also record CPython's small objects, which pymalloc serves without malloc, as kind "
               "pyobject: blocks in use of the pool 'pymalloc', whose arenas count in the mmap space "
               "(heap and leak totals do not change; docs/python.md)");
  app.add_flag("--no-symbols", noSymbols, "skip symbolization at the end (frames stay empty)");
  app.add_flag("--no-compress", noCompress,
               "keep FILE plain SQLite (default: once the recording is complete it is compressed "
               "with zstd; `zstd -d < FILE > plain.db` gives the SQLite file back)");
  std::string scan = "on";
  app.add_option("--scan", scan,
                 "on|off: at each process's normal exit scan its memory for pointers and classify "
                 "its leaks as definite/indirect/possible/reachable (docs/leak-kinds.md; the process "
                 "waits while its heap is read: ~5 s per GiB of live heap, bench/leak_scan_bench.sh)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_flag("--no-cuda", noCuda,
               "do not load the CUDA collector (by default CUDA_INJECTION64_PATH is set to "
               "libmemledger_cupti.so, beside the preload library, when it is installed)");
  std::vector<char*> cargv;
  for (std::string& s : ours) cargv.push_back(s.data());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::CallForHelp& e) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "memledger: record: %s\n", e.what());
    return 2;
  }
  if (!separator || program.empty()) {
    std::fprintf(stderr, "memledger: record: no program given\nusage: %s\n", kRecordUsage);
    return 2;
  }

  // A program that cannot be executed is refused before the output exists: it leaves no recording.
  std::string programPath;
  if (int rc = checkRunnable(program[0], &programPath)) return rc;
  std::string preload = findPreload();
  if (preload.empty()) {
    std::fprintf(stderr, "memledger: cannot find %s in %s/../lib or %s/../lib/memledger\n",
                 MEMLEDGER_PRELOAD_NAME, selfDir(), selfDir());
    return 2;
  }
  if (output.empty()) output = "memledger." + std::string(analyzer::pathBaseName(program[0])) + "." + std::to_string(::getpid()) + ".db";
  if (!outputAllowed(output, force, "record") || !createOutput(output, force)) return 2;

  recorder::BinaryInfo bin = recorder::inspectBinary(programPath);
  if (bin.isStatic)
    std::fprintf(stderr, "memledger: warning: '%s' is statically linked; nothing can be recorded\n",
                 program[0].c_str());
  else if (bin.secure)
    std::fprintf(stderr, "memledger: warning: '%s' is setuid/setgid; the loader ignores LD_PRELOAD, nothing can be recorded\n",
                 program[0].c_str());
  std::fprintf(stderr, "memledger: recording '%s' to %s\n", program[0].c_str(), output.c_str());
  setupCudaInjection(preload, noCuda);

  // The preload library reads it in every process of the tree (interpose/python_frames.h).
  if (noPython) setenv("MEMLEDGER_PYTHON", "0", 1);
  // Set either way: the program's environment is then the same with and without the option (one
  // variable more can grow os.environ's dict, a heap block that would differ).
  setenv("MEMLEDGER_PYTHON_ALLOCATORS", pythonAllocators ? "1" : "0", 1);
  recorder::SessionOptions opt;
  opt.argv = program;
  opt.programPath = programPath;
  opt.output = output;
  opt.preload = preload;
  opt.followChildren = !noFollow;
  opt.symbolize = !noSymbols;
  opt.compress = !noCompress;
  opt.leakScan = scan == "on";
  opt.warnIfNothingRegisters = !bin.isStatic && !bin.secure;
  opt.recording.fold = !noFold;
  opt.recording.fold_threshold_ns =
      foldOpt->count() ? static_cast<uint64_t>(foldMs * 1e6) : recorder::kLeaksOnly;
  opt.recording.bucket_ns = static_cast<uint64_t>(bucketMs * 1e6);
  if (opt.recording.bucket_ns == 0) opt.recording.bucket_ns = 1;
  opt.version = MEMLEDGER_VERSION;
  opt.exitWhenDone = true;  // `record` is the process's last act: no teardown of the recorder's tables
  return recorder::runSession(opt);
}

}  // namespace memledger::cli
