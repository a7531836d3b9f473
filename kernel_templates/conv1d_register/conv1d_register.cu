// 1D convolution at memory bandwidth: every thread computes OUTPUTS_PER_THREAD consecutive outputs from a
// register window that it fills with 16-byte chunks, so that in-bounds data is read from DRAM once and
// written once.
//
// Window layout. MAX_MASK (odd) bounds the mask width at compile time; RMAX = MAX_MASK / 2 and
// HALO = RMAX rounded up to a multiple of 4. A thread whose first output is g holds
//   win[i] = in[g - HALO + i],  i in [0, OUTPUTS_PER_THREAD + 2 * HALO)
// in float4 chunks (chunk c = win[4c .. 4c + 3]); g and HALO are multiples of 4, so every chunk is 16-byte
// aligned. The window is centred on compile-time offsets whatever the run-time mask width, so
//   out[g + k] = sum_{d = -r}^{r} mask[d + r] * win[HALO + k + d],   r = mask_width / 2,
// indexes registers with constants only. Chunks that no tap reads (|d| > r) are never loaded.
//
// EXACT 0: one code path for every mask_width <= MAX_MASK; each tap is a uniform guard plus one constant load
// shared by OUTPUTS_PER_THREAD FMAs. EXACT 1: only mask_width == MAX_MASK (the family's constraint), every
// tap compile-time, mask[] a constant-bank operand of each FFMA, and far fewer live registers.
//
// Ghost elements (positions outside [0, n)) are 0 for boundary 0 and the nearest edge element for boundary 1.
//
// STRATEGY picks how the window is filled:
//   0: the block stages its tile and both halos in shared memory with one strided loop of float4 chunks;
//   1: shared-memory tile loaded in coalesced float4 rounds, halos loaded by the edge threads (first and last
//      ceil(r / 4) threads of the block);
//   2: no shared memory: each thread reads its own overlapping window straight from global memory through the
//      read-only cache (__ldg); neighbours' halos hit L1;
//   3: like 0, but each block computes TILES_PER_BLOCK consecutive tiles from two shared buffers: tile i + 1 is
//      copied in with cp.async (global -> shared, no registers held) while tile i is computed, so the memory
//      system stays busy during the FMAs (what wide masks need).
// Shared-memory tiles are padded by one float4 every 8 (OUTPUTS_PER_THREAD >= 8) so that the per-thread
// 16-byte window reads, whose stride is OUTPUTS_PER_THREAD floats, are free of bank conflicts.
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 64
#endif
#ifndef OUTPUTS_PER_THREAD
#define OUTPUTS_PER_THREAD 16
#endif
#ifndef STRATEGY
#define STRATEGY 2
#endif
#ifndef MAX_MASK
#define MAX_MASK 63
#endif
#ifndef TILES_PER_BLOCK
#define TILES_PER_BLOCK 1
#endif
#ifndef EXACT
#define EXACT 0
#endif

#if OUTPUTS_PER_THREAD % 4 != 0
#error "OUTPUTS_PER_THREAD must be a multiple of 4"
#endif
#if MAX_MASK % 2 != 1 || MAX_MASK > 63
#error "MAX_MASK must be odd and at most 63"
#endif

#define OPT OUTPUTS_PER_THREAD
#define RMAX (MAX_MASK / 2)
#define HALO ((RMAX + 3) / 4 * 4)
#define WIN (OPT + 2 * HALO)
#define WIN_CHUNKS (WIN / 4)
#define TILE (BLOCK_SIZE * OPT)
#define TILE_CHUNKS ((TILE + 2 * HALO) / 4)
#if OPT >= 8
#define PHYS(c) ((c) + ((c) >> 3))
#else
#define PHYS(c) (c)
#endif
#define TILE_SLOTS (PHYS(TILE_CHUNKS - 1) + 1)  // float4s of one padded tile

__constant__ float mask[64];

#if STRATEGY == 0 || STRATEGY == 1
// Tile chunk c holds in[base - HALO + 4c .. + 3], stored at tile[PHYS(c)].
__shared__ float4 tile[TILE_SLOTS];
#elif STRATEGY == 3
// Two tiles: the one being computed and the next one, in flight.
__shared__ float4 tile[2 * TILE_SLOTS];
#endif

// One input element, or its ghost.
__device__ __forceinline__ float element(const float* __restrict__ in, long long p, int n, int boundary) {
  if (p >= 0 && p < n) return __ldg(in + p);
  if (boundary == 0) return 0.0f;
  return __ldg(in + (p < 0 ? 0 : n - 1));
}

__device__ __forceinline__ float4 elements4(const float* __restrict__ in, long long p, int n, int boundary) {
  return make_float4(element(in, p, n, boundary), element(in, p + 1, n, boundary), element(in, p + 2, n, boundary),
                     element(in, p + 3, n, boundary));
}

// Four elements starting at p (a multiple of 4): one 16-byte load when all four are inside.
__device__ __forceinline__ float4 chunk(const float* __restrict__ in, long long p, int n, int boundary, bool vec) {
  if (vec && p >= 0 && p + 4 <= n) return __ldg(reinterpret_cast<const float4*>(in + p));
  return elements4(in, p, n, boundary);
}

// Whether a tap of radius rr reads window chunk c.
__device__ __forceinline__ bool needed(int c, int rr) { return 4 * c + 4 > HALO - rr && 4 * c < HALO + OPT + rr; }

__device__ __forceinline__ void put(float (&win)[WIN], int c, float4 v) {
  win[4 * c] = v.x;
  win[4 * c + 1] = v.y;
  win[4 * c + 2] = v.z;
  win[4 * c + 3] = v.w;
}

#if STRATEGY != 2
// The thread's window from a shared tile: window chunk c is tile chunk t * OPT / 4 + c.
__device__ __forceinline__ void window_from_tile(float (&win)[WIN], const float4* buf, int t, int rr) {
  const int c0 = t * (OPT / 4);
#pragma unroll
  for (int c = 0; c < WIN_CHUNKS; ++c)
    if (needed(c, rr)) put(win, c, buf[PHYS(c0 + c)]);
}
#endif

// out[g .. g + OPT) from the window.
template <bool FULL>
__device__ __forceinline__ void convolve_store(const float (&win)[WIN], float* __restrict__ out, long long g, int n, int r,
                                               bool vec) {
  float acc[OPT];
#pragma unroll
  for (int k = 0; k < OPT; ++k) acc[k] = 0.0f;
  if (FULL) {
    // Input-major: each window value is consumed by all its taps at once, so few values are live; every
    // acc[k] still adds its taps in increasing d.
#pragma unroll
    for (int j = HALO - RMAX; j < HALO + OPT + RMAX; ++j)
#pragma unroll
      for (int k = 0; k < OPT; ++k) {
        const int d = j - HALO - k;
        if (d >= -RMAX && d <= RMAX) acc[k] = fmaf(mask[d + RMAX], win[j], acc[k]);
      }
  } else {
    // Tap-major: one constant load per tap, shared by OPT FMAs.
#pragma unroll
    for (int d = -RMAX; d <= RMAX; ++d) {
      if (d >= -r && d <= r) {
        const float m = mask[d + r];
#pragma unroll
        for (int k = 0; k < OPT; ++k) acc[k] = fmaf(m, win[HALO + k + d], acc[k]);
      }
    }
  }
  if (vec && g + OPT <= n) {
#pragma unroll
    for (int j = 0; j < OPT / 4; ++j)
      reinterpret_cast<float4*>(out + g)[j] = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
  } else {
#pragma unroll
    for (int k = 0; k < OPT; ++k)
      if (g + k < n) out[g + k] = acc[k];
  }
}

#if STRATEGY == 3
// Starts copying the tile at base into buf: 16-byte cp.async (global -> shared, no registers) where the chunk
// is inside, ghosts stored directly.
__device__ __forceinline__ void stage(float4* buf, const float* __restrict__ in, long long base, int n, int boundary,
                                      bool vec, int c_begin, int c_end) {
  for (int c = c_begin + (int)threadIdx.x; c < c_end; c += BLOCK_SIZE) {
    const long long p = base - HALO + 4 * c;
    float4* dst = buf + PHYS(c);
    if (vec && p >= 0 && p + 4 <= n) {
      const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(in + p) : "memory");
    } else {
      *dst = elements4(in, p, n, boundary);
    }
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
#endif

template <bool FULL>
__device__ __forceinline__ void run(const float* __restrict__ in, float* __restrict__ out, int n, int r, int boundary,
                                    bool vec) {
  const int rr = FULL ? RMAX : r;  // the radius, a constant on the full-width path
  const int h4 = (rr + 3) & ~3;    // halo rounded up to whole chunks
  const int t = threadIdx.x;
  float win[WIN];

#if STRATEGY == 3
  // TILES_PER_BLOCK consecutive tiles; tile i + 1 is copied in while tile i is computed.
  const int c_begin = (HALO - h4) >> 2, c_end = (HALO + TILE + h4) >> 2;
  const long long first = (long long)blockIdx.x * (TILES_PER_BLOCK * TILE);
  stage(tile, in, first, n, boundary, vec, c_begin, c_end);
  for (int i = 0; i < TILES_PER_BLOCK; ++i) {
    const long long base = first + (long long)i * TILE;
    if (base >= n) break;
    if (i > 0) __syncthreads();  // every thread is done with the buffer that the next copy overwrites
    if (i + 1 < TILES_PER_BLOCK && base + TILE < n)
      stage(tile + ((i + 1) & 1) * TILE_SLOTS, in, base + TILE, n, boundary, vec, c_begin, c_end);
    else
      asm volatile("cp.async.commit_group;\n" ::: "memory");  // an empty group keeps the count
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");   // this thread's copies of tile i are done
    __syncthreads();                                          // and everyone's
    const long long g = base + (long long)t * OPT;
    if (g < n) {
      window_from_tile(win, tile + (i & 1) * TILE_SLOTS, t, rr);
      convolve_store<FULL>(win, out, g, n, r, vec);
    }
  }
#else
  const long long base = (long long)blockIdx.x * TILE;
  const long long g = base + (long long)t * OPT;
#if STRATEGY == 2
  if (g >= n) return;
  if (vec && g - h4 >= 0 && g + OPT + h4 <= n) {
#pragma unroll
    for (int c = 0; c < WIN_CHUNKS; ++c)
      if (needed(c, rr)) put(win, c, __ldg(reinterpret_cast<const float4*>(in + (g - HALO + 4 * c))));
  } else {
#pragma unroll
    for (int c = 0; c < WIN_CHUNKS; ++c)
      if (needed(c, rr))
#pragma unroll
        for (int q = 0; q < 4; ++q) win[4 * c + q] = element(in, g - HALO + 4 * c + q, n, boundary);
  }
#else
#if STRATEGY == 0
  // Every chunk that some thread's window needs: [HALO/4 - h4/4, HALO/4 + TILE/4 + h4/4).
  const int c_end = (HALO + TILE + h4) >> 2;
  for (int c = ((HALO - h4) >> 2) + t; c < c_end; c += BLOCK_SIZE)
    tile[PHYS(c)] = chunk(in, base - HALO + 4 * c, n, boundary, vec);
#else
#pragma unroll
  for (int j = 0; j < OPT / 4; ++j) {
    const int c = HALO / 4 + j * BLOCK_SIZE + t;
    tile[PHYS(c)] = chunk(in, base - HALO + 4 * c, n, boundary, vec);
  }
  const int hc = h4 >> 2;  // halo chunks on each side, at most 8 <= BLOCK_SIZE
  if (t < hc) {
    const int c = HALO / 4 - hc + t;
    tile[PHYS(c)] = chunk(in, base - HALO + 4 * c, n, boundary, vec);
  }
  if (t >= BLOCK_SIZE - hc) {
    const int c = HALO / 4 + TILE / 4 + t - (BLOCK_SIZE - hc);
    tile[PHYS(c)] = chunk(in, base - HALO + 4 * c, n, boundary, vec);
  }
#endif
  __syncthreads();
  if (g >= n) return;
  window_from_tile(win, tile, t, rr);
#endif
  convolve_store<FULL>(win, out, g, n, r, vec);
#endif
}

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE, 1)
conv1d_register(const float* __restrict__ in, float* __restrict__ out, int n, int mask_width, int boundary) {
  const int r = mask_width / 2;
  if (r > RMAX) return;  // the family's constraint keeps mask_width <= MAX_MASK
  const bool vec = ((reinterpret_cast<unsigned long long>(in) | reinterpret_cast<unsigned long long>(out)) & 15) == 0;
#if EXACT
  if (r != RMAX) return;  // the family's constraint keeps mask_width == MAX_MASK
  run<true>(in, out, n, r, boundary, vec);
#else
  run<false>(in, out, n, r, boundary, vec);
#endif
}
