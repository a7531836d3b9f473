// cuBLAS for the worker's library baselines, opened on first use (dlopen, not linked) so that only a worker
// that runs a cuBLAS baseline loads it.
#pragma once

#include <cublas_v2.h>

#include <string>

#include "cuda_failure.hpp"
#include "tiletune/dynamic_library.hpp"

namespace tiletune {

class Cublas {
 public:
  // Opens cuBLAS and makes a handle on `stream`; throws CudaFailure when it cannot.
  explicit Cublas(cudaStream_t stream);
  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  // Row-major C (MxN) = A (MxK) B (KxN) is column-major C^T = B^T A^T.
  void sgemm(bool tf32, const float* A, const float* B, float* C, int M, int N, int K) const {
    const float alpha = 1.0f, beta = 0.0f;
    check(set_math_(handle_, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(sgemm_(handle_, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N), "cublasSgemm");
  }
  // Row-major C = A op(B): op(B) = B (K x N), or B^T for B given as N x K (b_transposed), which is
  // column-major C^T = op(B)^T A^T with B's rows read as columns of length K.
  void gemm_ex(const void* A, const void* B, void* C, cudaDataType ab, cudaDataType c, int M, int N, int K,
               bool b_transposed, cublasComputeType_t compute) const {
    const float alpha = 1.0f, beta = 0.0f;
    check(set_math_(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(gemm_ex_(handle_, b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, ab,
                   b_transposed ? K : N, A, ab, K, &beta, C, c, N, compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }

 private:
  template <typename F>
  F symbol(const char* name) {
    F f = nullptr;
    if (!lib_.get(f, name)) throw CudaFailure{cudaErrorInvalidValue, std::string("cuBLAS lacks ") + name};
    return f;
  }
  static void check(cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS)
      throw CudaFailure{cudaErrorUnknown, std::string(call) + " failed with status " + std::to_string(s)};
  }
  using Create = cublasStatus_t (*)(cublasHandle_t*);
  using Destroy = cublasStatus_t (*)(cublasHandle_t);
  using SetStream = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
  using SetMath = cublasStatus_t (*)(cublasHandle_t, cublasMath_t);
  using Sgemm = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                   const float*, const float*, int, const float*, int, const float*, float*,
                                   int);
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                    int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                    cublasGemmAlgo_t);
  DynamicLibrary lib_;
  cublasHandle_t handle_ = nullptr;
  Create create_ = nullptr;
  Destroy destroy_ = nullptr;
  SetStream set_stream_ = nullptr;
  SetMath set_math_ = nullptr;
  Sgemm sgemm_ = nullptr;
  GemmEx gemm_ex_ = nullptr;
};

}  // namespace tiletune
