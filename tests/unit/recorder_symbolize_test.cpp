// Symbolization driving: ips matched to modules (own, dlclose'd, inherited through fork), one
// lookup per distinct (path, address) across images, frames and build ids written back.
#include <map>

#include "recorder/symbolize_driver.h"
#include "recorder_test_util.h"

namespace memledger::recorder {
namespace {

using namespace testutil;

class FakeSource : public SymbolSource {
 public:
  std::vector<SymbolFrame> symbolize(const std::string& path, uint64_t address) override {
    ++calls[{path, address}];
    if (path == "/lib/libinl.so") return {{"inlined", "a.h", 3}, {"outer", "a.cpp", 10}};
    if (path == "/usr/bin/prog") return {{"main", "prog.c", static_cast<int>(address & 0xff)}};
    return {SymbolFrame{}};
  }
  std::string buildId(const std::string& path) override {
    return path == "/usr/bin/prog" ? "abcdef" : "";
  }
  std::map<std::pair<std::string, uint64_t>, int> calls;
};

Decoded module(uint64_t t, uint64_t bias, uint64_t start, uint64_t end, const char* path) {
  Decoded d{};
  d.type = RecordType::Module;
  d.ts = kOrigin + t;
  d.a = bias;
  d.b = start;
  d.c = end;
  d.text = path;
  return d;
}

class RecorderSymbolize : public RecordingFixture {
 protected:
  // Symbolizes the recording with `src` and commits; false (the error reported) when it fails.
  bool symbolize(FakeSource& src, SymbolizeStats* stats = nullptr) {
    std::string err;
    const bool ok = symbolizeRecording(db_->handle(), src, stats, &err);
    EXPECT_TRUE(ok) << err;
    db_->commit();
    return ok;
  }
};

TEST_F(RecorderSymbolize, FramesPerIpWithModulesAndForkInheritance) {
  const std::vector<uint64_t> frames = {0x400510, 0x7f0000001234, 0x12345678};
  ImageRecorder& parent = image(10, 1);
  parent.onRecord(module(0, 0, 0x400000, 0x401000, ""));  // the program, reported without a name
  parent.onRecord(module(0, 0x7f0000000000, 0x7f0000000000, 0x7f0000002000, "/lib/libinl.so"));
  parent.onRecord(stack(0x51, frames));
  parent.onRecord(alloc(1 * kMs, 0x1000, 8, 0x51));
  ImageRecorder& child = image(11, 10, true);
  child.onRecord(alloc(2 * kMs, 0x2000, 8, 0x51));  // stack and modules come from the parent
  finish(3 * kMs);
  FakeSource src;
  SymbolizeStats stats;
  ASSERT_TRUE(symbolize(src, &stats));

  EXPECT_EQ(stats.ips, 6u);         // 3 per image
  EXPECT_EQ(stats.withModule, 4u);  // 0x12345678 is in no module
  EXPECT_EQ(stats.lookups, 2u);     // the child's ips reuse the parent's answers
  EXPECT_EQ(src.calls.size(), 2u);
  EXPECT_EQ((src.calls[{"/usr/bin/prog", 0x40050f}]), 1);           // ip - bias - 1
  EXPECT_EQ((src.calls[{"/lib/libinl.so", 0x1233}]), 1);
  EXPECT_EQ(text("SELECT function FROM frames WHERE ip_id = 1"), "main");
  EXPECT_EQ(query("SELECT line FROM frames WHERE ip_id = 1"), 0x0f);
  EXPECT_EQ(query("SELECT count(*) FROM frames WHERE ip_id = 2"), 2);
  EXPECT_EQ(text("SELECT function FROM frames WHERE ip_id = 2 AND depth = 0"), "inlined");
  EXPECT_EQ(text("SELECT function FROM frames WHERE ip_id = 2 AND depth = 1"), "outer");
  EXPECT_EQ(query("SELECT count(*) FROM frames WHERE ip_id = 3"), 0);
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE id = 3"), -2);
  // The child's ips point at the parent's module rows.
  EXPECT_EQ(query("SELECT count(*) FROM ips WHERE image_id = 2 AND module_id IS NOT NULL"), 2);
  EXPECT_EQ(text("SELECT function FROM frames f JOIN ips i ON i.id = f.ip_id "
                 "WHERE i.image_id = 2 AND f.depth = 0 AND i.address = 4195600"),
            "main");
  EXPECT_EQ(text("SELECT build_id FROM modules WHERE id = 1"), "abcdef");
  EXPECT_EQ(query("SELECT build_id FROM modules WHERE id = 2"), -2);
}

TEST_F(RecorderSymbolize, UnknownFunctionIsNullAndDlclosedModulesStillCount) {
  const std::vector<uint64_t> frames = {0x7f0000000100};
  ImageRecorder& im = image();
  im.onRecord(module(0, 0x7f0000000000, 0x7f0000000000, 0x7f0000001000, "/lib/gone.so"));
  im.onRecord(stack(0x77, frames));
  im.onRecord(alloc(1 * kMs, 0x1000, 8, 0x77));
  Decoded gone{};
  gone.type = RecordType::ModuleGone;
  gone.ts = kOrigin + 2 * kMs;
  gone.a = 0x7f0000000000;
  gone.b = 0x7f0000000000;
  im.onRecord(gone);
  finish(3 * kMs);
  FakeSource src;
  ASSERT_TRUE(symbolize(src));
  EXPECT_EQ(query("SELECT module_id FROM ips"), 1);
  EXPECT_EQ(query("SELECT count(*) FROM frames"), 1);
  EXPECT_EQ(query("SELECT function FROM frames"), -2);
}

// The recorder writes an ip's module_id with its row, from the modules its image has loaded at
// that moment; symbolization corrects only what it answers differently (here: an ip recorded
// before its module's record, and a fork child's ips in its parent's modules).
TEST_F(RecorderSymbolize, ModuleIdsWrittenWithIpsAreCorrectedWhereTheyDiffer) {
  ImageRecorder& parent = image(10, 1);
  parent.onRecord(module(0, 0, 0x400000, 0x401000, "/usr/bin/prog"));
  parent.onRecord(stack(0x51, {0x400510, 0x7f0000001234, 0x12345678}));
  parent.onRecord(alloc(1 * kMs, 0x1000, 8, 0x51));
  parent.onRecord(module(2 * kMs, 0x7f0000000000, 0x7f0000000000, 0x7f0000002000, "/lib/libinl.so"));
  parent.onRecord(stack(0x52, {0x7f0000001300}));
  parent.onRecord(alloc(3 * kMs, 0x2000, 8, 0x52));
  ImageRecorder& child = image(11, 10, true);
  child.onRecord(stack(0x53, {0x400520}));
  child.onRecord(alloc(4 * kMs, 0x3000, 8, 0x53));
  finish(5 * kMs);
  db_->commit();
  // As recorded: the libinl.so ip of the first stack came before its module; the child has no
  // module rows of its own.
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE address = 4195600"), 1);          // 0x400510
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE address = 139637976732212"), -2);  // 0x7f0000001234
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE address = 139637976732416"), 2);   // 0x7f0000001300
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE image_id = 2"), -2);
  FakeSource src;
  ASSERT_TRUE(symbolize(src));
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE address = 4195600"), 1);
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE address = 139637976732212"), 2);
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE address = 139637976732416"), 2);
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE address = 305419896"), -2);  // 0x12345678: none
  EXPECT_EQ(query("SELECT module_id FROM ips WHERE image_id = 2"), 1);
}

}  // namespace
}  // namespace memledger::recorder
