// The CUDA collector's glue end to end: `memledger record` sets CUDA_INJECTION64_PATH, the
// program (fake_cuda_app.cpp, playing the driver over the fake libcupti.so.13) loads
// libmemledger_cupti.so, and the recording holds its device allocations with their host stacks.
// Ground truth in fake_cuda_app.cpp's header. Also: the failure modes (another subscriber, the
// real libcupti without a driver, the user's own CUDA_INJECTION64_PATH, --no-cuda, no memledger).
#include <gtest/gtest.h>
#include <unistd.h>

#include "analyzer/analyzer.h"
#include "analyzer/export_formats.h"
#include "harness.h"
#include "profile.pb.h"

using namespace memledger::test;

namespace {

constexpr int64_t MiB = 1 << 20;

std::string fakeDir() { return binaryDir() + "/tests/fakecupti"; }
std::string fakeApp() { return fakeDir() + "/fake_cuda_app"; }
std::string probe() { return fakeDir() + "/injection_probe"; }
std::string collector() { return binaryDir() + "/lib/libmemledger_cupti.so"; }

std::string sqlText(const std::string& dbFile, const std::string& sql) {
  sqlite3* h = nullptr;
  std::string v = "<none>";
  std::string db = plainRecording(dbFile);
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_text(st, 0))
      v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return v;
}
std::string meta(const Recorded& rec, const std::string& key) {
  return sqlText(rec.db, "SELECT value FROM meta WHERE key = '" + key + "'");
}

const json* spaceNamed(const json& list, const std::string& name) {
  for (const json& s : list)
    if (s["name"] == name) return &s;
  return nullptr;
}

// Lines of memledger's own on stderr that are not its usual "recording ..." line.
int warningLines(const std::string& err) {
  int n = 0;
  size_t at = 0;
  while ((at = err.find("memledger: ", at)) != std::string::npos) {
    if (err.compare(at, 21, "memledger: recording ") != 0) ++n;
    at += 11;
  }
  return n;
}

const Recorded& fakeRun() {
  static Recorded rec = record(fakeApp(), {"0"}, RunOptions{{}, {"CUDA_INJECTION64_PATH"}});
  return rec;
}

TEST(CuptiFake, RecordLoadsTheCollectorAndTheProgramRunsOn) {
  const Recorded& rec = fakeRun();
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, "fake cuda done\n");
  EXPECT_EQ(warningLines(rec.program.err), 0) << rec.program.err;
  EXPECT_EQ(meta(rec, "collector.cupti.status"), "active");
  EXPECT_EQ(meta(rec, "collector.cupti.activity"), "memory2,memory_pool");
}

TEST(CuptiFake, DeviceAllocationsLandPerDeviceWithExactBytes) {
  const Recorded& rec = fakeRun();
  const json& peak = reportOnce(rec)["peak"];
  const json* dev0 = spaceNamed(peak["spaces"], "device:0");
  const json* dev1 = spaceNamed(peak["spaces"], "device:1");
  const json* pinned = spaceNamed(peak["spaces"], "pinned");
  const json* managed = spaceNamed(peak["spaces"], "managed");
  ASSERT_TRUE(dev0 && dev1 && pinned && managed) << peak["spaces"].dump(1);
  EXPECT_EQ((*dev0)["bytes"], 6 * MiB);  // the three 2 MiB handles; never the 1 GiB reservation
  EXPECT_EQ((*dev1)["bytes"], 3 * MiB);
  EXPECT_EQ((*pinned)["bytes"], 512 * MiB);
  EXPECT_EQ((*managed)["bytes"], 2 * MiB);
  // The host heap does not hold any of it.
  EXPECT_LT(peak["bytes"].get<int64_t>(), 1 * MiB);
}

TEST(CuptiFake, LeaksPerDeviceNameTheCallingFunction) {
  const Recorded& rec = fakeRun();
  const json& leaks = reportOnce(rec)["leaks"];
  int64_t device = 0, vmm = 0;
  for (const json& s : leaks["sites"]) {
    if (s["kind"] == "device") {
      device += s["bytes"].get<int64_t>();
      EXPECT_TRUE(stackHas(s["stack"], "leak_on_device1")) << s.dump();
      EXPECT_TRUE(stackHas(s["stack"], "fake_cudaMalloc")) << s.dump();
    }
    if (s["kind"] == "vmm") {
      vmm += s["bytes"].get<int64_t>();
      EXPECT_TRUE(stackHas(s["stack"], "grow_segments")) << s.dump();
    }
    EXPECT_NE(s["kind"], "pinned") << s.dump();
    EXPECT_NE(s["kind"], "managed") << s.dump();
    EXPECT_NE(s["kind"], "pool") << s.dump();
  }
  EXPECT_EQ(device, 3 * MiB);
  EXPECT_EQ(vmm, 2 * MiB);
  // Read from the file directly: the leaked rows, their device (tag) and ops.
  EXPECT_EQ(sqlInt(rec.db, "SELECT count(*) FROM allocations WHERE kind = 'device' AND op = 'cuMemAlloc' AND size = 3145728"), 1);
  EXPECT_EQ(sqlInt(rec.db, "SELECT count(*) FROM allocations WHERE kind = 'vmm' AND op = 'cuMemCreate' AND size = 2097152"), 1);
}

TEST(CuptiFake, EveryCallIsCountedOnceAndFailuresNotAtAll) {
  const Recorded& rec = fakeRun();
  // 80 cudaMalloc + pitch + async + 3 cuMemCreate + the leak + pinned + managed.
  EXPECT_EQ(meta(rec, "collector.cupti.allocations"), "88");
  EXPECT_EQ(meta(rec, "collector.cupti.frees"), "86");
  EXPECT_EQ(meta(rec, "collector.cupti.runtime_nested"), "161");  // 81 cudaMalloc + 80 cudaFree
  EXPECT_EQ(meta(rec, "collector.cupti.failed_calls"), "1");
  EXPECT_EQ(meta(rec, "collector.cupti.unknown_frees"), "1");
  EXPECT_EQ(meta(rec, "collector.cupti.dropped_records"), "5");
  EXPECT_EQ(meta(rec, "collector.cupti.activity_joined"), "1");  // the async allocation's record
  EXPECT_EQ(meta(rec, "collector.cupti.address_reserved_peak_bytes"), std::to_string(1ll << 30));
  EXPECT_EQ(meta(rec, "collector.cupti.pool_reserved_peak_bytes"), std::to_string(32 * MiB));
  // Per-site totals over the whole run: hot_loop's 80 allocations of 1 MiB, all freed.
  const json report = reportJson(rec.db, {"--kind", "device", "--top", "50"});
  EXPECT_EQ(report["leaks"]["bytes"], 3 * MiB);
}

TEST(CuptiFake, ReportHasEachDeviceWithItsPeakLiveSetAndLeaks) {
  const json& report = reportOnce(fakeRun());
  ASSERT_TRUE(report.contains("devices")) << report.dump(1).substr(0, 2000);
  const json& devices = report["devices"];
  ASSERT_EQ(devices.size(), 4u) << devices.dump(1);
  EXPECT_EQ(devices[0]["space"], "device:0");
  EXPECT_EQ(devices[1]["space"], "device:1");
  EXPECT_EQ(devices[2]["space"], "pinned");
  EXPECT_EQ(devices[3]["space"], "managed");
  const json& d0 = devices[0];
  EXPECT_EQ(d0["peak_bytes"], 6 * MiB);
  // Live at device 0's peak: the three 2 MiB handles of grow_segments, nothing of hot_loop.
  int64_t live = 0;
  for (const json& s : d0["peak_sites"]) {
    live += s["bytes"].get<int64_t>();
    EXPECT_EQ(s["kind"], "vmm") << s.dump();
    EXPECT_TRUE(stackHas(s["stack"], "grow_segments")) << s.dump();
  }
  EXPECT_EQ(live, 6 * MiB);
  EXPECT_EQ(d0["leak_bytes"], 2 * MiB);
  EXPECT_EQ(d0["leak_count"], 1);
  EXPECT_EQ(devices[1]["leak_bytes"], 3 * MiB);
  ASSERT_EQ(devices[1]["leak_sites"].size(), 1u);
  EXPECT_TRUE(stackHas(devices[1]["leak_sites"][0]["stack"], "leak_on_device1"));
  // The stack starts at the program's code: no frame of the collector, CUPTI or the driver.
  for (const json& f : devices[1]["leak_sites"][0]["stack"]) {
    std::string m = f["module"].is_string() ? f["module"].get<std::string>() : "";
    EXPECT_EQ(m.find("libmemledger_cupti"), std::string::npos) << f.dump();
    EXPECT_EQ(m.find("libcupti"), std::string::npos) << f.dump();
  }
  EXPECT_EQ(devices[2]["leak_bytes"], 0);
  EXPECT_EQ(devices[0]["alloc_count"], 80 + 1 + 1 + 3);  // hot_loop, pitched, stream_ordered, handles
  // Its curve: the exact 6 MiB peak is a point of it.
  int64_t top = 0;
  for (const json& p : d0["series"]) top = std::max(top, p["bytes"].get<int64_t>());
  EXPECT_EQ(top, 6 * MiB);
  ASSERT_FALSE(d0["series"].empty());
  EXPECT_LE(d0["series"].size(), 200u);
}

TEST(CuptiFake, SuggestionsNameTheHotLoopAndThePinnedBuffer) {
  const json& sugg = reportOnce(fakeRun())["suggestions"];
  const json* loop = nullptr;
  const json* pinned = nullptr;
  for (const json& s : sugg) {
    if (s["kind"] == "cuda_alloc_in_loop") loop = &s;
    if (s["kind"] == "large_pinned") pinned = &s;
  }
  ASSERT_NE(loop, nullptr) << sugg.dump(1);
  EXPECT_EQ((*loop)["evidence"]["alloc_count"], 80);
  EXPECT_EQ((*loop)["evidence"]["free_count"], 80);
  EXPECT_EQ((*loop)["evidence"]["mean_bytes"], MiB);
  EXPECT_TRUE(stackHas((*loop)["stack"], "hot_loop"));
  ASSERT_NE(pinned, nullptr) << sugg.dump(1);
  EXPECT_EQ((*pinned)["evidence"]["peak_bytes"], 512 * MiB);
  EXPECT_EQ((*loop)["evidence"]["device"], 0);
  EXPECT_TRUE(stackHas((*pinned)["stack"], "pinned_staging"));
  // Leaks per device are fix_leak suggestions at their sites.
  int leaks = 0;
  for (const json& s : sugg)
    if (s["kind"] == "fix_leak" && (stackHas(s["stack"], "leak_on_device1") || stackHas(s["stack"], "grow_segments")))
      ++leaks;
  EXPECT_EQ(leaks, 2);
}

TEST(CuptiFake, CheckLimitsDeviceMemory) {
  const Recorded& rec = fakeRun();
  auto check = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {memledgerBinary(), "check"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(rec.db);
    return run(argv);
  };
  // Device leaks: 3 MiB + 2 MiB; the host's runtime leaks do not count with --kind device.
  EXPECT_EQ(check({"--kind", "device", "--max-leaked-bytes", "5MiB"}).status, 0);
  RunResult over = check({"--kind", "device", "--max-leaked-bytes", "4MiB"});
  EXPECT_EQ(over.status, 1) << over.out << over.err;
  EXPECT_NE(over.out.find("5242880 leaked bytes > limit 4194304"), std::string::npos) << over.out;
  EXPECT_NE(over.out.find("leak_on_device1"), std::string::npos) << over.out;
  // The largest device's peak: 6 MiB on device 0.
  EXPECT_EQ(check({"--kind", "device", "--max-peak", "6MiB"}).status, 0);
  RunResult peak = check({"--kind", "device", "--max-peak", "5MiB"});
  EXPECT_EQ(peak.status, 1);
  EXPECT_NE(peak.out.find("6291456 device peak bytes > limit 5242880"), std::string::npos) << peak.out;
  EXPECT_NE(peak.out.find("grow_segments"), std::string::npos) << peak.out;
  EXPECT_EQ(check({"--kind", "pinned", "--max-peak", "512MiB"}).status, 0);
  EXPECT_EQ(check({"--kind", "pinned", "--max-peak", "511MiB"}).status, 1);
  EXPECT_EQ(check({"--kind", "gpu", "--max-peak", "1"}).status, 2);
}

TEST(CuptiFake, ExportsCarryDeviceMemoryAsItsOwnSampleTypeAndTrack) {
  namespace an = memledger::analyzer;
  an::Recording rec = an::Recording::open(fakeRun().db);
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(an::gunzipBytes(an::exportPprof(rec))));
  ASSERT_EQ(p.sample_type_size(), 6);
  EXPECT_EQ(p.string_table(static_cast<int>(p.sample_type(4).type())), "device_alloc_space");
  EXPECT_EQ(p.string_table(static_cast<int>(p.sample_type(5).type())), "device_inuse_space");
  int64_t alloc = 0, inuse = 0;
  for (const auto& s : p.sample()) {
    alloc += s.value(4);
    inuse += s.value(5);
  }
  // hot_loop 80 MiB, pitched 102400, stream_ordered 512 KiB, 3 handles 6 MiB, the 3 MiB leak.
  EXPECT_EQ(alloc, 80 * MiB + 102400 + 512 * 1024 + 6 * MiB + 3 * MiB);
  EXPECT_EQ(inuse, 5 * MiB);  // never freed: device:1's 3 MiB and device:0's last handle
  json trace = an::exportChromeTrace(rec);
  int64_t peak0 = -1, counters1 = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "i" && e["name"] == "device:0 peak") peak0 = e["args"]["bytes"];
    if (e["ph"] == "C" && e["name"] == "device:1") ++counters1;
  }
  EXPECT_EQ(peak0, 6 * MiB);
  EXPECT_GE(counters1, 1);
}

TEST(CuptiFake, TheReportMatchesItsSchema) {
  const std::string schema = sourceDir() + "/schemas/report.schema.json";
  if (run({"/usr/bin/python3", "-c", "import jsonschema"}).status != 0) GTEST_SKIP() << "no python3-jsonschema";
  RunResult rep = run({memledgerBinary(), "report", fakeRun().db, "--json"});
  ASSERT_EQ(rep.status, 0) << rep.err;
  RunOptions options;
  options.stdinData = rep.out;
  RunResult check = run({"/usr/bin/python3", "-c",
                         "import json, sys, jsonschema\n"
                         "schema = json.load(open(sys.argv[1]))\n"
                         "errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(json.load(sys.stdin)))\n"
                         "for e in errors[:5]: print('/'.join(map(str, e.absolute_path)) + ': ' + e.message[:300])\n"
                         "sys.exit(1 if errors else 0)\n",
                         schema},
                        options);
  EXPECT_EQ(check.status, 0) << check.out << check.err;
}

TEST(CuptiFake, ExitStatusPassesThrough) {
  Recorded rec = record(fakeApp(), {"42"}, RunOptions{{}, {"CUDA_INJECTION64_PATH"}});
  EXPECT_EQ(rec.program.status, 42);
  EXPECT_EQ(rec.program.out, "fake cuda done\n");
}

TEST(CuptiFake, AnotherSubscriberLeavesOneWarningAndHostRecording) {
  Recorded rec = record(fakeApp(), {"3"}, RunOptions{{{"FAKE_CUPTI_SUBSCRIBE", "39"}}, {"CUDA_INJECTION64_PATH"}});
  EXPECT_EQ(rec.program.status, 3);
  EXPECT_EQ(rec.program.out, "fake cuda done\n");
  EXPECT_EQ(warningLines(rec.program.err), 1) << rec.program.err;
  EXPECT_NE(rec.program.err.find("another tool"), std::string::npos) << rec.program.err;
  EXPECT_EQ(meta(rec, "collector.cupti.status"), "off: another CUPTI subscriber");
  EXPECT_EQ(sqlInt(rec.db, "SELECT count(*) FROM allocations WHERE kind IN ('device', 'pinned', 'managed', 'pool', 'vmm')"), 0);
}

TEST(CuptiFake, TheFakeFoundByNameReplacesTheRealOne) {
  // The probe does not link libcupti: the collector opens libcupti.so.13 by name, which
  // LD_LIBRARY_PATH makes the fake.
  Recorded rec = record(probe(), {}, RunOptions{{{"LD_LIBRARY_PATH", fakeDir()}}, {"CUDA_INJECTION64_PATH"}});
  EXPECT_EQ(rec.program.status, 7);
  EXPECT_EQ(warningLines(rec.program.err), 0) << rec.program.err;
  EXPECT_EQ(meta(rec, "collector.cupti.status"), "active");
}

TEST(CuptiReal, WithoutADriverOneWarningAndTheProgramRunsOn) {
  if (access("/usr/local/cuda/lib64/libcupti.so.13", R_OK) != 0 && access("/usr/local/cuda/lib/libcupti.so.13", R_OK) != 0)
    GTEST_SKIP() << "the real libcupti.so.13 is not installed in /usr/local/cuda";
  if (access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "this machine has a GPU driver: CUPTI would subscribe";
  Recorded rec = record(probe(), {}, RunOptions{{}, {"CUDA_INJECTION64_PATH", "LD_LIBRARY_PATH"}});
  EXPECT_EQ(rec.program.status, 7);
  EXPECT_EQ(rec.program.out, "probe ran\n");
  EXPECT_EQ(warningLines(rec.program.err), 1) << rec.program.err;
  EXPECT_NE(rec.program.err.find("CUDA memory is not recorded"), std::string::npos) << rec.program.err;
  EXPECT_EQ(meta(rec, "collector.cupti.status").rfind("off: ", 0), 0u);
  // Host recording is intact: the probe's leak is there with its stack.
  EXPECT_EQ(sumWith(reportOnce(rec)["leaks"]["sites"], "probe_leak", "bytes"), 1000);
}

TEST(CuptiRecord, TheUsersInjectionPathIsKeptWithOneWarning) {
  Recorded rec = record(probe(), {}, RunOptions{{{"CUDA_INJECTION64_PATH", "/nonexistent/libtheirs.so"}}});
  EXPECT_EQ(rec.program.status, 99);  // the probe could not load theirs: it was passed on unchanged
  EXPECT_EQ(warningLines(rec.program.err), 1) << rec.program.err;
  EXPECT_NE(rec.program.err.find("CUDA_INJECTION64_PATH is set (/nonexistent/libtheirs.so)"), std::string::npos)
      << rec.program.err;
}

TEST(CuptiRecord, NoCudaLeavesTheEnvironmentAlone) {
  TempDir dir;
  RunResult r = run({memledgerBinary(), "record", "--no-cuda", "-o", dir.file("x.db"), "--", probe()},
                    RunOptions{{}, {"CUDA_INJECTION64_PATH"}});
  EXPECT_EQ(r.status, 7);
  EXPECT_EQ(warningLines(r.err), 0) << r.err;
  EXPECT_EQ(sqlText(dir.file("x.db"), "SELECT value FROM meta WHERE key = 'collector.cupti.status'"), "<none>");
}

TEST(CuptiCollector, WithoutMemledgerOneWarningAndNothingElse) {
  RunResult r = run({fakeApp(), "5"}, RunOptions{{{"CUDA_INJECTION64_PATH", collector()}}});
  EXPECT_EQ(r.status, 5);
  EXPECT_EQ(r.out, "fake cuda done\n");
  EXPECT_EQ(warningLines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("without memledger's preload library"), std::string::npos) << r.err;
}

TEST(CudaLeakSample, WithoutADriverItFailsItsFirstCallUnharmed) {
  std::string prog = sample("cuda_leak");
  if (access(prog.c_str(), X_OK) != 0) GTEST_SKIP() << "samples/cuda_leak was not built (no nvcc)";
  if (access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "this machine has a GPU driver: tests/gpu/check.sh records it";
  RunResult plain = run({prog});
  Recorded rec = record(prog, {}, RunOptions{{}, {"CUDA_INJECTION64_PATH"}});
  EXPECT_EQ(plain.status, 3);
  EXPECT_EQ(rec.program.status, 3);
  EXPECT_EQ(rec.program.out, plain.out);
  EXPECT_NE(rec.program.err.find("cuda_leak: cudaSetDevice failed"), std::string::npos) << rec.program.err;
  EXPECT_EQ(warningLines(rec.program.err), 0) << rec.program.err;  // no driver: the collector is never loaded
}

}  // namespace
