// analyzer::printable: text from a recording made safe for one terminal line.
#include <gtest/gtest.h>

#include <string>

#include "analyzer/format.h"

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
