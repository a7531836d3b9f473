// out (cols x rows) = transpose of in (rows x cols), both row-major: one element per thread, straight from
// global memory. One side of the copy is always strided; COALESCE picks which: 0 maps threadIdx.x to input
// columns (coalesced reads, scattered writes), 1 to input rows (scattered reads, coalesced writes).
// The baseline every tiled transpose is measured against.
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#ifndef COALESCE
#define COALESCE 0
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
    transpose_naive(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
#if COALESCE == 0
  const int fast = cols, slow = rows;  // x runs along the input's rows (its columns)
#else
  const int fast = rows, slow = cols;  // x runs along the output's rows (the input's rows)
#endif
  const long long f = (long long)blockIdx.x * BLOCK_X + threadIdx.x;
  if (f >= fast) return;
  // gridDim.y is capped at 65535 by the launch: blocks step over the rest (64-bit: s may pass 2^31).
  for (long long s = (long long)blockIdx.y * BLOCK_Y + threadIdx.y; s < slow;
       s += (long long)gridDim.y * BLOCK_Y) {
#if COALESCE == 0
    out[f * rows + s] = in[s * cols + f];
#else
    out[s * rows + f] = in[f * cols + s];
#endif
  }
}
