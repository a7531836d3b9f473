// Kernels the measuring worker itself needs, for every element type: seeded fills, type conversion, and the
// per-element comparison of an output with its truth. Compiled with NVRTC for the device at worker start.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

typedef unsigned long long u64;

__device__ __forceinline__ u64 tt_hash(u64 x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

__device__ __forceinline__ double tt_to_double(float v) { return v; }
__device__ __forceinline__ double tt_to_double(double v) { return v; }
__device__ __forceinline__ double tt_to_double(__half v) { return __half2float(v); }
__device__ __forceinline__ double tt_to_double(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ double tt_to_double(signed char v) { return v; }
__device__ __forceinline__ double tt_to_double(unsigned char v) { return v; }
__device__ __forceinline__ double tt_to_double(int v) { return v; }
__device__ __forceinline__ double tt_to_double(unsigned int v) { return v; }
__device__ __forceinline__ double tt_to_double(long long v) { return (double)v; }

template <typename T>
__device__ __forceinline__ T tt_from_double(double v) {
  return (T)v;
}
template <>
__device__ __forceinline__ __half tt_from_double<__half>(double v) {
  return __double2half(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 tt_from_double<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}

template <typename T>
__device__ __forceinline__ bool tt_is_integer() {
  return false;
}
#define TT_INTEGER(T) \
  template <>         \
  __device__ __forceinline__ bool tt_is_integer<T>() { return true; }
TT_INTEGER(signed char)
TT_INTEGER(unsigned char)
TT_INTEGER(int)
TT_INTEGER(unsigned int)
TT_INTEGER(long long)

// kind 0: uniform reals in [lo, hi); 1: uniform integers in [lo, hi]; 2: the constant lo.
template <typename T>
__device__ void tt_fill(T* p, u64 n, u64 seed, int kind, double lo, double hi) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const u64 h = tt_hash(seed * 0x9E3779B97F4A7C15ULL + i);
    if (kind == 0) {
      p[i] = tt_from_double<T>(lo + (hi - lo) * ((double)(h >> 11) * (1.0 / 9007199254740992.0)));
    } else if (kind == 1) {
      const u64 width = (u64)(long long)(hi - lo) + 1;
      p[i] = (T)((long long)lo + (long long)(width ? h % width : h));
    } else {
      p[i] = tt_from_double<T>(lo);
    }
  }
}

template <typename T, typename R>
__device__ void tt_convert(const T* src, R* dst, u64 n) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    dst[i] = tt_from_double<R>(tt_to_double(src[i]));
}

// How far out of tolerance element i is: 0 within it, above 1 outside; the comparison is exact for integers.
template <typename T, typename R>
__device__ __forceinline__ double tt_excess(const T* out, const R* ref, u64 i, double rtol, double atol, double floor,
                                            double* d2, double* r2) {
  const double o = tt_to_double(out[i]), r = tt_to_double(ref[i]);
  if (tt_is_integer<T>()) {
    const double d = fabs(o - r);
    *d2 += d * d;
    *r2 += r * r;
    return (double)out[i] == (double)ref[i] && out[i] == (T)ref[i] ? 0.0 : fmax(d, 1.0) + 1.0;
  }
  if (!isfinite(r)) return (o == r || (isnan(o) && isnan(r))) ? 0.0 : __longlong_as_double(0x7ff0000000000000LL);
  if (!isfinite(o)) return __longlong_as_double(0x7ff0000000000000LL);
  const double d = fabs(o - r);
  *d2 += d * d;
  *r2 += r * r;
  const double limit = atol + rtol * fmax(fabs(r), floor);
  if (d <= limit) return 0.0;
  return limit > 0 ? d / limit : __longlong_as_double(0x7ff0000000000000LL);
}

// stats[0] += sum (out - ref)^2, stats[1] += sum ref^2; counts[0]: elements out of tolerance;
// worst[0]: the largest excess (as bits: non-negative doubles order like their bits).
template <typename T, typename R>
__device__ void tt_compare(const T* out, const R* ref, u64 n, double rtol, double atol, double floor, double* stats,
                           u64* counts, u64* worst) {
  double d2 = 0, r2 = 0, w = 0;
  u64 bad = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const double e = tt_excess(out, ref, i, rtol, atol, floor, &d2, &r2);
    if (e > 0) {
      ++bad;
      w = fmax(w, e);
    }
  }
  atomicAdd(&stats[0], d2);
  atomicAdd(&stats[1], r2);
  if (bad) {
    atomicAdd(&counts[0], bad);
    atomicMax(worst, (u64)__double_as_longlong(w));
  }
}

// The first element whose excess is the worst one; its value and its truth.
template <typename T, typename R>
__device__ void tt_locate(const T* out, const R* ref, u64 n, double rtol, double atol, double floor, const u64* worst,
                          u64* index) {
  double d2 = 0, r2 = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    if ((u64)__double_as_longlong(tt_excess(out, ref, i, rtol, atol, floor, &d2, &r2)) == *worst) atomicMin(index, i);
}
template <typename T, typename R>
__device__ void tt_pick(const T* out, const R* ref, const u64* index, double* values) {
  values[0] = tt_to_double(out[*index]);
  values[1] = tt_to_double(ref[*index]);
}

// stats[0] += sum ref^2 over the finite elements, stats[1] += their count.
template <typename R>
__device__ void tt_sumsq(const R* ref, u64 n, double* stats) {
  double s = 0, c = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const double r = tt_to_double(ref[i]);
    if (isfinite(r)) s += r * r, c += 1;
  }
  atomicAdd(&stats[0], s);
  atomicAdd(&stats[1], c);
}

#define TT_PER_TYPE(NAME, T)                                                                                   \
  extern "C" __global__ void tt_fill_##NAME(T* p, u64 n, u64 seed, int kind, double lo, double hi) {           \
    tt_fill(p, n, seed, kind, lo, hi);                                                                         \
  }                                                                                                            \
  extern "C" __global__ void tt_sumsq_##NAME(const T* ref, u64 n, double* stats) { tt_sumsq(ref, n, stats); } \
  TT_PAIR(NAME, T, NAME, T)                                                                                    \
  TT_PAIR(NAME, T, double, double)

#define TT_PAIR(NAME, T, RNAME, R)                                                                             \
  extern "C" __global__ void tt_convert_##NAME##_##RNAME(const T* src, R* dst, u64 n) { tt_convert(src, dst, n); } \
  extern "C" __global__ void tt_compare_##NAME##_##RNAME(const T* out, const R* ref, u64 n, double rtol,       \
                                                         double atol, double floor, double* stats, u64* counts,  \
                                                         u64* worst) {                                          \
    tt_compare(out, ref, n, rtol, atol, floor, stats, counts, worst);                                          \
  }                                                                                                            \
  extern "C" __global__ void tt_locate_##NAME##_##RNAME(const T* out, const R* ref, u64 n, double rtol,        \
                                                        double atol, double floor, const u64* worst, u64* index) { \
    tt_locate(out, ref, n, rtol, atol, floor, worst, index);                                                   \
  }                                                                                                            \
  extern "C" __global__ void tt_pick_##NAME##_##RNAME(const T* out, const R* ref, const u64* index, double* v) { \
    tt_pick(out, ref, index, v);                                                                               \
  }

TT_PER_TYPE(float, float)
TT_PER_TYPE(half, __half)
TT_PER_TYPE(bfloat16, __nv_bfloat16)
TT_PER_TYPE(int8, signed char)
TT_PER_TYPE(uint8, unsigned char)
TT_PER_TYPE(int32, int)
TT_PER_TYPE(uint32, unsigned int)
TT_PER_TYPE(int64, long long)
extern "C" __global__ void tt_fill_double(double* p, u64 n, u64 seed, int kind, double lo, double hi) {
  tt_fill(p, n, seed, kind, lo, hi);
}
extern "C" __global__ void tt_sumsq_double(const double* ref, u64 n, double* stats) { tt_sumsq(ref, n, stats); }
TT_PAIR(double, double, double, double)
