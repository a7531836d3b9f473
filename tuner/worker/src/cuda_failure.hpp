// How the measuring worker reports a failed CUDA call: the error and one line naming the call. Shared by the
// worker's loop and its library bindings.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace tiletune {

struct CudaFailure {
  cudaError_t code;
  std::string text;
};

inline std::string cuda_text(cudaError_t e, const char* call) {
  return std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
}

#define TILETUNE_CUDA_CHECK(call)                                                                     \
  do {                                                                                                \
    const cudaError_t cuda_status_ = (call);                                                          \
    if (cuda_status_ != cudaSuccess) throw CudaFailure{cuda_status_, cuda_text(cuda_status_, #call)}; \
  } while (0)

}  // namespace tiletune
