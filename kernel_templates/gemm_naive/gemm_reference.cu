// Reference for the GEMM families: row-major C (M x N) = A (M x K) * B (K x N), accumulated in float64,
// one thread per output element.
extern "C" __global__ void gemm_reference(const float* A, const float* B, double* C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  double acc = 0.0;
  for (int k = 0; k < K; ++k) acc += (double)A[(long long)row * K + k] * (double)B[(long long)k * N + col];
  C[(long long)row * N + col] = acc;
}
