// In-place row softmax of a half matrix: x[r][:] = exp(x[r][:] - max) / sum(exp(x[r][:] - max)), in float.
//
// THREADS_PER_ROW threads share a row (16 or 32: lanes of one warp; more: several warps, combined through
// shared memory), ROWS_PER_BLOCK rows per block. Each thread owns the vectors t, t + THREADS_PER_ROW, ... of
// VEC halves (VEC 8: 16-byte accesses; the family requires cols % VEC == 0, so a row is whole vectors and
// every vector is aligned).
//
// The statistics are one pass and one reduction: each thread keeps a running (max m, sum s of exp(x - m)),
// rescaling s when m grows, and the row's pairs are combined the same way.
//   ROW_IN_REGS 1: the thread's share of the row (at most VECS_PER_THREAD vectors) is loaded into registers
//     once, so the row is read from memory once and written once;
//   ROW_IN_REGS 0: the row is streamed twice in batches of VECS_PER_THREAD vectors (statistics, then the
//     output), for rows too long for registers; the second read hits L2 only while the rows in flight (about
//     2048 / THREADS_PER_ROW per SM) fit in it, so long rows want many threads per row.
// exp is ex2.approx on x * log2(e): its relative error (about 2^-22) is far below half's 2^-11.
#include <cuda_fp16.h>

#ifndef THREADS_PER_ROW
#define THREADS_PER_ROW 128
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 8
#endif
#ifndef VECS_PER_THREAD
#define VECS_PER_THREAD 4
#endif
#ifndef ROW_IN_REGS
#define ROW_IN_REGS 0
#endif

#if VEC != 1 && VEC != 2 && VEC != 4 && VEC != 8
#error "VEC must be 1, 2, 4 or 8"
#endif
#if THREADS_PER_ROW < 32 && 32 % THREADS_PER_ROW != 0 || THREADS_PER_ROW > 32 && THREADS_PER_ROW % 32 != 0
#error "THREADS_PER_ROW must divide 32 or be a multiple of 32"
#endif

#define TPR THREADS_PER_ROW
#define VPT VECS_PER_THREAD
#define BLOCK (TPR * ROWS_PER_BLOCK)
#define WARPS_PER_ROW (TPR / 32)
#define LOG2E 1.4426950408889634f
#define NO_MAX (-3.0e38f)  // finite: exp2(NO_MAX - NO_MAX) is 1, never NaN, and its sum is 0

struct alignas(2 * VEC) HalfVec {
  __half h[VEC];
};

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// (m, s) <- the pair for both sets; m and m2 are in log2 units (x * log2(e)).
__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = s * exp2_approx(m - mn) + s2 * exp2_approx(m2 - mn);
  m = mn;
}

// Adds a batch of VPT vectors (valid: which ones exist) into the thread's running (m, s).
__device__ __forceinline__ void accumulate(const HalfVec (&v)[VPT], const bool (&valid)[VPT], float& m,
                                           float& s) {
  float bm = m;
#pragma unroll
  for (int k = 0; k < VPT; ++k)
    if (valid[k])
#pragma unroll
      for (int e = 0; e < VEC; ++e) bm = fmaxf(bm, __half2float(v[k].h[e]) * LOG2E);
  s *= exp2_approx(m - bm);
  m = bm;
#pragma unroll
  for (int k = 0; k < VPT; ++k)
    if (valid[k])
#pragma unroll
      for (int e = 0; e < VEC; ++e) s += exp2_approx(fmaf(__half2float(v[k].h[e]), LOG2E, -m));
}

__device__ __forceinline__ HalfVec normalise(const HalfVec& v, float m, float inv) {
  HalfVec o;
#pragma unroll
  for (int e = 0; e < VEC; ++e)
    o.h[e] = __float2half_rn(exp2_approx(fmaf(__half2float(v.h[e]), LOG2E, -m)) * inv);
  return o;
}

extern "C" __global__ void __launch_bounds__(BLOCK) softmax_half(__half* __restrict__ x, int rows, int cols) {
  const int t = threadIdx.x % TPR;    // the thread's place in its row
  const int rib = threadIdx.x / TPR;  // the row's place in the block
  const long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + rib;
  const bool live = row < rows;  // threads of a missing row still take part in the reductions
  HalfVec* xv = reinterpret_cast<HalfVec*>(x + (live ? row : 0) * cols);
  const int nvec = cols / VEC;
  float m = NO_MAX, s = 0.0f;

#if ROW_IN_REGS
  HalfVec v[VPT];
  bool valid[VPT];
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    valid[k] = live && t + k * TPR < nvec;
    if (valid[k]) v[k] = xv[t + k * TPR];
  }
  accumulate(v, valid, m, s);
#else
  for (int j0 = 0; j0 < nvec; j0 += VPT * TPR) {
    HalfVec v[VPT];
    bool valid[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {  // all loads of the batch before any use
      valid[k] = live && j0 + t + k * TPR < nvec;
      if (valid[k]) v[k] = xv[j0 + t + k * TPR];
    }
    accumulate(v, valid, m, s);
  }
#endif

  // Combine the row's pairs: within the warp (xor steps stay inside groups of TPR lanes when TPR < 32) ...
#pragma unroll
  for (int o = (TPR < 32 ? TPR : 32) / 2; o > 0; o /= 2)
    combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
#if TPR > 32
  // ... then across the row's warps: each warp combines all the warps' pairs itself (no second barrier).
  __shared__ float2 partial[ROWS_PER_BLOCK * WARPS_PER_ROW];
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[rib * WARPS_PER_ROW + t / 32] = make_float2(m, s);
  __syncthreads();
  const float2 p = lane < WARPS_PER_ROW ? partial[rib * WARPS_PER_ROW + lane] : make_float2(NO_MAX, 0.0f);
  m = p.x;
  s = p.y;
#pragma unroll
  for (int o = WARPS_PER_ROW / 2; o > 0; o /= 2)
    combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  m = __shfl_sync(0xffffffffu, m, 0);  // lanes 0 .. WARPS_PER_ROW - 1 hold the row's pair
  s = __shfl_sync(0xffffffffu, s, 0);
#endif
  const float inv = 1.0f / s;

#if ROW_IN_REGS
#pragma unroll
  for (int k = 0; k < VPT; ++k)
    if (valid[k]) xv[t + k * TPR] = normalise(v[k], m, inv);
#else
  for (int j0 = 0; j0 < nvec; j0 += VPT * TPR) {
    HalfVec v[VPT];
    bool valid[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      valid[k] = live && j0 + t + k * TPR < nvec;
      if (valid[k]) v[k] = xv[j0 + t + k * TPR];
    }
#pragma unroll
    for (int k = 0; k < VPT; ++k)
      if (valid[k]) xv[j0 + t + k * TPR] = normalise(v[k], m, inv);
  }
#endif
}
