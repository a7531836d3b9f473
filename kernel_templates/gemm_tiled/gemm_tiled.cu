// C = A * B for row-major A (MxK), B (KxN), C (MxN) with shared-memory tiles, one output per thread.
// A block of TILE_WIDTH x BLOCK_Y threads owns a BLOCK_Y x TILE_WIDTH tile of C and walks K in phases of
// TILE_K: each phase loads a BLOCK_Y x TILE_K tile of A and a TILE_K x TILE_WIDTH tile of B collaboratively,
// waits at a barrier, accumulates, and waits again before the next load overwrites the tiles.
// With BLOCK_Y == TILE_K == TILE_WIDTH this is the classic square kernel: each thread loads one element of
// each tile. Loads outside the matrices read 0, so any M, N, K is right, not only tile multiples.
#ifndef TILE_WIDTH
#define TILE_WIDTH 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y TILE_WIDTH
#endif
#ifndef TILE_K
#define TILE_K TILE_WIDTH
#endif

#define THREADS (TILE_WIDTH * BLOCK_Y)

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BLOCK_Y][TILE_K];
  __shared__ float Bs[TILE_K][TILE_WIDTH];

  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int tid = ty * TILE_WIDTH + tx;
  const int block_row = blockIdx.y * BLOCK_Y;
  const int block_col = blockIdx.x * TILE_WIDTH;
  float acc = 0.0f;

  for (int k0 = 0; k0 < K; k0 += TILE_K) {
#if TILE_K == TILE_WIDTH
    {  // the tile of A has the block's shape: each thread loads one element, as in the seed
      const int gr = block_row + ty, gc = k0 + tx;
      As[ty][tx] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : 0.0f;
    }
#else
    for (int i = tid; i < BLOCK_Y * TILE_K; i += THREADS) {
      const int r = i / TILE_K, c = i % TILE_K;
      const int gr = block_row + r, gc = k0 + c;
      As[r][c] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : 0.0f;
    }
#endif
#if TILE_K == BLOCK_Y
    {  // likewise for the tile of B
      const int gr = k0 + ty, gc = block_col + tx;
      Bs[ty][tx] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : 0.0f;
    }
#else
    for (int i = tid; i < TILE_K * TILE_WIDTH; i += THREADS) {
      const int r = i / TILE_WIDTH, c = i % TILE_WIDTH;
      const int gr = k0 + r, gc = block_col + c;
      Bs[r][c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : 0.0f;
    }
#endif
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE_K; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  const int row = block_row + ty, col = block_col + tx;
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
