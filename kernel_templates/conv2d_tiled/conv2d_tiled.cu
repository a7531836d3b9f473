// 2D convolution of an H x W row-major image with a mask_width x mask_width mask (row-major, in constant
// memory), with a halo of r = mask_width / 2 on every side; ghost pixels are 0 (boundary 0) or the nearest
// edge pixel (boundary 1, clamp).
//
// Each thread computes an OUT_Y x OUT_X block of consecutive outputs held in registers (register blocking):
// it walks the OUT_Y + 2r input rows its block needs, loads each row segment of OUT_X + 2r values once into
// registers (vector loads of min(OUT_X, 4) floats), and applies it to every output row that uses it, so each
// loaded value feeds up to OUT_X * mask_width FMAs.
//
// MAX_MASK (odd) bounds the mask width at compile time; RM = MAX_MASK / 2 and RA = RM rounded up to a multiple
// of 4. The register window is centred on compile-time offsets: for the thread's first output (y0, x0),
//   window row ry, column i  <->  in[y0 - RM + ry][x0 - RA + i],
// so the taps of a narrower run-time mask are a centred subset and every register index is a constant. When
// mask_width == MAX_MASK every tap is compile-time (mask[] is a constant-bank operand of each FFMA); otherwise
// each tap is a uniform guard plus one constant load shared by OUT_X FMAs.
//
// USE_SHARED 1: the block stages its (BLOCK_Y*OUT_Y + 2r) x (BLOCK_X*OUT_X + 2*ceil4(r)) input tile in dynamic
// shared memory, filled with coalesced 16-byte loads (ghosts resolved while filling); rows are padded by
// 4 * PAD floats. USE_SHARED 0: each thread reads its window straight from global memory through the
// read-only cache (__ldg), with vector loads when the whole window is inside the image.
//
// EXACT 1 compiles only the path of a mask exactly MAX_MASK wide (a third of the compile time, fewer
// registers); EXACT 0 also compiles the path of narrower run-time masks.
#ifndef BLOCK_X
#define BLOCK_X 64
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#ifndef OUT_X
#define OUT_X 8
#endif
#ifndef OUT_Y
#define OUT_Y 2
#endif
#ifndef USE_SHARED
#define USE_SHARED 1
#endif
#ifndef PAD
#define PAD 1
#endif
#ifndef MAX_MASK
#define MAX_MASK 15
#endif
#ifndef EXACT
#define EXACT 0
#endif

#if MAX_MASK % 2 != 1 || MAX_MASK > 15
#error "MAX_MASK must be odd and at most 15"
#endif
#if OUT_X != 1 && OUT_X != 2 && OUT_X % 4 != 0
#error "OUT_X must be 1, 2 or a multiple of 4"
#endif
#if (BLOCK_X * OUT_X) % 4 != 0
#error "BLOCK_X * OUT_X must be a multiple of 4"
#endif

#define TX (BLOCK_X * OUT_X)  // outputs per block in x
#define TY (BLOCK_Y * OUT_Y)  // outputs per block in y
#define RM (MAX_MASK / 2)
#define RA ((RM + 3) / 4 * 4)
#define VW (OUT_X < 4 ? OUT_X : 4)  // floats per vector load
#define WCOLS (OUT_X + 2 * RA)      // window columns, a multiple of VW
#define WROWS (OUT_Y + 2 * RM)      // window rows

__constant__ float mask[225];

// One pixel, or its ghost.
__device__ __forceinline__ float pixel(const float* __restrict__ in, int y, int x, int H, int W, int boundary) {
  if (y >= 0 && y < H && x >= 0 && x < W) return __ldg(in + (long long)y * W + x);
  if (boundary == 0) return 0.0f;
  y = y < 0 ? 0 : (y >= H ? H - 1 : y);
  x = x < 0 ? 0 : (x >= W ? W - 1 : x);
  return __ldg(in + (long long)y * W + x);
}

// VW floats from an aligned address (global through the read-only cache, or shared).
__device__ __forceinline__ void load_vec(float* dst, const float* __restrict__ src, bool global) {
#if VW == 4
  const float4 v = global ? __ldg(reinterpret_cast<const float4*>(src)) : *reinterpret_cast<const float4*>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
#elif VW == 2
  const float2 v = global ? __ldg(reinterpret_cast<const float2*>(src)) : *reinterpret_cast<const float2*>(src);
  dst[0] = v.x;
  dst[1] = v.y;
#else
  dst[0] = global ? __ldg(src) : *src;
#endif
}

template <bool FULL>
__device__ __forceinline__ void run(const float* __restrict__ in, float* __restrict__ out, int H, int W, int w, int r,
                                    int boundary, bool vec, float* tile) {
  const int rr = FULL ? RM : r;   // the radius, a constant on the full-width path
  const int ra = (rr + 3) & ~3;   // column halo rounded up to whole float4s
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * TX + tx * OUT_X;
  const int y0 = blockIdx.y * TY + ty * OUT_Y;

#if USE_SHARED
  // tile[sr * S + sc] = in[blockIdx.y * TY - rr + sr][blockIdx.x * TX - ra + sc]
  const int S = TX + 2 * ra + 4 * PAD;
  {
    const int rows = TY + 2 * rr, cpr = (TX + 2 * ra) / 4;  // rows, float4s per row
    const int gy0 = blockIdx.y * TY - rr, gx0 = blockIdx.x * TX - ra;
    const int t = ty * BLOCK_X + tx;
    const int step_r = (BLOCK_X * BLOCK_Y) / cpr, step_c = (BLOCK_X * BLOCK_Y) % cpr;
    int sr = t / cpr, sc = t % cpr;
    while (sr < rows) {
      const int gy = gy0 + sr, gx = gx0 + 4 * sc;
      float4 v;
      if (vec && gy >= 0 && gy < H && gx >= 0 && gx + 4 <= W)
        v = __ldg(reinterpret_cast<const float4*>(in + (long long)gy * W + gx));
      else
        v = make_float4(pixel(in, gy, gx, H, W, boundary), pixel(in, gy, gx + 1, H, W, boundary),
                        pixel(in, gy, gx + 2, H, W, boundary), pixel(in, gy, gx + 3, H, W, boundary));
      *reinterpret_cast<float4*>(tile + sr * S + 4 * sc) = v;
      sr += step_r;
      sc += step_c;
      if (sc >= cpr) {
        sc -= cpr;
        ++sr;
      }
    }
  }
  __syncthreads();
  if (x0 >= W || y0 >= H) return;
  // Window (ry, i) is tile[off + ry * S + i]; only rows and chunks that some tap reads are touched.
  const int off = (ty * OUT_Y + rr - RM) * S + tx * OUT_X + ra - RA;
#else
  if (x0 >= W || y0 >= H) return;
  const bool inside = vec && y0 - rr >= 0 && y0 + OUT_Y + rr <= H && x0 - ra >= 0 && x0 + OUT_X + ra <= W;
#endif

  float acc[OUT_Y][OUT_X];
#pragma unroll
  for (int oy = 0; oy < OUT_Y; ++oy)
#pragma unroll
    for (int ox = 0; ox < OUT_X; ++ox) acc[oy][ox] = 0.0f;

#pragma unroll
  for (int ry = 0; ry < WROWS; ++ry) {
    if (!(FULL || (ry >= RM - r && ry < RM + OUT_Y + r))) continue;  // no tap reads this row
    float win[WCOLS];
#if USE_SHARED
#pragma unroll
    for (int m = 0; m < WCOLS / VW; ++m)
      if (VW * m + VW > RA - rr && VW * m < RA + OUT_X + rr) load_vec(win + VW * m, tile + off + ry * S + VW * m, false);
#else
    const int gy = y0 - RM + ry;
    if (inside) {
      const float* row = in + (long long)gy * W + (x0 - RA);
#pragma unroll
      for (int m = 0; m < WCOLS / VW; ++m)
        if (VW * m + VW > RA - rr && VW * m < RA + OUT_X + rr) load_vec(win + VW * m, row + VW * m, true);
    } else {
#pragma unroll
      for (int m = 0; m < WCOLS / VW; ++m)
        if (VW * m + VW > RA - rr && VW * m < RA + OUT_X + rr)
#pragma unroll
          for (int q = 0; q < VW; ++q) win[VW * m + q] = pixel(in, gy, x0 - RA + VW * m + q, H, W, boundary);
    }
#endif
#pragma unroll
    for (int oy = 0; oy < OUT_Y; ++oy) {
      const int dy = ry - oy - RM;  // mask row offset from the centre, a constant
      if (dy < -RM || dy > RM || !(FULL || (dy >= -r && dy <= r))) continue;
#pragma unroll
      for (int dx = -RM; dx <= RM; ++dx) {
        if (!(FULL || (dx >= -r && dx <= r))) continue;
        const float m = FULL ? mask[(dy + RM) * MAX_MASK + dx + RM] : mask[(dy + r) * w + dx + r];
#pragma unroll
        for (int ox = 0; ox < OUT_X; ++ox) acc[oy][ox] = fmaf(m, win[RA + ox + dx], acc[oy][ox]);
      }
    }
  }

#pragma unroll
  for (int oy = 0; oy < OUT_Y; ++oy) {
    if (y0 + oy >= H) break;
    float* o = out + (long long)(y0 + oy) * W + x0;
    if (VW > 1 && vec && x0 + OUT_X <= W) {
#pragma unroll
      for (int ox = 0; ox < OUT_X; ox += VW) {
#if VW == 4
        *reinterpret_cast<float4*>(o + ox) = make_float4(acc[oy][ox], acc[oy][ox + 1], acc[oy][ox + 2], acc[oy][ox + 3]);
#elif VW == 2
        *reinterpret_cast<float2*>(o + ox) = make_float2(acc[oy][ox], acc[oy][ox + 1]);
#else
        o[ox] = acc[oy][ox];
#endif
      }
    } else {
#pragma unroll
      for (int ox = 0; ox < OUT_X; ++ox)
        if (x0 + ox < W) o[ox] = acc[oy][ox];
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, 1)
conv2d_tiled(const float* __restrict__ in, float* __restrict__ out, int H, int W, int mask_width, int boundary) {
  extern __shared__ float4 smem[];  // (BLOCK_Y*OUT_Y + 2r) x (BLOCK_X*OUT_X + 2*ceil4(r) + 4*PAD) floats
  const int r = mask_width / 2;
  if (r > RM) return;  // the family's constraint keeps mask_width <= MAX_MASK
  const bool vec =
      W % 4 == 0 && ((reinterpret_cast<unsigned long long>(in) | reinterpret_cast<unsigned long long>(out)) & 15) == 0;
  float* tile = reinterpret_cast<float*>(smem);
  if (r == RM) run<true>(in, out, H, W, mask_width, r, boundary, vec, tile);
#if !EXACT
  else run<false>(in, out, H, W, mask_width, r, boundary, vec, tile);
#endif
}
