// The setup kernel: the inverse slope dx/dy of each edge (vertex i-1 to vertex i), which pnpoly's crossing
// test multiplies instead of dividing. A horizontal edge is never crossed, so its slope is never read.
extern "C" __global__ void slopes(const float* vertices, float* slopes, int nv) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nv) return;
  const int j = i == 0 ? nv - 1 : i - 1;
  const float dy = vertices[2 * j + 1] - vertices[2 * i + 1];
  slopes[i] = dy == 0.f ? 0.f : (vertices[2 * j] - vertices[2 * i]) / dy;
}
