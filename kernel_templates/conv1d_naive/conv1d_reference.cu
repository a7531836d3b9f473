// 1D convolution reference in float64, one thread per output: out[i] = sum_j mask[j] * in[i - r + j] with
// r = mask_width / 2; ghost elements are 0 (boundary 0) or the nearest edge element (boundary 1).
__constant__ float mask[63];  // the families allow odd mask widths 1 to 63

extern "C" __global__ void conv1d_reference(const float* in, double* out, int n, int mask_width,
                                            int boundary) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int r = mask_width / 2;
  double acc = 0.0;
  for (int j = 0; j < mask_width; ++j) {
    long long p = i - r + j;
    if (p < 0 || p >= n) {
      if (boundary == 0) continue;
      p = p < 0 ? 0 : n - 1;
    }
    acc += (double)mask[j] * (double)in[p];
  }
  out[i] = acc;
}
