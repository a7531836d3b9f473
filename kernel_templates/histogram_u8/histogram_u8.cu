// bins[v] += the number of bytes of data equal to v, for a 256-bin histogram that accumulates into bins.
//
// A grid of at most BLOCKS_PER_SM blocks per SM strides over the data; each step a thread reads
// ITEMS_PER_THREAD bytes as ITEMS_PER_THREAD / 16 16-byte loads (all issued before the first is counted),
// adjacent threads reading adjacent 16-byte chunks. Bytes before the first 16-byte boundary of data and after
// the last whole chunk are counted one by one, so any n and any alignment is correct.
//
// STRATEGY picks where the counts go:
//   0: straight to bins with global atomics (every byte an L2 atomic on one of 256 addresses: contended);
//   1: one private histogram per block in shared memory, added to bins at the end (one atomic per bin);
//   2: one private histogram per HIST_WARPS warps, so that fewer warps contend for the same shared counters
//      (and skewed data, where many bytes hit one bin, serialises less); summed per bin at the end.
// A shared histogram has REPLICAS interleaved copies, counter (bin, lane % REPLICAS) at bin * REPLICAS +
// lane % REPLICAS: a warp's 32 atomics on random bins otherwise pile up on the same banks (bin and bin + 32
// share one), which is what limits the plain histogram; with 32 replicas every lane has its own bank.
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 1024
#endif
#ifndef ITEMS_PER_THREAD
#define ITEMS_PER_THREAD 64
#endif
#ifndef STRATEGY
#define STRATEGY 1
#endif
#ifndef HIST_WARPS
#define HIST_WARPS 1
#endif
#ifndef REPLICAS
#define REPLICAS 32
#endif
#ifndef BLOCKS_PER_SM
#define BLOCKS_PER_SM 1
#endif

#if ITEMS_PER_THREAD % 16 != 0
#error "ITEMS_PER_THREAD must be a multiple of 16 (whole 16-byte loads)"
#endif
#if BLOCK_SIZE % (32 * HIST_WARPS) != 0
#error "BLOCK_SIZE must be a multiple of 32 * HIST_WARPS"
#endif
#if 32 % REPLICAS != 0
#error "REPLICAS must divide 32"
#endif

#define CHUNKS (ITEMS_PER_THREAD / 16)  // 16-byte loads per thread and step
#define NBINS 256
#if STRATEGY == 1
#define NHIST 1
#elif STRATEGY == 2
#define NHIST (BLOCK_SIZE / (32 * HIST_WARPS))
#endif
#define HIST_WORDS (NBINS * REPLICAS)  // one shared histogram

#if STRATEGY == 0
#define STRIDE 1
#else
#define STRIDE REPLICAS
#endif

__device__ __forceinline__ void count_byte(unsigned int* h, unsigned int v) { atomicAdd(h + v * STRIDE, 1u); }

__device__ __forceinline__ void count_word(unsigned int* h, unsigned int w) {
  count_byte(h, w & 0xffu);
  count_byte(h, (w >> 8) & 0xffu);
  count_byte(h, (w >> 16) & 0xffu);
  count_byte(h, w >> 24);
}

__device__ __forceinline__ void count_chunk(unsigned int* h, uint4 c) {
  count_word(h, c.x);
  count_word(h, c.y);
  count_word(h, c.z);
  count_word(h, c.w);
}

// BLOCKS_PER_SM as the minimum resident blocks: the grid is sized to be resident all at once.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE, BLOCKS_PER_SM)
    histogram_u8(const unsigned char* __restrict__ data, unsigned int* __restrict__ bins, long long n) {
  const int tid = threadIdx.x;
#if STRATEGY == 0
  unsigned int* h = bins;
#else
  __shared__ unsigned int hist[NHIST * HIST_WORDS];
  for (int i = tid; i < NHIST * HIST_WORDS; i += BLOCK_SIZE) hist[i] = 0;
  __syncthreads();
  unsigned int* h = hist + (tid % REPLICAS);
#if STRATEGY == 2
  h += (tid / (32 * HIST_WARPS)) * HIST_WORDS;
#endif
#endif

  const long long g = (long long)blockIdx.x * BLOCK_SIZE + tid;
  // Head: the bytes before data's first 16-byte boundary (fewer than 16, and the grid has more threads).
  const long long head = min(n, (long long)((16 - (reinterpret_cast<unsigned long long>(data) & 15)) & 15));
  if (g < head) count_byte(h, data[g]);

  // Pointers rather than 64-bit indices: fewer live registers beside the loaded chunks.
  const uint4* const body = reinterpret_cast<const uint4*>(data + head);
  const uint4* const end = body + ((n - head) >> 4);  // past the last whole chunk
  const long long span = (long long)gridDim.x * (BLOCK_SIZE * CHUNKS);
  const uint4* p = body + (long long)blockIdx.x * (BLOCK_SIZE * CHUNKS) + tid;  // this thread's first chunk
  // Whole steps: every chunk in range, no guards.
  for (; p + (CHUNKS - 1) * BLOCK_SIZE < end; p += span) {
    uint4 v[CHUNKS];
#pragma unroll
    for (int k = 0; k < CHUNKS; ++k) v[k] = __ldg(p + k * BLOCK_SIZE);
#pragma unroll
    for (int k = 0; k < CHUNKS; ++k) count_chunk(h, v[k]);
  }
  // The last, partial step (the next one would start past the end).
#pragma unroll
  for (int k = 0; k < CHUNKS; ++k)
    if (p + k * BLOCK_SIZE < end) count_chunk(h, __ldg(p + k * BLOCK_SIZE));

  // Tail: the bytes after the last whole chunk (fewer than 16).
  const long long tail = head + ((n - head) & ~15ll);
  if (g < n - tail) count_byte(h, data[tail + g]);

#if STRATEGY != 0
  __syncthreads();
  // Word i of every histogram is counter (i / REPLICAS, i % REPLICAS): consecutive threads read consecutive
  // words (no bank conflicts), sum them over the NHIST histograms, then over the REPLICAS lanes that hold
  // one bin. Every lane of a warp makes the same number of trips (HIST_WORDS is a multiple of 32).
  for (int i = tid; i < HIST_WORDS; i += BLOCK_SIZE) {
    unsigned int sum = 0;
#pragma unroll 8
    for (int k = 0; k < NHIST; ++k) sum += hist[k * HIST_WORDS + i];
#pragma unroll
    for (int o = REPLICAS / 2; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (i % REPLICAS == 0 && sum != 0) atomicAdd(bins + i / REPLICAS, sum);
  }
#endif
}
