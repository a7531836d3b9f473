// 2D convolution of an H x W row-major image with a mask_width x mask_width mask in constant memory, one
// output per thread: out[y][x] = sum_{i,j} mask[i][j] * in[y - r + i][x - r + j], r = mask_width / 2.
// Pixels outside the image (ghost pixels) read as 0 (boundary 0) or as the nearest edge pixel (boundary 1).
// Every input is read from global memory (through L1/L2); no tiling, no shared memory.
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#define MAX_MASK_WIDTH 15

__constant__ float mask[MAX_MASK_WIDTH * MAX_MASK_WIDTH];

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv2d_naive(const float* __restrict__ in, float* __restrict__ out, int H, int W, int mask_width, int boundary) {
  const int x = blockIdx.x * BLOCK_X + threadIdx.x;
  const int y = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (x >= W || y >= H) return;
  const int r = mask_width / 2;
  float acc = 0.0f;
  for (int i = 0; i < mask_width; ++i) {
    int yy = y - r + i;
    if (yy < 0 || yy >= H) {
      if (boundary == 0) continue;
      yy = yy < 0 ? 0 : H - 1;
    }
    const float* row = in + (long long)yy * W;
    for (int j = 0; j < mask_width; ++j) {
      int xx = x - r + j;
      if (xx < 0 || xx >= W) {
        if (boundary == 0) continue;
        xx = xx < 0 ? 0 : W - 1;
      }
      acc += mask[i * mask_width + j] * row[xx];
    }
  }
  out[(long long)y * W + x] = acc;
}
