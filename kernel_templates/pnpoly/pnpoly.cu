// Even-odd point-in-polygon: a point is inside when a ray to +x crosses an odd number of edges. PPT points
// per thread (strided by the grid's width so that loads stay coalesced); SLOPES multiplies by the precomputed
// inverse slope instead of dividing; SHARED stages the vertices and slopes in dynamic shared memory.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef PPT
#define PPT 1
#endif
#ifndef SLOPES
#define SLOPES 1
#endif
#ifndef SHARED
#define SHARED 0
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
    pnpoly(const float2* __restrict__ points, const float2* __restrict__ vertices,
           const float* __restrict__ slopes, int* __restrict__ inside, int n, int nv) {
#if SHARED
  extern __shared__ float stage[];
  float2* vs = reinterpret_cast<float2*>(stage);
  float* ss = stage + 2 * nv;
  for (int k = threadIdx.x; k < nv; k += BLOCK) {
    vs[k] = vertices[k];
    ss[k] = slopes[k];
  }
  __syncthreads();
#else
  const float2* vs = vertices;
  const float* ss = slopes;
#endif
  const int stride = gridDim.x * BLOCK;
  float2 p[PPT];
  int c[PPT];
#pragma unroll
  for (int k = 0; k < PPT; ++k) {
    const int i = blockIdx.x * BLOCK + threadIdx.x + k * stride;
    p[k] = i < n ? points[i] : make_float2(0.f, 0.f);
    c[k] = 0;
  }
  float2 prev = vs[nv - 1];
  for (int e = 0; e < nv; ++e) {
    const float2 v = vs[e];
#if SLOPES
    const float s = ss[e];
#else
    const float s = (prev.x - v.x) / (prev.y - v.y);
#endif
#pragma unroll
    for (int k = 0; k < PPT; ++k)
      if ((v.y > p[k].y) != (prev.y > p[k].y) && p[k].x < s * (p[k].y - v.y) + v.x) c[k] = !c[k];
    prev = v;
  }
#pragma unroll
  for (int k = 0; k < PPT; ++k) {
    const int i = blockIdx.x * BLOCK + threadIdx.x + k * stride;
    if (i < n) inside[i] = c[k];
  }
}
