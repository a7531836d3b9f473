// 1D convolution with a shared-memory tile plus its left and right halo (the seeds' kernel).
// Each block owns BLOCK_SIZE outputs and stages BLOCK_SIZE + 2r inputs (r = mask_width / 2); ghost elements
// past either end of the input are stored as 0. LOAD_STRATEGY picks who loads the halo:
//   0: the edge threads, as in the seed: the last r threads load the left halo, the first r the right one
//      (needs r <= BLOCK_SIZE);
//   1: a strided loop in which every thread loads elements of tile and halo alike.
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
#ifndef LOAD_STRATEGY
#define LOAD_STRATEGY 0
#endif
#define MAX_MASK_WIDTH 63

__constant__ float mask[MAX_MASK_WIDTH];

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
conv1d_tiled(const float* __restrict__ in, float* __restrict__ out, int n, int mask_width) {
  extern __shared__ float tile[];  // BLOCK_SIZE + 2r floats
  const int r = mask_width / 2;
  const int t = threadIdx.x;
  const long long base = (long long)blockIdx.x * BLOCK_SIZE;

#if LOAD_STRATEGY == 0
  if (t >= BLOCK_SIZE - r) {
    const long long p = base - BLOCK_SIZE + t;
    tile[t - (BLOCK_SIZE - r)] = p >= 0 ? in[p] : 0.0f;
  }
  {
    const long long p = base + t;
    tile[r + t] = p < n ? in[p] : 0.0f;
  }
  if (t < r) {
    const long long p = base + BLOCK_SIZE + t;
    tile[r + BLOCK_SIZE + t] = p < n ? in[p] : 0.0f;
  }
#else
  for (int i = t; i < BLOCK_SIZE + 2 * r; i += BLOCK_SIZE) {
    const long long p = base - r + i;
    tile[i] = (p >= 0 && p < n) ? in[p] : 0.0f;
  }
#endif
  __syncthreads();

  const long long i = base + t;
  if (i < n) {
    float acc = 0.0f;
    for (int j = 0; j < mask_width; ++j) acc += tile[t + j] * mask[j];
    out[i] = acc;
  }
}
