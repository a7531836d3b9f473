// Reference for histogram_u8: bins[data[i]] += 1 for every i, with global atomics over a grid-stride loop.
// bins arrives pre-filled with the original counts, so the reference only adds.
extern "C" __global__ void histogram_reference(const unsigned char* data, unsigned int* bins, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    atomicAdd(&bins[data[i]], 1u);
  }
}
