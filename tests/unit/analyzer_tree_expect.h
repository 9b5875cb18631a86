// What the tree tests compare: two trees' costs field by field, and two caller/callee rows of one
// symbol (self, inclusive, every caller and callee edge).
#pragma once

#include <gtest/gtest.h>

#include "analyzer/call_tree.h"

namespace memledger::testing {

inline constexpr analyzer::TreeMetric kTreeMetrics[] = {analyzer::TreeMetric::Peak, analyzer::TreeMetric::Leaked,
                                                        analyzer::TreeMetric::Allocated, analyzer::TreeMetric::Count,
                                                        analyzer::TreeMetric::Temporary};

inline bool sameCost(const analyzer::TreeCost& a, const analyzer::TreeCost& b) {
  return a.peak == b.peak && a.leaked == b.leaked && a.allocated == b.allocated && a.count == b.count &&
         a.temporary == b.temporary;
}

// `s` (what is tested) has `p`'s (the reference's) self, inclusive, callers and callees.
inline void expectSameSymbol(const analyzer::SymbolCost& s, const analyzer::SymbolCost& p) {
  EXPECT_TRUE(sameCost(s.self, p.self)) << s.symbol;
  EXPECT_TRUE(sameCost(s.inclusive, p.inclusive)) << s.symbol;
  ASSERT_EQ(s.callers.size(), p.callers.size()) << s.symbol;
  ASSERT_EQ(s.callees.size(), p.callees.size()) << s.symbol;
  for (const auto& [name, cost] : p.callers) EXPECT_TRUE(sameCost(s.callers.at(name), cost)) << s.symbol << " <- " << name;
  for (const auto& [name, cost] : p.callees) EXPECT_TRUE(sameCost(s.callees.at(name), cost)) << s.symbol << " -> " << name;
}

}  // namespace memledger::testing
