// The truth: one thread per point, the crossing test in double with the slopes the setup kernel derived.
extern "C" __global__ void pnpoly_reference(const float* points, const float* vertices, const float* slopes,
                                            int* inside, int n, int nv) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double px = points[2 * i], py = points[2 * i + 1];
  int c = 0;
  for (int e = 0, j = nv - 1; e < nv; j = e++) {
    const double vx = vertices[2 * e], vy = vertices[2 * e + 1], jy = vertices[2 * j + 1];
    if ((vy > py) != (jy > py) && px < (double)slopes[e] * (py - vy) + vx) c = !c;
  }
  inside[i] = c;
}
