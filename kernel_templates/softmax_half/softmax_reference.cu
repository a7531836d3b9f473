// Reference for softmax_half: one thread per row, in double, in place (x arrives holding the input).
// Tolerance: rtol 1e-2 (half output), plus atol 6e-8: outputs below 2^-14 are subnormal halves, 2^-24 (6e-8)
// apart, so rounding alone can be off by 3e-8 there, which is more than rtol times the outputs' RMS once a
// row is longer than about 10^5.
extern "C" __global__ void softmax_reference(double* x, int rows, int cols) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  double* p = x + r * cols;
  double m = p[0];
  for (int c = 1; c < cols; ++c) m = p[c] > m ? p[c] : m;
  double s = 0.0;
  for (int c = 0; c < cols; ++c) s += exp(p[c] - m);
  for (int c = 0; c < cols; ++c) p[c] = exp(p[c] - m) / s;
}
