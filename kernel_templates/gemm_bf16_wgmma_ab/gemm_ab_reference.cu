// Reference for the 16-bit C = A B tensor-core families: row-major C (M x N) = A (M x K) * B (K x N),
// products and sums in float64, one thread per output element; one kernel per input type.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ inline double widen_ab(__half v) { return (double)__half2float(v); }
__device__ inline double widen_ab(__nv_bfloat16 v) { return (double)__bfloat162float(v); }

template <typename T>
__device__ inline void gemm_ab(const T* A, const T* B, double* C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  const T* a = A + (long long)row * K;
  double acc = 0.0;
  for (int k = 0; k < K; ++k) acc += widen_ab(a[k]) * widen_ab(B[(long long)k * N + col]);
  C[(long long)row * N + col] = acc;
}

extern "C" __global__ void gemm_ab_reference_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, double* C,
                                                  int M, int N, int K) {
  gemm_ab(A, B, C, M, N, K);
}
extern "C" __global__ void gemm_ab_reference_f16(const __half* A, const __half* B, double* C, int M, int N,
                                                 int K) {
  gemm_ab(A, B, C, M, N, K);
}
