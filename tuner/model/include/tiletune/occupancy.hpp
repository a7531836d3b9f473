// Theoretical occupancy from the device limits and the compiled kernel's resources, through the CUDA
// occupancy calculator (cuda_occupancy.h), which needs no GPU.
#pragma once

#include <string>

#include "tiletune/device.hpp"

namespace tiletune {

struct Occupancy {
  int active_blocks = 0;  // per SM
  int active_warps = 0;   // per SM
  double fraction = 0;    // active warps / max warps per SM
  std::string limiter;  // the binding limits: "threads", "registers", "shared_memory", "blocks", "barriers",
                        // joined by '+' on a tie
  std::string error;    // non-empty when the calculator refused the inputs
};

Occupancy compute_occupancy(const DeviceLimits& device, int threads_per_block, int registers_per_thread,
                            long long static_smem, long long dynamic_smem);

}  // namespace tiletune
