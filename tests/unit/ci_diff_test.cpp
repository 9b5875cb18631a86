#include <gtest/gtest.h>

#include "analyzer/diff.h"
#include "ci_fixture.h"

namespace an = memledger::analyzer;
using memledger::testing::buildCiRecording;
using memledger::testing::CiRecordingOptions;

TEST(CiDiff, SiteKeyUsesNamesNotLinesOrAddresses) {
  an::Frame f;
  f.function = "leak_here";
  f.file = "/build1/src/prog.c";
  f.line = 10;
  an::Frame g = f;
  g.file = "/build2/src/prog.c";
  g.line = 14;
  an::Frame unknown;
  unknown.module = "/usr/lib/libz.so.1";
  EXPECT_EQ(an::siteKey({f, unknown}), "leak_here@prog.c;??@libz.so.1");
  EXPECT_EQ(an::siteKey({f}), an::siteKey({g}));
}

TEST(CiDiff, NamesTheChangedSiteFirstAndFlagsNewOnes) {
  an::Recording a = an::Recording::open(buildCiRecording("diff-a.db"));
  CiRecordingOptions o;
  o.leakLine = 11;             // another build: lines moved
  o.tableAllocBytes = 90000;   // build_table allocates 40000 B more
  o.extraLeakSite = true;      // and a new leak appeared
  an::Recording b = an::Recording::open(buildCiRecording("diff-b.db", o));
  an::DiffResult d = an::diff(a, b);
  ASSERT_EQ(d.sites.size(), 2u);  // leak_here only moved lines: unchanged, left out
  EXPECT_EQ(d.sites[0].stack.at(0).function, "build_table");
  EXPECT_EQ(d.sites[0].status, an::DiffStatus::Changed);
  EXPECT_EQ(d.sites[0].impact, 40000);
  EXPECT_EQ(d.sites[0].b.alloc_bytes - d.sites[0].a.alloc_bytes, 40000);
  EXPECT_EQ(d.sites[1].stack.at(0).function, "new_leak");
  EXPECT_EQ(d.sites[1].status, an::DiffStatus::New);
  EXPECT_EQ(d.sites[1].impact, 512);
  EXPECT_EQ(d.leak_bytes_b - d.leak_bytes_a, 512);

  nlohmann::json j = an::toJson(d);
  EXPECT_EQ(j["sites"][0]["status"], "changed");
  EXPECT_EQ(j["sites"][0]["delta"]["alloc_bytes"], 40000);
  EXPECT_EQ(j["sites"][1]["status"], "new");
  EXPECT_EQ(j["totals"]["leak_bytes"]["delta"], 512);
  std::string text = an::formatDiff(d, 0);
  EXPECT_NE(text.find("[changed] new  impact 40000 bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("#0 build_table (/src/table.cpp:33)"), std::string::npos) << text;

  // The other direction: the new leak is gone.
  an::DiffResult back = an::diff(b, a);
  ASSERT_EQ(back.sites.size(), 2u);
  EXPECT_EQ(back.sites[1].status, an::DiffStatus::Gone);
}

TEST(CiDiff, IdenticalRecordingsHaveNoSiteDiffs) {
  an::Recording a = an::Recording::open(buildCiRecording("diff-same-a.db"));
  an::Recording b = an::Recording::open(buildCiRecording("diff-same-b.db"));
  an::DiffResult d = an::diff(a, b);
  EXPECT_TRUE(d.sites.empty());
  EXPECT_NE(an::formatDiff(d, 20).find("no site changed"), std::string::npos);
}
