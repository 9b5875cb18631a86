// The kind registry (schemas/kinds.h) and the per-site counters (schemas/site_counters.h) are the
// one definition that the recorder, the schema text and the analyzer follow.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "analyzer/sql.h"
#include "schemas/kinds.h"
#include "schemas/site_counters.h"

namespace kinds = memledger::kinds;

namespace {
std::string schemaText() {
  std::ifstream in(std::string(MEMLEDGER_SOURCE_DIR) + "/schemas/memledger.sql");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST(KindRegistry, NamesAndCodesAreUniqueAndDense) {
  std::set<std::string> names;
  for (size_t i = 0; i < kinds::kKindCount; ++i) {
    EXPECT_EQ(kinds::kKinds[i].code, i);
    EXPECT_TRUE(names.insert(kinds::kKinds[i].name).second) << kinds::kKinds[i].name;
    EXPECT_EQ(kinds::byName(kinds::kKinds[i].name), &kinds::kKinds[i]);
  }
  EXPECT_EQ(kinds::byName("MALLOC"), nullptr);  // names are exact
  EXPECT_FALSE(kinds::known(kinds::kKindCount));
}

TEST(KindRegistry, TheAnalyzerNamesEveryKindTheRecorderWrites) {
  for (const kinds::KindInfo& k : kinds::kKinds)
    EXPECT_STREQ(memledger::analyzer::detail::siteKindName(k.code), k.name);
  EXPECT_STREQ(memledger::analyzer::detail::siteKindName(kinds::kKindCount), "");
  EXPECT_EQ(memledger::analyzer::detail::heapKindsSql(), "('malloc', 'new')");
}

TEST(KindRegistry, SpacesAndShapesOfTheKindsToCome) {
  EXPECT_EQ(kinds::spaceOf(kinds::Kind::Malloc), kinds::Space::HostHeap);
  EXPECT_EQ(kinds::shapeOf(kinds::Kind::Mmap), kinds::Shape::Range);
  EXPECT_EQ(kinds::shapeOf(kinds::Kind::Custom), kinds::Shape::PoolBlock);  // never counted twice
  EXPECT_EQ(kinds::spaceOf(kinds::Kind::Device), kinds::Space::Device);
  EXPECT_EQ(kinds::spaceOf(kinds::Kind::Pinned), kinds::Space::Pinned);
  EXPECT_EQ(kinds::spaceOf(kinds::Kind::Managed), kinds::Space::Managed);
  EXPECT_EQ(kinds::shapeOf(kinds::Kind::TorchBlock), kinds::Shape::PoolBlock);
  EXPECT_STREQ(kinds::opName(static_cast<uint64_t>(kinds::Op::CuMemAlloc)), "cuMemAlloc");
  EXPECT_STREQ(kinds::opName(static_cast<uint64_t>(kinds::Op::Count)), "unknown");
}

TEST(SchemaText, VersionAndCountersMatchTheirOneDefinition) {
  std::string sql = schemaText();
  EXPECT_NE(sql.find("PRAGMA user_version = " + std::to_string(memledger::schema::kSchemaVersion) + ";"),
            std::string::npos);
  // The schema documents the counters in the order site_totals stores them.
  size_t at = sql.find("CREATE TABLE site_totals") == std::string::npos ? 0 : sql.find("--   alloc_count");
  ASSERT_NE(at, std::string::npos);
#define MEMLEDGER_CHECK_ORDER(name)                                     \
  {                                                                     \
    size_t next = sql.find("--   " #name " ", at);                      \
    EXPECT_NE(next, std::string::npos) << #name " missing or out of order"; \
    if (next != std::string::npos) at = next;                           \
  }
  MEMLEDGER_SITE_COUNTERS(MEMLEDGER_CHECK_ORDER)
#undef MEMLEDGER_CHECK_ORDER
  EXPECT_EQ(memledger::schema::kSiteCounters, 18);
}
