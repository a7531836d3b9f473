#include "tiletune/occupancy.hpp"

#include <gtest/gtest.h>

using namespace tiletune;

// Each expectation is worked out by hand from the device's per-SM limits: registers are allocated per warp
// in units of 256, shared memory per block includes the 1 KB the driver reserves.
TEST(Occupancy, H100ThreadsAndRegistersTie) {
  // 256 threads x 32 regs: 8 warps x 1024 regs = 8192 per block -> 8 blocks by registers; 2048/256 = 8 by
  // threads.
  const Occupancy o = compute_occupancy(load_profile("h100"), 256, 32, 0, 0);
  EXPECT_EQ(o.active_blocks, 8);
  EXPECT_EQ(o.active_warps, 64);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.limiter, "threads+registers");
}

TEST(Occupancy, H100RegisterBound) {
  // 128 threads x 64 regs: 4 warps x 2048 = 8192 per block -> 8 blocks (threads would allow 16).
  const Occupancy o = compute_occupancy(load_profile("h100"), 128, 64, 0, 0);
  EXPECT_EQ(o.active_blocks, 8);
  EXPECT_EQ(o.active_warps, 32);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limiter, "registers");
  // 64 threads x 255 regs: 255 rounds to 256 per thread, 8192 per warp, 16384 per block -> 4 blocks.
  const Occupancy big = compute_occupancy(load_profile("h100"), 64, 255, 0, 0);
  EXPECT_EQ(big.active_blocks, 4);
  EXPECT_EQ(big.active_warps, 8);
  EXPECT_EQ(big.limiter, "registers");
}

TEST(Occupancy, H100SharedMemoryBound) {
  // 48 KB static + 1 KB reserved = 49 KB a block; 228 KB per SM holds 4 (5 would need 245 KB).
  const Occupancy o = compute_occupancy(load_profile("h100"), 256, 16, 48 * 1024, 0);
  EXPECT_EQ(o.active_blocks, 4);
  EXPECT_EQ(o.active_warps, 32);
  EXPECT_EQ(o.limiter, "shared_memory");
  // Dynamic shared memory counts the same: 100 KB dynamic + 1 KB -> 2 blocks.
  const Occupancy d = compute_occupancy(load_profile("h100"), 128, 32, 0, 100 * 1024);
  EXPECT_EQ(d.active_blocks, 2);
  EXPECT_EQ(d.limiter, "shared_memory");
}

TEST(Occupancy, BlockCountBound) {
  // 32 threads x 32 regs on the A100: threads allow 64 blocks, registers 64, the SM only 32.
  const Occupancy o = compute_occupancy(load_profile("a100"), 32, 32, 0, 0);
  EXPECT_EQ(o.active_blocks, 32);
  EXPECT_EQ(o.active_warps, 32);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limiter, "blocks");
}

TEST(Occupancy, AdaHasFewerThreadsPerSm) {
  // RTX 4090: 1536 threads per SM; 512 x 32 regs -> 3 blocks by threads, 4 by registers.
  const Occupancy o = compute_occupancy(load_profile("rtx4090"), 512, 32, 0, 0);
  EXPECT_EQ(o.active_blocks, 3);
  EXPECT_EQ(o.active_warps, 48);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.limiter, "threads");
}
