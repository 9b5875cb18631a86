// A kind added to the registry (tests/kind_extension/extra_kind.h, forced into this build of the
// recorder and the analyzer) flows through the recorder, the file, the analyzer and the report
// with nothing else edited: its own site kind, its own space, its own peak, a valid filter.
#include <gtest/gtest.h>

#include "analyzer/analyzer.h"
#include "../unit/recorder_test_util.h"

using namespace memledger::recorder;
using namespace memledger::recorder::testutil;
namespace an = memledger::analyzer;

namespace {
class KindExtension : public RecordingFixture {};
}  // namespace

TEST_F(KindExtension, TheNewKindHasItsOwnSitesSpaceAndPeak) {
  static_assert(memledger::kinds::kKindCount == 12, "this build has one kind more");
  const AllocKind extra = AllocKind::TestExtra;
  ASSERT_STREQ(memledger::kinds::name(extra), "test_extra");

  ImageRecorder& im = image();
  std::vector<uint64_t> frames = {0x401000, 0x402000};
  im.onRecord(stack(77, frames));
  im.onRecord(alloc(1 * kMs, 0x10000, 1000, 77, 1, Op::CollectorAlloc, extra));
  im.onRecord(alloc(2 * kMs, 0x20000, 500, 77, 1, Op::CollectorAlloc, extra));
  im.onRecord(alloc(3 * kMs, 0x30000, 64, 77));  // a malloc beside them
  im.onRecord(release(4 * kMs, 0x20000, 1, Op::CollectorFree, extra));
  finish(5 * kMs);
  rec_.reset();
  db_->close();

  an::Recording r = an::Recording::open(path_);
  std::vector<an::Site> sites = an::sites(r, {.kind = std::string("test_extra")});
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].alloc_count, 2);
  EXPECT_EQ(sites[0].alloc_bytes, 1500);
  EXPECT_EQ(sites[0].leak_bytes, 1000);
  EXPECT_EQ(sites[0].peak_bytes, 1500);  // at its own space's peak
  EXPECT_EQ(sites[0].space, "managed");  // the registry's space for it

  an::Peak p = an::peak(r);
  EXPECT_EQ(p.bytes, 64);  // the heap peak does not move
  bool found = false;
  for (const an::SpacePeak& s : p.spaces)
    if (s.name == "managed") {
      found = true;
      EXPECT_EQ(s.bytes, 1500);
      EXPECT_EQ(s.time_ns, static_cast<int64_t>(2 * kMs));
    }
  EXPECT_TRUE(found);

  an::Leaks l = an::leaks(r);
  EXPECT_EQ(l.bytes, 1064);
  nlohmann::json j = an::toJson(an::report(r, {.kind = std::string("test_extra")}));
  EXPECT_EQ(j["leaks"]["sites"][0]["kind"], "test_extra");
  EXPECT_EQ(j["leaks"]["bytes"], 1000);
}
