// 2D convolution reference, float64, one thread per output: out[y][x] = sum mask[dy][dx] * in[y-r+dy][x-r+dx]
// with r = mask_width / 2; ghost pixels are 0 (boundary 0) or the nearest edge pixel (boundary 1).
__constant__ float mask[225];  // the families allow odd mask widths 1 to 15: up to 15 x 15, row-major

extern "C" __global__ void conv2d_reference(const float* in, double* out, int H, int W, int mask_width,
                                            int boundary) {
  const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long y = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const int r = mask_width / 2;
  double acc = 0.0;
  for (int dy = 0; dy < mask_width; ++dy) {
    long long yy = y - r + dy;
    if (yy < 0 || yy >= H) {
      if (boundary == 0) continue;
      yy = yy < 0 ? 0 : H - 1;
    }
    for (int dx = 0; dx < mask_width; ++dx) {
      long long xx = x - r + dx;
      if (xx < 0 || xx >= W) {
        if (boundary == 0) continue;
        xx = xx < 0 ? 0 : W - 1;
      }
      acc += (double)mask[dy * mask_width + dx] * (double)in[yy * W + xx];
    }
  }
  out[y * W + x] = acc;
}
