#include <gtest/gtest.h>

#include "analyzer/suppressions.h"

using memledger::analyzer::Frame;
using memledger::analyzer::Stack;
using memledger::analyzer::SuppressionError;
using memledger::analyzer::SuppressionList;
using memledger::analyzer::templateMatch;

namespace {

Frame fn(const char* function, const char* file = nullptr, const char* module = nullptr) {
  Frame f;
  if (function) f.function = function;
  if (file) f.file = file;
  if (module) f.module = module;
  return f;
}

}  // namespace

TEST(CiSuppressions, TemplateMatchFollowsLeakSanitizer) {
  EXPECT_TRUE(templateMatch("parse", "json::parse_value"));  // unanchored: anywhere
  EXPECT_TRUE(templateMatch("^json::", "json::parse_value"));
  EXPECT_FALSE(templateMatch("^parse", "json::parse_value"));
  EXPECT_TRUE(templateMatch("value$", "json::parse_value"));
  EXPECT_FALSE(templateMatch("parse$", "json::parse_value"));
  EXPECT_TRUE(templateMatch("json*value", "json::parse_value"));
  EXPECT_TRUE(templateMatch("^j*e$", "json::parse_value"));
  EXPECT_FALSE(templateMatch("^j*x$", "json::parse_value"));
  EXPECT_TRUE(templateMatch("a$", "aba"));  // the last 'a', not the first
  EXPECT_TRUE(templateMatch("*", "x"));
  EXPECT_FALSE(templateMatch("x", ""));
  EXPECT_TRUE(templateMatch("libfoo.so", "/usr/lib/libfoo.so.1"));
}

TEST(CiSuppressions, MatchesFunctionFileOrModuleOfAnyFrame) {
  SuppressionList list;
  list.addText("# comment\n\n  leak:third_party/*\nleak:^Cache::fill$\nleak:libvendor.so\n", "my.supp");
  ASSERT_EQ(list.entries().size(), 3u);
  EXPECT_EQ(list.entries()[0].origin, "my.supp:3");
  EXPECT_EQ(list.entries()[1].pattern, "^Cache::fill$");

  Stack byFile = {fn("helper", "/src/third_party/z/zutil.c"), fn("main", "/src/main.c")};
  Stack byFunction = {fn("alloc_node"), fn("Cache::fill", "/src/cache.cpp"), fn("main")};
  Stack byModule = {fn(nullptr, nullptr, "/opt/lib/libvendor.so.3"), fn("main")};
  Stack none = {fn("Cache::fill_more", "/src/cache.cpp"), fn("main", "/src/main.c")};
  ASSERT_NE(list.match(byFile), nullptr);
  EXPECT_EQ(list.match(byFile)->pattern, "third_party/*");
  ASSERT_NE(list.match(byFunction), nullptr);
  EXPECT_EQ(list.match(byFunction)->pattern, "^Cache::fill$");
  ASSERT_NE(list.match(byModule), nullptr);
  EXPECT_EQ(list.match(byModule)->pattern, "libvendor.so");
  EXPECT_EQ(list.match(none), nullptr);
  EXPECT_EQ(list.match(Stack{}), nullptr);
}

TEST(CiSuppressions, BadLinesAreErrorsWithTheirLine) {
  SuppressionList list;
  try {
    list.addText("leak:ok\nrace:foo\n", "x.supp");
    FAIL() << "race: accepted";
  } catch (const SuppressionError& e) {
    EXPECT_STREQ(e.what(), "memledger: x.supp:2: unknown suppression type 'race' (only leak: is supported)");
  }
  EXPECT_THROW(list.addText("leak:\n", "x.supp"), SuppressionError);
  EXPECT_THROW(list.addText("just a word\n", "x.supp"), SuppressionError);
  EXPECT_THROW(list.addFile("/nonexistent/memledger.supp"), SuppressionError);
}

TEST(CiSuppressions, DefaultsCoverRuntimeOneTimeAllocationsButNotProgramCode) {
  SuppressionList list;
  list.addDefaults();
  ASSERT_FALSE(list.empty());
  Stack stdio = {fn("_IO_file_doallocate", nullptr, "/lib/x86_64-linux-gnu/libc.so.6"), fn("printf"), fn("main")};
  Stack preMain = {fn(nullptr, nullptr, "/lib/x86_64-linux-gnu/libstdc++.so.6"),
                   fn(nullptr, nullptr, "/lib64/ld-linux-x86-64.so.2")};
  Stack tls = {fn("__tls_get_addr", nullptr, "/lib64/ld-linux-x86-64.so.2"), fn("worker")};
  Stack threadStack = {fn("pthread_create@@GLIBC_2.34"), fn("main")};
  EXPECT_NE(list.match(stdio), nullptr);
  EXPECT_NE(list.match(preMain), nullptr);
  EXPECT_NE(list.match(tls), nullptr);
  EXPECT_NE(list.match(threadStack), nullptr);
  // A program's own leak, called from main through libc's start code, stays visible.
  Stack own = {fn("leak_here", "/src/prog.c", "/usr/bin/prog"), fn("main", "/src/prog.c", "/usr/bin/prog"),
               fn("__libc_start_call_main", nullptr, "/lib/x86_64-linux-gnu/libc.so.6"),
               fn("__libc_start_main_impl", nullptr, "/lib/x86_64-linux-gnu/libc.so.6"), fn("_start")};
  EXPECT_EQ(list.match(own), nullptr);
  // A thread's own leak (start_thread/clone3 at the bottom) stays visible too.
  Stack inThread = {fn("worker_leak", "/src/w.c"), fn("start_thread", nullptr, "/lib/x86_64-linux-gnu/libc.so.6"),
                    fn("clone3", nullptr, "/lib/x86_64-linux-gnu/libc.so.6")};
  EXPECT_EQ(list.match(inThread), nullptr);
}
