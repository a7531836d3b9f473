// 1D convolution out[i] = sum_j mask[j] * in[i - r + j], r = mask_width / 2, one output per thread.
// Inputs past either end (ghost elements) read as 0. The mask lives in constant memory.
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
#define MAX_MASK_WIDTH 63

__constant__ float mask[MAX_MASK_WIDTH];

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
conv1d_naive(const float* __restrict__ in, float* __restrict__ out, int n, int mask_width) {
  const long long i = (long long)blockIdx.x * BLOCK_SIZE + threadIdx.x;
  if (i >= n) return;
  const int r = mask_width / 2;
  float acc = 0.0f;
  for (int j = 0; j < mask_width; ++j) {
    const long long p = i - r + j;
    if (p >= 0 && p < n) acc += mask[j] * in[p];
  }
  out[i] = acc;
}
