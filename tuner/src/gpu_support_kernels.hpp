// Kernels the worker itself needs: seeded random inputs, float64 references, and the error reduction.
// They are compiled with NVRTC for the device at worker start, like any family.
#pragma once

namespace tiletune {

// The input generator is a pure function of (seed, element index), shared by the GPU fill kernel and the
// CPU reference, so the CPU can recompute any input element without copying buffers back.
inline constexpr const char* kSupportKernels = R"CUDA(
__device__ __forceinline__ unsigned int tt_hash(unsigned long long x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
  return (unsigned int)x;
}
__device__ __forceinline__ float tt_value(unsigned long long seed, unsigned long long i) {
  return (float)(tt_hash(seed * 0x9E3779B97F4A7C15ULL + i) >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

extern "C" __global__ void tt_fill(float* p, unsigned long long n, unsigned long long seed) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    p[i] = tt_value(seed, i);
}

// C (MxN, float64) = A (MxK) * B (KxN), row-major, in float64 with 16x16 shared tiles.
extern "C" __global__ void tt_gemm_ref(const float* A, const float* B, double* C, int M, int N, int K) {
  __shared__ double As[16][16], Bs[16][16];
  const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  double acc = 0.0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? (double)A[(size_t)row * K + k0 + threadIdx.x] : 0.0;
    Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? (double)B[(size_t)(k0 + threadIdx.y) * N + col] : 0.0;
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

__device__ __forceinline__ long long tt_clampi(long long p, long long n) { return p < 0 ? 0 : (p >= n ? n - 1 : p); }

// out[i] = sum_j mask[j] * in[i - r + j]; boundary 0: ghosts are 0, 1: clamp to the edge.
extern "C" __global__ void tt_conv1d_ref(const float* in, const float* mask, double* out, long long n, int w, int boundary) {
  const int r = w / 2;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (int j = 0; j < w; ++j) {
      long long p = i - r + j;
      if (p < 0 || p >= n) { if (boundary == 0) continue; p = tt_clampi(p, n); }
      acc += (double)mask[j] * (double)in[p];
    }
    out[i] = acc;
  }
}

// out[y][x] = sum mask[dy][dx] * in[y - r + dy][x - r + dx] for an H x W image and a w x w mask.
extern "C" __global__ void tt_conv2d_ref(const float* in, const float* mask, double* out, int H, int W, int w, int boundary) {
  const int r = w / 2;
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  double acc = 0.0;
  for (int dy = 0; dy < w; ++dy) {
    long long yy = y - r + dy;
    bool outside_y = yy < 0 || yy >= H;
    if (outside_y && boundary == 0) continue;
    yy = tt_clampi(yy, H);
    for (int dx = 0; dx < w; ++dx) {
      long long xx = x - r + dx;
      if ((xx < 0 || xx >= W) && boundary == 0) continue;
      xx = tt_clampi(xx, W);
      acc += (double)mask[dy * w + dx] * (double)in[yy * W + xx];
    }
  }
  out[(size_t)y * W + x] = acc;
}

// acc[0] += sum (out - ref)^2, acc[1] += sum ref^2, bad[0] += count of outputs that are not finite
// (the poison is NaN, so an unwritten output counts here).
extern "C" __global__ void tt_compare(const float* out, const double* ref, unsigned long long n, double* acc,
                                      unsigned long long* bad) {
  __shared__ double s_d[256], s_r[256];
  __shared__ unsigned long long s_b[256];
  double d2 = 0.0, r2 = 0.0;
  unsigned long long b = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const float o = out[i];
    if (!isfinite(o)) { ++b; continue; }
    const double d = (double)o - ref[i];
    d2 += d * d;
    r2 += ref[i] * ref[i];
  }
  s_d[threadIdx.x] = d2; s_r[threadIdx.x] = r2; s_b[threadIdx.x] = b;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) { s_d[threadIdx.x] += s_d[threadIdx.x + s]; s_r[threadIdx.x] += s_r[threadIdx.x + s]; s_b[threadIdx.x] += s_b[threadIdx.x + s]; }
    __syncthreads();
  }
  if (threadIdx.x == 0) { atomicAdd(&acc[0], s_d[0]); atomicAdd(&acc[1], s_r[0]); atomicAdd(bad, s_b[0]); }
}
)CUDA";

// The same generator on the CPU.
inline unsigned int support_hash(unsigned long long x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<unsigned int>(x);
}
inline float support_value(unsigned long long seed, unsigned long long i) {
  return static_cast<float>(support_hash(seed * 0x9E3779B97F4A7C15ULL + i) >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace tiletune
