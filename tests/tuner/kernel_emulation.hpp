// CPU emulation of CUDA kernels for tests that have no GPU: #include a reference kernel's .cu file (inside a
// namespace of the test's choosing) after this header, and run it with tiletune::emulation::launch(grid,
// block, kernel, args...), which runs every thread of every block, one after another, on the calling thread.
//
// Sequential execution is exact only for kernels whose threads do not wait for one another: reference
// kernels (no shared memory, no __syncthreads, no warp intrinsics; atomicAdd is fine). __shared__ and
// __syncthreads are therefore compile errors here.
#pragma once

#ifdef __CUDACC__
#error "kernel_emulation.hpp is for host compilers: it runs kernels on the CPU"
#endif
#ifdef __DEVICE_LAUNCH_PARAMETERS_H__
#error "include kernel_emulation.hpp before the CUDA runtime headers: it defines threadIdx & co. itself"
#endif

// The CUDA headers first. Under a host compiler they provide __half and __nv_bfloat16 with host conversions,
// dim3 and uint3 (vector_types.h), and, through crt/host_defines.h, empty __host__, __device__, __global__,
// __constant__ and __shared__ and a host __forceinline__. A reference that includes them again (inside its
// namespace) finds their include guards set, and so do the standard headers below.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// Keep device_launch_parameters.h (cuda_runtime.h includes it) from declaring its own threadIdx & co. later.
#define __DEVICE_LAUNCH_PARAMETERS_H__

// Kernels and __constant__ symbols become inline functions and inline variables, so two test files that
// include the same reference into the same namespace do not define the same symbol twice.
#undef __global__
#define __global__ inline
#undef __constant__
#define __constant__ inline
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#undef __shared__
#define __shared__ static_assert(false, "reference kernels use no __shared__ (threads run one by one here)");
#define __syncthreads() \
  static_assert(false, "reference kernels use no __syncthreads (threads run one by one here)")

// The built-in variables of the thread being run (thread_local: tests may run kernels on several threads).
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
inline constexpr int warpSize = 32;

// Atomics: threads run one at a time, so a plain read-modify-write is atomic. Each returns the old value.
inline int atomicAdd(int* address, int value) {
  const int old = *address;
  // Wraps around like the hardware's two's complement add (no signed overflow in C++).
  *address = static_cast<int>(static_cast<unsigned int>(old) + static_cast<unsigned int>(value));
  return old;
}
inline unsigned int atomicAdd(unsigned int* address, unsigned int value) {
  const unsigned int old = *address;
  *address = old + value;
  return old;
}
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
  const unsigned long long old = *address;
  *address = old + value;
  return old;
}
inline float atomicAdd(float* address, float value) {
  const float old = *address;
  *address = old + value;
  return old;
}
inline double atomicAdd(double* address, double value) {
  const double old = *address;
  *address = old + value;
  return old;
}

namespace tiletune::emulation {

// Rejects the launches a GPU would refuse (CUDA's limits on block and grid sizes), so that a test's geometry
// is one the family's reference block could really use.
inline void check_geometry(const dim3& grid, const dim3& block) {
  auto fail = [&](const char* why) {
    throw std::invalid_argument("launch: " + std::string(why) + " (grid " + std::to_string(grid.x) + "x" +
                                std::to_string(grid.y) + "x" + std::to_string(grid.z) + ", block " +
                                std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
                                std::to_string(block.z) + ")");
  };
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
    fail("every grid and block dimension must be at least 1");
  if (block.x > 1024 || block.y > 1024 || block.z > 64 ||
      static_cast<unsigned long long>(block.x) * block.y * block.z > 1024)
    fail("more than 1024 threads per block, or a block dimension past its limit");
  if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) fail("a grid dimension past its limit");
}

// Runs kernel<<<grid, block>>>(args...) on the CPU: blocks in order (x fastest, then y, then z), and within
// each block its threads in the same order. The arguments are converted to the kernel's parameter types once,
// as a launch does, and every thread gets its own copy of them.
template <class... Params, class... Args>
void launch(const dim3& grid, const dim3& block, void (*kernel)(Params...), Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch: wrong number of kernel arguments");
  check_geometry(grid, block);
  const std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
  gridDim = grid;
  blockDim = block;
  for (unsigned int bz = 0; bz < grid.z; ++bz)
    for (unsigned int by = 0; by < grid.y; ++by)
      for (unsigned int bx = 0; bx < grid.x; ++bx) {
        blockIdx = uint3{bx, by, bz};
        for (unsigned int tz = 0; tz < block.z; ++tz)
          for (unsigned int ty = 0; ty < block.y; ++ty)
            for (unsigned int tx = 0; tx < block.x; ++tx) {
              threadIdx = uint3{tx, ty, tz};
              std::apply(kernel, params);
            }
      }
}

// ceil(a / b) for launch geometry.
constexpr unsigned int ceil_div(long long a, long long b) {
  return static_cast<unsigned int>((a + b - 1) / b);
}

}  // namespace tiletune::emulation
