// y = A x for a CSR matrix A (row_ptr, col_idx, values): TPR threads share a row (a power of two up to a
// warp), each summing every TPR-th entry, then a shuffle reduction within the group. UNROLL entries per step
// in flight per thread; XLDG reads x through the read-only cache. TPR = 1 is the one-thread-per-row kernel.
#ifndef BLOCK
#define BLOCK 128
#endif
#ifndef TPR
#define TPR 4
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef XLDG
#define XLDG 1
#endif

__device__ __forceinline__ float spmv_x(const float* x, int c) {
#if XLDG
  return __ldg(x + c);
#else
  return x[c];
#endif
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    spmv_csr(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
             const float* __restrict__ values, const float* __restrict__ x, float* __restrict__ y, int rows) {
  const long long t = (long long)blockIdx.x * BLOCK + threadIdx.x;
  const long long row = t / TPR;
  const int lane = (int)(t % TPR);
  float sum = 0.f;
  if (row < rows) {
    const int end = row_ptr[row + 1];
    int j = row_ptr[row] + lane;
    for (; j + (UNROLL - 1) * TPR < end; j += UNROLL * TPR) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) sum += values[j + u * TPR] * spmv_x(x, col_idx[j + u * TPR]);
    }
    for (; j < end; j += TPR) sum += values[j] * spmv_x(x, col_idx[j]);
  }
#pragma unroll
  for (int offset = TPR / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset, TPR);
  if (row < rows && lane == 0) y[row] = sum;
}
