#include "tiletune/occupancy.hpp"

#include <cuda_occupancy.h>

namespace tiletune {

Occupancy compute_occupancy(const DeviceLimits& device, int threads_per_block, int registers_per_thread,
                            long long static_smem, long long dynamic_smem) {
  cudaOccDeviceProp prop;
  prop.computeMajor = device.cc_major;
  prop.computeMinor = device.cc_minor;
  prop.maxThreadsPerBlock = device.max_threads_per_block;
  prop.maxThreadsPerMultiprocessor = device.max_threads_per_sm;
  prop.regsPerBlock = device.regs_per_block;
  prop.regsPerMultiprocessor = device.regs_per_sm;
  prop.warpSize = device.warp_size;
  prop.sharedMemPerBlock = static_cast<size_t>(device.shared_per_block);
  prop.sharedMemPerMultiprocessor = static_cast<size_t>(device.shared_per_sm);
  prop.numSms = device.sm_count;
  prop.sharedMemPerBlockOptin = static_cast<size_t>(device.shared_per_block_optin);
  prop.reservedSharedMemPerBlock = static_cast<size_t>(device.reserved_shared_per_block);

  cudaOccFuncAttributes attrs;
  attrs.maxThreadsPerBlock = device.max_threads_per_block;
  attrs.numRegs = registers_per_thread;
  attrs.sharedSizeBytes = static_cast<size_t>(static_smem);
  attrs.partitionedGCConfig = PARTITIONED_GC_OFF;
  attrs.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
  // The worker raises the kernel's dynamic limit to what it launches with, as the runtime requires.
  attrs.maxDynamicSharedSizeBytes = static_cast<size_t>(dynamic_smem);
  attrs.numBlockBarriers = 1;

  cudaOccDeviceState state;  // default carveout: the driver picks the split that fits the most blocks
  cudaOccResult result;
  Occupancy occ;
  const cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(
      &result, &prop, &attrs, &state, threads_per_block, static_cast<size_t>(dynamic_smem));
  if (err != CUDA_OCC_SUCCESS) {
    occ.error = err == CUDA_OCC_ERROR_INVALID_INPUT ? "invalid input to the occupancy calculator"
                                                    : "the occupancy calculator does not know this device";
    return occ;
  }
  occ.active_blocks = result.activeBlocksPerMultiprocessor;
  const int warps_per_block = (threads_per_block + device.warp_size - 1) / device.warp_size;
  occ.active_warps = occ.active_blocks * warps_per_block;
  const int max_warps = device.max_threads_per_sm / device.warp_size;
  occ.fraction = max_warps > 0 ? static_cast<double>(occ.active_warps) / max_warps : 0.0;
  // Every limit that binds, joined with '+' when several tie.
  const int f = result.limitingFactors;
  const std::pair<int, const char*> names[] = {{OCC_LIMIT_WARPS, "threads"},
                                               {OCC_LIMIT_REGISTERS, "registers"},
                                               {OCC_LIMIT_SHARED_MEMORY, "shared_memory"},
                                               {OCC_LIMIT_BLOCKS, "blocks"},
                                               {OCC_LIMIT_BARRIERS, "barriers"}};
  for (const auto& [bit, name] : names)
    if (f & bit) occ.limiter.append(occ.limiter.empty() ? "" : "+").append(name);
  if (occ.limiter.empty()) occ.limiter = "threads";
  return occ;
}

}  // namespace tiletune
