#include "cublas.hpp"

namespace tiletune {

Cublas::Cublas(cudaStream_t stream)
    : lib_({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, /*close=*/true) {
  if (!lib_.ok()) throw CudaFailure{cudaErrorInvalidValue, "cannot open cuBLAS: " + lib_.error()};
  create_ = symbol<Create>("cublasCreate_v2");
  destroy_ = symbol<Destroy>("cublasDestroy_v2");
  set_stream_ = symbol<SetStream>("cublasSetStream_v2");
  set_math_ = symbol<SetMath>("cublasSetMathMode");
  sgemm_ = symbol<Sgemm>("cublasSgemm_v2");
  gemm_ex_ = symbol<GemmEx>("cublasGemmEx");
  check(create_(&handle_), "cublasCreate");
  check(set_stream_(handle_, stream), "cublasSetStream");
}

Cublas::~Cublas() {
  if (handle_) destroy_(handle_);
}

}  // namespace tiletune
