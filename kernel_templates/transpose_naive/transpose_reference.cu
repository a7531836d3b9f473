// Reference for the transpose families: out[c][r] = in[r][c] in double, one thread per element (a block row
// steps by the grid's height only where rows / 16 exceeds the 65535 limit of gridDim.y).
extern "C" __global__ void transpose_reference(const float* in, double* out, int rows, int cols) {
  const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  for (long long r = (long long)blockIdx.y * blockDim.y + threadIdx.y; r < rows;
       r += (long long)gridDim.y * blockDim.y) {
    out[c * rows + r] = (double)in[r * cols + c];
  }
}
