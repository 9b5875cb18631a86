#include <gtest/gtest.h>

#include "interpose/wire.h"

// The wire format's layout is locked at compile time; this checks the stack hash is stable and
// never 0 (0 means "no stack" on the wire).
TEST(Wire, HashIsStableAndNonZero) {
  uint64_t ips[3] = {0x1000, 0x2000, 0x3000};
  EXPECT_EQ(memledger::wire::hashFrames(ips, 3), memledger::wire::hashFrames(ips, 3));
  EXPECT_NE(memledger::wire::hashFrames(ips, 3), memledger::wire::hashFrames(ips, 2));
  EXPECT_NE(memledger::wire::hashFrames(ips, 0), 0u);
}
