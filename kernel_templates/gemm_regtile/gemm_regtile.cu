// C = A * B for row-major A (MxK), B (KxN), C (MxN): register-blocked FP32 GEMM on CUDA cores.
//
// A block of THREADS threads computes a BM x BN tile of C and walks K in steps of BK. Each thread holds a
// TM x TN tile of accumulators, made of (TM/4) x (TN/4) sub-tiles of 4x4. A warp is WARP_M x WARP_N threads
// (WARP_M = 32 / WARP_N); the sub-tiles of one warp's threads sit side by side, so that for every k the warp
// reads its fragments of A and B with 16-byte shared loads whose addresses are contiguous across lanes
// (no bank conflicts): thread (tr, tc) of a warp owns rows  warp_m0 + i*4*WARP_M + tr*4 + 0..3
//                                          and columns     warp_n0 + j*4*WARP_N + tc*4 + 0..3.
//
// Shared memory (dynamic) holds STAGES buffers of As[BK][BM + PAD_A] (A transposed) and Bs[BK][BN].
// Global tiles are read into registers (16-byte loads where the rows are 16-byte aligned) one step ahead and
// stored to shared memory while the current tile is multiplied. STAGES == 2: two shared buffers, one barrier
// per step; with FRAG_PIPE the fragments of the next k are read explicitly ahead, also across steps (the
// barrier sits before the last k of a step). STAGES == 1: one buffer (half the shared memory), two barriers
// per step.
//
// The main loop exists twice: a block whose every tile load is inside the matrices and 16-byte aligned (rows
// inside M and columns inside N, K a multiple of BK, aligned rows) runs a copy whose only branch is the loop's
// back edge (the last step is peeled and the loads take no tests); other blocks run a copy that checks, per
// step, whether A's and B's tiles can take unchecked loads, and otherwise checks every element, reading 0
// outside the matrices (that also zeroes the K tail). With EDGE_SHIFT, a block that crosses row M (column N)
// moves up (left) to end at it, computes a whole tile inside the matrix with the unchecked copy, and stores
// only the rows (columns) that are its own; the others are the neighbouring block's. When K % 4 != 0
// (N % 4 != 0) rows of A (B and C) are not 16-byte aligned and scalar loads/stores are used; the choice is a
// block-uniform run-time test, so any M, N, K >= 1 is right.
//
// SPLIT_K > 1 (Hopper thread block clusters, sm_90+): the SPLIT_K blocks of a cluster (grid z) compute the same
// tile of C over consecutive slices of K, each a whole number of BK steps. They then write their accumulators
// to their own shared memory, and after a cluster barrier each block sums 1/SPLIT_K of the tile's rows over
// all the blocks' shared memory (distributed shared memory) and stores them to C. No workspace, no atomics,
// no second kernel: small problems get SPLIT_K times more blocks to fill the SMs.
//
// STREAM_K > 0 (any arch): STREAM_K blocks per SM (the grid is STREAM_K * SMs), each taking an equal share of
// all tiles' BK steps, so that no last wave is partial (see the end of the kernel); a tile cut between blocks is
// summed in C, from its last piece to its first.
//
// GROUP_M > 1 launches blocks in groups of GROUP_M block rows (column-major inside a group) for L2 reuse; it is
// not in family.json (no gain measured on the H100 at the default sizes) and defaults to 1.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 32
#endif
#ifndef TM
#define TM 16
#endif
#ifndef TN
#define TN 8
#endif
#ifndef WARP_N
#define WARP_N 8
#endif
#ifndef PAD_A
#define PAD_A 4
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef GROUP_M
#define GROUP_M 1
#endif
#ifndef FRAG_PIPE
#define FRAG_PIPE 1
#endif
#ifndef FMA_ORDER
#define FMA_ORDER 1
#endif
#ifndef MIN_WARPS
#define MIN_WARPS 0
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef STREAM_K
#define STREAM_K 0
#endif
#ifndef EDGE_SHIFT
#define EDGE_SHIFT 0
#endif
#if STREAM_K && SPLIT_K > 1
#error "STREAM_K and SPLIT_K > 1 are two ways to split K: choose one"
#endif
#if EDGE_SHIFT && (SPLIT_K > 1 || STREAM_K)
#error "EDGE_SHIFT is for one block per tile (SPLIT_K == 1, STREAM_K == 0)"
#endif
#if SPLIT_K > 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "SPLIT_K > 1 needs thread block clusters (sm_90 or newer)"
#endif
#if SPLIT_K > 1
#define CLUSTER_ATTR __cluster_dims__(1, 1, SPLIT_K)
#else
#define CLUSTER_ATTR
#endif

#define WARP_M (32 / WARP_N)
#define WTILE_M (TM * WARP_M)  // rows of C per warp
#define WTILE_N (TN * WARP_N)  // columns of C per warp
#define WARPS_N (BN / WTILE_N)
#define THREADS ((BM / TM) * (BN / TN))
// With MIN_WARPS > 0 the compiler must fit MIN_WARPS warps per SM (caps the registers per thread).
#define MIN_BLOCKS (MIN_WARPS * 32 > THREADS ? MIN_WARPS * 32 / THREADS : 1)
#define LDA (BM + PAD_A)
#define LDB BN
#define A_STAGE (BK * LDA)
#define B_STAGE (BK * LDB)
#define A_CHUNKS_PER_ROW (BK / 4)          // float4 chunks in one row of the A tile
#define B_CHUNKS_PER_ROW (BN / 4)          // float4 chunks in one row of the B tile
#define A_LOADS ((BM * BK / 4) / THREADS)  // float4 chunks of A per thread and step
#define B_LOADS ((BK * BN / 4) / THREADS)
#define A_ROW_STEP (THREADS / A_CHUNKS_PER_ROW)
#define B_ROW_STEP (THREADS / B_CHUNKS_PER_ROW)

static_assert(WARP_M * WARP_N == 32, "WARP_N must divide 32");
static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN must be multiples of 4");
static_assert(BM % WTILE_M == 0 && BN % WTILE_N == 0, "warp tiles must divide the block tile");
static_assert(BK % 4 == 0, "BK must be a multiple of 4");
static_assert(THREADS % 32 == 0, "whole warps");
static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "loads must divide among threads");
static_assert(THREADS % A_CHUNKS_PER_ROW == 0 && THREADS % B_CHUNKS_PER_ROW == 0, "load mapping");
static_assert(PAD_A % 4 == 0, "PAD_A keeps 16-byte alignment");
static_assert(BM % SPLIT_K == 0, "each block of a cluster reduces BM / SPLIT_K rows");

// Stores 4 consecutive outputs of row `row` from column `col` (a multiple of 4): one 16-byte store inside the
// matrix (`interior`: the whole block tile is inside and rows are 16-byte aligned), otherwise checked, with a
// 16-byte store when N % 4 == 0 (col < N then means col + 3 < N) and scalar stores when rows are unaligned.
__device__ __forceinline__ void store_c4(float* __restrict__ C, int M, int N, int row, int col, float4 v,
                                         bool interior, bool vec_c) {
  if (interior) {
    *reinterpret_cast<float4*>(C + (size_t)row * N + col) = v;
  } else if (row < M && col < N) {
    float* p = C + (size_t)row * N + col;
    if (vec_c) {
      *reinterpret_cast<float4*>(p) = v;
    } else {
      p[0] = v.x;
      if (col + 1 < N) p[1] = v.y;
      if (col + 2 < N) p[2] = v.z;
      if (col + 3 < N) p[3] = v.w;
    }
  }
}

// EDGE_SHIFT: the first row (column) of the tile computed by the block whose own rows (columns) start at `own`
// (a multiple of `tile`): where the tile would cross `extent`, it ends at `extent` instead, if it fits. Columns
// move only where N % 4 == 0 (`aligned`), so that the 4-column runs of the moved tile still start at its own
// first column.
__device__ __forceinline__ int edge_shift(const int own, const int extent, const int tile, const bool aligned) {
  return EDGE_SHIFT && aligned && own + tile > extent && extent >= tile ? extent - tile : own;
}

// Loads 4 consecutive outputs as store_c4 stores them (through L2: other blocks wrote them in this launch).
__device__ __forceinline__ float4 load_c4(const float* __restrict__ C, int M, int N, int row, int col, bool interior,
                                          bool vec_c) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (interior) {
    v = __ldcg(reinterpret_cast<const float4*>(C + (size_t)row * N + col));
  } else if (row < M && col < N) {
    const float* p = C + (size_t)row * N + col;
    if (vec_c) {
      v = __ldcg(reinterpret_cast<const float4*>(p));
    } else {
      v.x = __ldcg(p);
      if (col + 1 < N) v.y = __ldcg(p + 1);
      if (col + 2 < N) v.z = __ldcg(p + 2);
      if (col + 3 < N) v.w = __ldcg(p + 3);
    }
  }
  return v;
}

// Calls f(row, col, v) for each run of 4 of a thread's accumulators: v holds its outputs at row `row`, columns
// col..col+3, for a block tile whose first row and column are m0 and n0 (the thread's first ones in the tile:
// a_frag, b_frag). A function template, not a generic lambda: NVRTC compiles no host code.
template <class F>
__device__ __forceinline__ void for_each_acc4(const float (&acc)[TM][TN], int m0, int n0, int a_frag, int b_frag,
                                              F&& f) {
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = m0 + a_frag + (i / 4) * 4 * WARP_M + (i % 4);
#pragma unroll
    for (int j4 = 0; j4 < TN / 4; ++j4)
      f(row, n0 + b_frag + j4 * 4 * WARP_N,
        make_float4(acc[i][4 * j4 + 0], acc[i][4 * j4 + 1], acc[i][4 * j4 + 2], acc[i][4 * j4 + 3]));
  }
}

#if STREAM_K
// Stream-K state: one flag per block for its first job where that job ends a tile begun by an earlier block
// (SK_FREE when the module loads and again at the end of every launch).
#define STREAM_K_MAX_BLOCKS 4096
#define SK_FREE 0u
#define SK_CLAIMED 1u
#define SK_STOLEN 2u
#define SK_DONE 3u
__device__ unsigned int gemm_regtile_flags[STREAM_K_MAX_BLOCKS];

__device__ __forceinline__ unsigned int ld_acquire(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned int* p, unsigned int v) {
  asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
#endif

extern "C" __global__ void CLUSTER_ATTR __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_regtile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  extern __shared__ float4 smem_f4[];
  float* const As = reinterpret_cast<float*>(smem_f4);
  float* const Bs = As + STAGES * A_STAGE;

  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int a_frag = (warp / WARPS_N) * WTILE_M + (lane / WARP_N) * 4;  // first row of the thread in the tile
  const int b_frag = (warp % WARPS_N) * WTILE_N + (lane % WARP_N) * 4;  // first column

  // Global-load mapping: chunk c = tid + i*THREADS of the A tile is row c / A_CHUNKS_PER_ROW, column
  // (c % A_CHUNKS_PER_ROW) * 4; THREADS is a multiple of A_CHUNKS_PER_ROW, so the column is the same for all i.
  const int a_row = tid / A_CHUNKS_PER_ROW, a_col = (tid % A_CHUNKS_PER_ROW) * 4;
  const int b_row = tid / B_CHUNKS_PER_ROW, b_col = (tid % B_CHUNKS_PER_ROW) * 4;

  const bool vec_a = (K & 3) == 0 && (reinterpret_cast<unsigned long long>(A) & 15) == 0;
  const bool vec_b = (N & 3) == 0 && (reinterpret_cast<unsigned long long>(B) & 15) == 0;
  const bool vec_c = (N & 3) == 0 && (reinterpret_cast<unsigned long long>(C) & 15) == 0;

  float4 ra[A_LOADS], rb[B_LOADS];
  float acc[TM][TN];

  // Fragments of A and B for one k of shared buffer s.
  auto load_frags = [&](float (&a)[TM], float (&b)[TN], const int s, const int kk) {
    const float* as = As + s * A_STAGE + kk * LDA + a_frag;
    const float* bs = Bs + s * B_STAGE + kk * LDB + b_frag;
#pragma unroll
    for (int i = 0; i < TM / 4; ++i) {
      const float4 v = *reinterpret_cast<const float4*>(as + i * 4 * WARP_M);
      a[4 * i + 0] = v.x;
      a[4 * i + 1] = v.y;
      a[4 * i + 2] = v.z;
      a[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < TN / 4; ++j) {
      const float4 v = *reinterpret_cast<const float4*>(bs + j * 4 * WARP_N);
      b[4 * j + 0] = v.x;
      b[4 * j + 1] = v.y;
      b[4 * j + 2] = v.z;
      b[4 * j + 3] = v.w;
    }
  };
  // The order of the TM x TN multiply-adds (rows outer or columns outer) changes the compiler's register
  // assignment and so its register-bank conflicts; which is faster depends on the tile.
  auto outer_product = [&](const float (&a)[TM], const float (&b)[TN]) {
#if FMA_ORDER == 0
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
#else
#pragma unroll
    for (int j = 0; j < TN; ++j)
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
#endif
  };

  // The main loop for the block tile at (m0, n0) over [k_begin, k_end): acc = (or += where !zero)
  // A[m0.., k_begin..k_end) * B[k_begin..k_end), n0..). The caller orders it after the previous readers of
  // shared memory.
  auto mainloop = [&](const int m0, const int n0, const int k_begin, const int k_end, const bool zero) {
    const bool fast_a = vec_a && m0 + BM <= M;
    const bool fast_b = vec_b && n0 + BN <= N;
#if !(STAGES == 2 && FRAG_PIPE)
    // Every tile load of this call is inside the matrices and aligned: the unchecked copy of the loop.
    const bool all_fast = fast_a && fast_b && k_end > k_begin && (k_end - k_begin) % BK == 0;
#endif

    // Reads the tiles of A and B at k0 into ra, rb: unchecked 16-byte loads where `unchecked` (all_fast) or
    // where the operand's rows are inside and aligned and the tile of K is full, checked loads otherwise.
    auto load_tiles = [&](const int k0, const bool unchecked) {
      const bool full_k = k0 + BK <= k_end;
      if (unchecked || (fast_a && full_k)) {
        const float* p = A + (size_t)(m0 + a_row) * K + (k0 + a_col);
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) ra[i] = *reinterpret_cast<const float4*>(p + (size_t)i * A_ROW_STEP * K);
      } else {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
          const int m = m0 + a_row + i * A_ROW_STEP, k = k0 + a_col;
          float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
          if (m < M && k < k_end) {
            const float* p = A + (size_t)m * K + k;
            if (vec_a) {
              v = *reinterpret_cast<const float4*>(p);  // k_end % 4 == 0 and k % 4 == 0: k < k_end means k + 3 < k_end
            } else {
              v.x = p[0];
              if (k + 1 < k_end) v.y = p[1];
              if (k + 2 < k_end) v.z = p[2];
              if (k + 3 < k_end) v.w = p[3];
            }
          }
          ra[i] = v;
        }
      }
      if (unchecked || (fast_b && full_k)) {
        const float* p = B + (size_t)(k0 + b_row) * N + (n0 + b_col);
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) rb[i] = *reinterpret_cast<const float4*>(p + (size_t)i * B_ROW_STEP * N);
      } else {
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
          const int k = k0 + b_row + i * B_ROW_STEP, n = n0 + b_col;
          float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
          if (k < k_end && n < N) {
            const float* p = B + (size_t)k * N + n;
            if (vec_b) {
              v = *reinterpret_cast<const float4*>(p);
            } else {
              v.x = p[0];
              if (n + 1 < N) v.y = p[1];
              if (n + 2 < N) v.z = p[2];
              if (n + 3 < N) v.w = p[3];
            }
          }
          rb[i] = v;
        }
      }
    };

    // Writes ra (transposed) and rb into shared buffer s.
    auto store_tiles = [&](const int s) {
      float* as = As + s * A_STAGE;
      float* bs = Bs + s * B_STAGE;
#pragma unroll
      for (int i = 0; i < A_LOADS; ++i) {
        const int r = a_row + i * A_ROW_STEP;
        as[(a_col + 0) * LDA + r] = ra[i].x;
        as[(a_col + 1) * LDA + r] = ra[i].y;
        as[(a_col + 2) * LDA + r] = ra[i].z;
        as[(a_col + 3) * LDA + r] = ra[i].w;
      }
#pragma unroll
      for (int i = 0; i < B_LOADS; ++i)
        *reinterpret_cast<float4*>(bs + (b_row + i * B_ROW_STEP) * LDB + b_col) = rb[i];
    };

    if (zero) {
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
    }

    const int steps = (k_end - k_begin + BK - 1) / BK;
#if STAGES == 2 && FRAG_PIPE
    // Software pipeline: while step t multiplies buffer t&1, registers hold the tile of step t+1 (read from
    // global memory during step t-1). Before the last k of step t they go to buffer (t+1)&1, whose readers all
    // passed the barrier of step t-1; after this step's barrier the tile of step t+2 is requested and the
    // fragments of the next buffer's first k are read, so their latency hides behind the last outer product.
    float a[2][TM], b[2][TN];
    load_tiles(k_begin, false);
    store_tiles(0);
    if (steps > 1) load_tiles(k_begin + BK, false);
    __syncthreads();
    load_frags(a[0], b[0], 0, 0);
    for (int t = 0; t < steps; ++t) {
      const int cur = t & 1;
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        if (kk == BK - 1) {
          if (t + 1 < steps) store_tiles(cur ^ 1);
          __syncthreads();
          if (t + 2 < steps) load_tiles(k_begin + (t + 2) * BK, false);
          load_frags(a[(kk + 1) & 1], b[(kk + 1) & 1], cur ^ 1, 0);  // unused after the last step
        } else {
          load_frags(a[(kk + 1) & 1], b[(kk + 1) & 1], cur, kk + 1);
        }
        outer_product(a[kk & 1], b[kk & 1]);
      }
    }
#elif STAGES == 2
    // Step t multiplies buffer t&1 while the tile of step t+1 is in flight to registers; it is then stored
    // into buffer (t+1)&1, whose readers all passed the previous barrier, and one barrier ends the step.
    // (The compiler schedules the fragment reads inside a step.) The last step is peeled.
    float a[TM], b[TN];
    auto run = [&](const bool unchecked) {
      load_tiles(k_begin, unchecked);
      store_tiles(0);
      __syncthreads();
      int t = 0;
      for (; t < steps - 1; ++t) {
        load_tiles(k_begin + (t + 1) * BK, unchecked);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
          load_frags(a, b, t & 1, kk);
          outer_product(a, b);
        }
        store_tiles((t + 1) & 1);
        __syncthreads();
      }
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        load_frags(a, b, t & 1, kk);
        outer_product(a, b);
      }
      __syncthreads();
    };
    if (all_fast) run(true); else run(false);
#else
    // One buffer: store the tile of step t, barrier, request the tile of step t+1, multiply, barrier. The last
    // step is peeled.
    float a[TM], b[TN];
    auto run = [&](const bool unchecked) {
      load_tiles(k_begin, unchecked);
      int t = 0;
      for (; t < steps - 1; ++t) {
        store_tiles(0);
        __syncthreads();
        load_tiles(k_begin + (t + 1) * BK, unchecked);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
          load_frags(a, b, 0, kk);
          outer_product(a, b);
        }
        __syncthreads();
      }
      store_tiles(0);
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        load_frags(a, b, 0, kk);
        outer_product(a, b);
      }
      __syncthreads();
    };
    if (all_fast) run(true); else run(false);
#endif
  };

#if STREAM_K
  // Stream-K: STREAM_K blocks per SM (grid = STREAM_K * sms). The work is every tile's BK steps laid end to
  // end (tiles in row-major order); block c takes the steps [c * total / G, (c + 1) * total / G), so every
  // block does the same number of steps whatever the tile count, and no SM idles in a last partial wave.
  // Blocks walk their range forwards. A tile cut between blocks is summed in C from its end: the piece that
  // ends the tile (its block's first job) stores its partial sums and marks its block's flag SK_DONE; the
  // piece before it (the previous block's last job, so the wait is short or nil) adds C to its accumulators,
  // stores, and so on down to the piece that starts the tile, which stores the result. The order of the sums
  // is fixed, so results do not vary from run to run.
  // No block waits on a block that has not started: a block marks its first job SK_CLAIMED when it starts it,
  // and a block that needs the pieces of a block whose job is still unclaimed marks it SK_STOLEN and computes
  // those steps itself (their owner then skips them). So there is no deadlock even where not all blocks fit on
  // the GPU at once. Every flag is back at 0 when the launch ends.
  __shared__ unsigned int sk_state;
  const int G = gridDim.x, cta = blockIdx.x;
  const int tiles_n = (N + BN - 1) / BN;
  const int ipt = (K + BK - 1) / BK;  // steps per tile
  const long long total = (long long)tiles_n * ((M + BM - 1) / BM) * ipt;
  const long long last = (cta + 1) * total / G;
  long long s = cta * total / G;
  while (s < last) {
    const int t = static_cast<int>(s / ipt);
    const long long tile_first = (long long)t * ipt;
    const int ks = static_cast<int>(s - tile_first);
    int ke = static_cast<int>(min(last, tile_first + ipt) - tile_first);
    s = tile_first + ke;
    if (ks > 0) {  // the block's first job, the end of a tile begun by an earlier block: claim it
      if (tid == 0) sk_state = atomicCAS(gemm_regtile_flags + cta, SK_FREE, SK_CLAIMED);
      __syncthreads();
      if (sk_state == SK_STOLEN) {  // computed by the block that needed it; free the flag
        if (tid == 0) gemm_regtile_flags[cta] = SK_FREE;
        continue;
      }
    }
    const int m0 = (t / tiles_n) * BM, n0 = (t % tiles_n) * BN;
    // The steps [ke, ipt) of the tile belong to later blocks, starting with the first job of the block that
    // holds step ke: wait for its sums, or take its steps if it has not started them.
    bool add_c = false;
    int kb = ks;
    for (;;) {
      __syncthreads();  // the previous readers of shared memory (and of sk_state) are done
      mainloop(m0, n0, kb * BK, min(K, ke * BK), kb == ks);
      if (ke == ipt) break;
      const int owner = static_cast<int>(((tile_first + ke + 1) * G - 1) / total);
      if (tid == 0) {
        const unsigned int st = atomicCAS(gemm_regtile_flags + owner, SK_FREE, SK_STOLEN);
        if (st != SK_FREE) {
          while (ld_acquire(gemm_regtile_flags + owner) != SK_DONE) __nanosleep(64);
          gemm_regtile_flags[owner] = SK_FREE;  // read once, by this block
        }
        sk_state = st;
      }
      __syncthreads();
      if (sk_state != SK_FREE) {  // C holds the sum of the steps [ke, ipt)
        add_c = true;
        break;
      }
      kb = ke;
      ke = static_cast<int>(min((owner + 1) * total / G, tile_first + ipt) - tile_first);
    }
    const bool interior_c = vec_c && m0 + BM <= M && n0 + BN <= N;
    for_each_acc4(acc, m0, n0, a_frag, b_frag, [&](const int row, const int col, float4 v) {
      if (add_c) {
        const float4 c = load_c4(C, M, N, row, col, interior_c, vec_c);  // the later pieces' sum
        v.x = v.x + c.x;
        v.y = v.y + c.y;
        v.z = v.z + c.z;
        v.w = v.w + c.w;
      }
      store_c4(C, M, N, row, col, v, interior_c, vec_c);
    });
    if (ks > 0) {  // an earlier block's last job adds these sums
      __threadfence();
      __syncthreads();
      if (tid == 0) st_release(gemm_regtile_flags + cta, SK_DONE);
    }
  }
#else
  // Block coordinates.
#if GROUP_M > 1
  int bm, bn;
  {
    const int grid_n = gridDim.x, grid_m = gridDim.y;
    const int pid = blockIdx.y * grid_n + blockIdx.x;
    const int per_group = GROUP_M * grid_n;
    const int first_m = (pid / per_group) * GROUP_M;
    const int rows = min(grid_m - first_m, GROUP_M);
    const int in_group = pid % per_group;
    bm = first_m + in_group % rows;
    bn = in_group / rows;
  }
#else
  const int bm = blockIdx.y, bn = blockIdx.x;
#endif
  // The block's own outputs start at (m_own, n_own); with EDGE_SHIFT its tile may start before them.
  const int m_own = bm * BM, n_own = bn * BN;
  const int m0 = edge_shift(m_own, M, BM, true), n0 = edge_shift(n_own, N, BN, (N & 3) == 0);

  // This block's slice of K: [k_begin, k_end), whole BK steps (all of K when SPLIT_K == 1). A slice may be
  // empty when K is small; its accumulators stay 0.
#if SPLIT_K > 1
  const int steps_all = (K + BK - 1) / BK;
  const int k_begin = min(K, (int)blockIdx.z * ((steps_all + SPLIT_K - 1) / SPLIT_K) * BK);
  const int k_end = min(K, k_begin + ((steps_all + SPLIT_K - 1) / SPLIT_K) * BK);
#else
  const int k_begin = 0, k_end = K;
#endif

  mainloop(m0, n0, k_begin, k_end, true);

#if SPLIT_K > 1
  // Reduce across the cluster. Every block's partial tile goes to its own shared memory as red[BM][BN]
  // (dynamic shared memory holds at least BM * BN floats for SPLIT_K > 1).
  float* const red = As;
  __syncthreads();  // the last fragments were read from shared memory
  for_each_acc4(acc, 0, 0, a_frag, b_frag, [&](const int row, const int col, const float4 v) {
    *reinterpret_cast<float4*>(red + row * BN + col) = v;
  });
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  {
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const unsigned red_base = static_cast<unsigned>(__cvta_generic_to_shared(red));
    unsigned peer[SPLIT_K];
#pragma unroll
    for (int r = 0; r < SPLIT_K; ++r) asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer[r]) : "r"(red_base), "r"(r));
    constexpr int ROWS = BM / SPLIT_K, CHUNKS = ROWS * (BN / 4);
    const bool interior = vec_c && m0 + BM <= M && n0 + BN <= N;
    for (int c = tid; c < CHUNKS; c += THREADS) {
      const int row = rank * ROWS + c / (BN / 4), col = (c % (BN / 4)) * 4;
      const unsigned off = static_cast<unsigned>((row * BN + col) * 4);
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int r = 0; r < SPLIT_K; ++r) {
        float4 v;
        asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(peer[r] + off) : "memory");
        sum.x += v.x;
        sum.y += v.y;
        sum.z += v.z;
        sum.w += v.w;
      }
      store_c4(C, M, N, m0 + row, n0 + col, sum, interior, vec_c);
    }
  }
  // No block may leave while the others still read its shared memory.
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  // Write the thread's tile of C (only the block's own outputs, where EDGE_SHIFT moved the tile).
  const bool interior_c = vec_c && m0 + BM <= M && n0 + BN <= N;
  for_each_acc4(acc, m0, n0, a_frag, b_frag, [&](const int row, const int col, const float4 v) {
    if (EDGE_SHIFT && (row < m_own || col < n_own)) return;
    store_c4(C, M, N, row, col, v, interior_c, vec_c);
  });
#endif
#endif
}
