// The truth of y = A x: one thread per row, summed in double.
extern "C" __global__ void spmv_reference(const int* row_ptr, const int* col_idx, const float* values,
                                          const float* x, double* y, int rows) {
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  double sum = 0;
  for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += (double)values[j] * (double)x[col_idx[j]];
  y[row] = sum;
}
