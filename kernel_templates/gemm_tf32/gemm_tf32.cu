// C = A * B for row-major A (MxK), B (KxN), C (MxN) on tensor cores: TF32 inputs, FP32 accumulation
// (mma.sync.m16n8k8, sm_80 or newer).
//
// A block of WM x WN warps computes a BM x BN tile of C and walks K in steps of BK. Each warp owns a
// (BM/WM) x (BN/WN) tile: MI x NI mma tiles of 16 x 8, whose accumulators stay in registers (4 per thread and
// mma tile). Tiles of A (BM x BK, K contiguous) and B (BK x BN, N contiguous) go from global to shared memory
// with cp.async through a ring of STAGES buffers, so that STAGES - 1 tiles are in flight while one is
// multiplied; one barrier per step. Rows are padded (A by 4 words, B by 8) so that every fragment read of a
// warp touches 32 different banks.
//
// Edges: a 16-byte copy whose source lies outside the matrices copies nothing and zero-fills (cp.async's
// source size); where K % 4 != 0 (N % 4 != 0) the rows of A (B) are not 16-byte aligned and each element is
// copied on its own (4-byte cp.async, zero-filled outside). Stores are checked. So any M, N, K >= 1 is right.
//
// CVT = 1 rounds each input to TF32 (cvt.rna) as it is read from shared memory; CVT = 0 hands the FP32 bits to
// the tensor cores, which ignore the low 13 mantissa bits (truncation, one instruction less per element).

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 2
#endif
#ifndef WN
#define WN 2
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef CVT
#define CVT 1
#endif

#define THREADS (32 * WM * WN)
#define WTM (BM / WM)  // rows of C per warp
#define WTN (BN / WN)  // columns of C per warp
#define MI (WTM / 16)
#define NI (WTN / 8)
#define LDA (BK + 4)
#define LDB (BN + 8)
#define A_STAGE (BM * LDA)
#define B_STAGE (BK * LDB)
#define A_CHUNKS (BM * BK / 4)
#define B_CHUNKS (BK * BN / 4)

static_assert(WTM % 16 == 0 && WTN % 8 == 0, "warp tiles are whole mma tiles");
static_assert(BK % 8 == 0, "BK is a multiple of the mma depth");
static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "copies divide among the threads");
static_assert(STAGES >= 2, "at least two buffers");

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16-byte copy; `bytes` (16 or 0) is how much of the source is read, the rest is zero-filled.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ unsigned to_tf32(const float x) {
#if CVT
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
#else
  return __float_as_uint(x);
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_tf32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  extern __shared__ float4 smem_f4[];
  float* const As = reinterpret_cast<float*>(smem_f4);
  float* const Bs = As + STAGES * A_STAGE;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;  // the mma fragment coordinates of this lane
  const int wm0 = (warp / WN) * WTM, wn0 = (warp % WN) * WTN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const bool vec_a = (K & 3) == 0 && (reinterpret_cast<unsigned long long>(A) & 15) == 0;
  const bool vec_b = (N & 3) == 0 && (reinterpret_cast<unsigned long long>(B) & 15) == 0;

  // Starts the copy of 4 consecutive elements of a row into dst: the row starts at `row_start` (null when it
  // lies outside the matrix) and holds `cols` elements, of which the 4 from `col` are copied, zero-filled past
  // the row's end. One 16-byte copy where rows are 16-byte aligned (`vec`: cols % 4 == 0, so col < cols means
  // col + 3 < cols), else four 4-byte ones.
  auto copy4 = [&](float* dst, const float* row_start, const int col, const int cols, const bool vec, const float* any) {
    if (vec) {
      const bool in = row_start && col < cols;
      cp_async16(dst, in ? row_start + col : any, in ? 16 : 0);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool in = row_start && col + e < cols;
        cp_async4(dst + e, in ? row_start + col + e : any, in ? 4 : 0);
      }
    }
  };
  // Starts the copies of the tiles at step kt into buffer s.
  auto load_stage = [&](const int s, const int kt) {
    const int k0 = kt * BK;
    float* as = As + s * A_STAGE;
    float* bs = Bs + s * B_STAGE;
#pragma unroll
    for (int i = 0; i < A_CHUNKS / THREADS; ++i) {
      const int c = tid + i * THREADS, r = c / (BK / 4), col = (c % (BK / 4)) * 4;
      const int m = m0 + r;
      copy4(as + r * LDA + col, m < M ? A + (size_t)m * K : nullptr, k0 + col, K, vec_a, A);
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS / THREADS; ++i) {
      const int c = tid + i * THREADS, r = c / (BN / 4), col = (c % (BN / 4)) * 4;
      const int k = k0 + r;
      copy4(bs + r * LDB + col, k < K ? B + (size_t)k * N + n0 : nullptr, col, N - n0, vec_b, B);
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  const int steps = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) load_stage(s, s);
    cp_async_commit();  // one group per stage, empty or not, so that the wait counts stay right
  }
  for (int kt = 0; kt < steps; ++kt) {
    cp_async_wait<STAGES - 2>();  // the tile of step kt has landed (this thread's copies)
    __syncthreads();              // everyone's copies, and everyone is done with the buffer refilled next
    if (kt + STAGES - 1 < steps) load_stage((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
    cp_async_commit();
    const float* as = As + (kt % STAGES) * A_STAGE;
    const float* bs = Bs + (kt % STAGES) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      unsigned a[MI][4], b[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const float* p = as + (wm0 + i * 16 + g) * LDA + kk + t;
        a[i][0] = to_tf32(p[0]);
        a[i][1] = to_tf32(p[8 * LDA]);
        a[i][2] = to_tf32(p[4]);
        a[i][3] = to_tf32(p[8 * LDA + 4]);
      }
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const float* p = bs + (kk + t) * LDB + wn0 + j * 8 + g;
        b[j][0] = to_tf32(p[0]);
        b[j][1] = to_tf32(p[4 * LDB]);
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
          asm volatile(
              "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
              "{%0, %1, %2, %3};"
              : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
              : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
    }
  }
  cp_async_wait<0>();

  // Each thread holds, per mma tile, C[row][col..col+1] and C[row+8][col..col+1].
  const bool vec_c = (N & 1) == 0 && (reinterpret_cast<unsigned long long>(C) & 7) == 0;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm0 + i * 16 + g + 8 * h, col = n0 + wn0 + j * 8 + 2 * t;
        if (row >= M || col >= N) continue;
        float* p = C + (size_t)row * N + col;
        if (vec_c) {  // N even: col < N means col + 1 < N
          *reinterpret_cast<float2*>(p) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        } else {
          p[0] = acc[i][j][2 * h];
          if (col + 1 < N) p[1] = acc[i][j][2 * h + 1];
        }
      }
}
