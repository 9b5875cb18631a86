// analyzer::printable: text from a recording made safe for one terminal line.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/format.h"

using memledger::analyzer::formatEvidence;
using memledger::analyzer::printable;

TEST(AnalyzerPrintable, EscapesControlCharactersOnly) {
  EXPECT_EQ(printable("/bin/sh -c x=1\ntrue"), "/bin/sh -c x=1\\ntrue");
  EXPECT_EQ(printable("a\tb\rc\x1b[31m"), "a\\tb\\rc\\e[31m");
  EXPECT_EQ(printable(std::string("nul\0end", 7)), "nul\\x00end");
  EXPECT_EQ(printable("bell\x07 del\x7f"), "bell\\x07 del\\x7f");
  // Kept as is: plain text, backslashes, UTF-8.
  EXPECT_EQ(printable("grep 'a\\.b' f\xc3\xa9.txt"), "grep 'a\\.b' f\xc3\xa9.txt");
  EXPECT_EQ(printable(""), "");
}

// A suggestion's evidence as the GUI shows it: units by the key's name, in the key's order.
TEST(AnalyzerFormatEvidence, UnitsByKeyName) {
  nlohmann::json peak = {{"peak_bytes", 314572800}, {"share", 1.0}, {"site_peak_bytes", 314572800}, {"site_peak_count", 300}};
  EXPECT_EQ(formatEvidence(peak), "peak: 300.0 MiB · share: 100% · site peak: 300.0 MiB · site peak count: 300");
  nlohmann::json churn = {{"temp_count", 1234567}, {"mean_lifetime_ns", 1500}, {"min_size", 64}, {"growth_factor", 1.5},
                          {"pid", 4242}, {"kind", "malloc"}};
  EXPECT_EQ(formatEvidence(churn), "growth factor: 1.50 · kind: malloc · mean lifetime: 1.5 us · min size: 64 B · "
                                   "pid: 4242 · temp count: 1,234,567");
  EXPECT_EQ(formatEvidence(nlohmann::json::object()), "");
  EXPECT_EQ(formatEvidence(nlohmann::json()), "");
}
