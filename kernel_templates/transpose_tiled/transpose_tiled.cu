// out (cols x rows) = transpose of in (rows x cols), both row-major, through a shared-memory tile so that
// both global sides are coalesced: a block reads a TILE_DIM x TILE_DIM tile row by row, and writes it back
// column by column as rows of the output.
//
// The block is (TILE_DIM / VEC) x BLOCK_ROWS threads; each moves TILE_DIM / BLOCK_ROWS vectors of VEC floats
// each way (several independent loads in flight per thread). VEC > 1 reads and writes global memory in 8- or
// 16-byte vectors where the tile is whole and the rows are aligned (cols % VEC == 0 for the loads,
// rows % VEC == 0 for the stores, and aligned pointers); partial tiles at the edges and unaligned matrices
// take a scalar path, so any size is correct. Shared memory is always accessed in single words: a thread's
// vector read from the tile is a column segment. PAD 1 adds a word to every tile row so that a warp reading a
// tile column hits 32 different banks (with PAD 0 that read is a 32-way bank conflict for VEC 1).
//
// gridDim.y is capped at 65535 by the launch: a block steps down by gridDim.y tiles until the matrix ends.
#ifndef TILE_DIM
#define TILE_DIM 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif
#ifndef PAD
#define PAD 1
#endif
#ifndef VEC
#define VEC 1
#endif

#if VEC != 1 && VEC != 2 && VEC != 4
#error "VEC must be 1, 2 or 4"
#endif
#if TILE_DIM % BLOCK_ROWS != 0
#error "TILE_DIM must be a multiple of BLOCK_ROWS"
#endif

#define TX (TILE_DIM / VEC)          // threads along a tile row
#define RPT (TILE_DIM / BLOCK_ROWS)  // vectors per thread each way

struct alignas(4 * VEC) FloatVec {
  float v[VEC];
};

extern "C" __global__ void __launch_bounds__(TX * BLOCK_ROWS)
    transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[TILE_DIM][TILE_DIM + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c0 = blockIdx.x * TILE_DIM;
  const int tiles_y = (rows - 1) / TILE_DIM + 1;
  const bool aligned =
      VEC == 1 || ((reinterpret_cast<unsigned long long>(in) | reinterpret_cast<unsigned long long>(out)) &
                   (4 * VEC - 1)) == 0;
  const bool vec_load = aligned && cols % VEC == 0;
  const bool vec_store = aligned && rows % VEC == 0;
  const int cols_left = cols - c0;  // differences, not sums: no overflow near 2^31
  const bool full_cols = cols_left >= TILE_DIM;

  for (int by = blockIdx.y; by < tiles_y; by += gridDim.y) {
    const int r0 = by * TILE_DIM;
    const int rows_left = rows - r0;
    const bool full = full_cols && rows_left >= TILE_DIM;
    if (by != blockIdx.y) __syncthreads();  // everyone is done reading the previous tile

    const float* src = in + (long long)r0 * cols + c0;
    if (full && vec_load) {
      FloatVec v[RPT];  // all loads first: RPT requests in flight per thread
#pragma unroll
      for (int i = 0; i < RPT; ++i)
        v[i] = *reinterpret_cast<const FloatVec*>(src + (long long)(ty + i * BLOCK_ROWS) * cols + tx * VEC);
#pragma unroll
      for (int i = 0; i < RPT; ++i)
#pragma unroll
        for (int k = 0; k < VEC; ++k) tile[ty + i * BLOCK_ROWS][tx * VEC + k] = v[i].v[k];
    } else {
#pragma unroll
      for (int i = 0; i < RPT; ++i) {
        const int y = ty + i * BLOCK_ROWS;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const int c = tx * VEC + k;
          if (y < rows_left && c < cols_left) tile[y][c] = src[(long long)y * cols + c];
        }
      }
    }
    __syncthreads();

    // Output row j of the tile is input column c0 + j; its elements are the tile's column j.
    float* dst = out + (long long)c0 * rows + r0;
    if (full && vec_store) {
#pragma unroll
      for (int i = 0; i < RPT; ++i) {
        const int j = ty + i * BLOCK_ROWS;
        FloatVec v;
#pragma unroll
        for (int k = 0; k < VEC; ++k) v.v[k] = tile[tx * VEC + k][j];
        *reinterpret_cast<FloatVec*>(dst + (long long)j * rows + tx * VEC) = v;
      }
    } else {
#pragma unroll
      for (int i = 0; i < RPT; ++i) {
        const int j = ty + i * BLOCK_ROWS;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const int r = tx * VEC + k;
          if (j < cols_left && r < rows_left) dst[(long long)j * rows + r] = tile[r][j];
        }
      }
    }
  }
}
