// A GoogleTest binary for `memledger check --per-test`: one of its three tests leaks 4096 bytes
// from ci_gtest_leaky_helper(); the others allocate and free.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

__attribute__((noinline)) void* ci_gtest_leaky_helper() {
  void* p = std::malloc(4096);
  std::memset(p, 3, 4096);
  return p;
}

TEST(CiSample, Clean) {
  std::vector<int> v(1000, 1);
  EXPECT_EQ(v.size(), 1000u);
}

TEST(CiSample, Leaks) {
  void* p = ci_gtest_leaky_helper();
  EXPECT_NE(p, nullptr);
}

TEST(CiSample, AlsoClean) {
  std::string s(500, 'x');
  EXPECT_EQ(s.size(), 500u);
}
