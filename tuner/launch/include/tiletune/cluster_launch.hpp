// One launch call for the worker and the runtime: thread block clusters through cudaLaunchKernelExC with the
// cluster-dimension attribute, a plain cudaLaunchKernel otherwise.
#pragma once

#include <cuda_runtime_api.h>

namespace tiletune {

inline cudaError_t launch_kernel(const void* kernel, dim3 grid, dim3 block, dim3 cluster, void** args,
                                 std::size_t dynamic_smem, cudaStream_t stream) {
  if (cluster.x * cluster.y * cluster.z <= 1)
    return cudaLaunchKernel(kernel, grid, block, args, dynamic_smem, stream);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster.x;
  attribute.val.clusterDim.y = cluster.y;
  attribute.val.clusterDim.z = cluster.z;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = dynamic_smem;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelExC(&config, kernel, args);
}

}  // namespace tiletune
