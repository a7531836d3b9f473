// C = A * B for row-major A (MxK), B (KxN), C (MxN): one output per thread, straight from global memory.
// The baseline every tiled GEMM is measured against.
#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
gemm_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
  const int col = blockIdx.x * BLOCK_X + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}
