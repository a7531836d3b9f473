#include "tiletune/library_calls.hpp"

namespace tiletune {

const std::vector<LibraryCallInfo>& library_calls() {
  static const std::vector<LibraryCallInfo> calls = {
      {"cublas_sgemm",
       {"A", "B", "C"},
       {},
       {"M", "N", "K"},
       "C",
       "cuBLAS SGEMM, row-major C = A B",
       {LibraryRoutine::cublas_sgemm}},
      {"cublas_tf32",
       {"A", "B", "C"},
       {},
       {"M", "N", "K"},
       "C",
       "cuBLAS SGEMM with TF32 tensor-core math",
       {LibraryRoutine::cublas_sgemm, true}},
      {"cublas_gemm",
       {"A", "B", "C"},
       {},
       {"M", "N", "K"},
       "C",
       "cuBLAS GemmEx, float, half or bfloat16 operands, FP32 compute",
       {LibraryRoutine::cublas_gemm_ex}},
      {"cublas_gemm_abt",
       {"A", "B", "C"},
       {},
       {"M", "N", "K"},
       "C",
       "cuBLAS GemmEx, row-major C = A B^T with B given as N x K, float, half or bfloat16 operands, FP32 "
       "compute",
       {LibraryRoutine::cublas_gemm_ex, false, true}},
      {"cublas_gemm_abt_tf32",
       {"A", "B", "C"},
       {},
       {"M", "N", "K"},
       "C",
       "cuBLAS GemmEx, row-major C = A B^T with B given as N x K, float operands, TF32 tensor-core compute "
       "(CUBLAS_COMPUTE_32F_FAST_TF32)",
       {LibraryRoutine::cublas_gemm_ex, true, true}},
      {"d2d_copy",
       {"src"},
       {"dst"},
       {},
       "",
       "device-to-device copy of src's bytes",
       {LibraryRoutine::device_copy}},
  };
  return calls;
}

const LibraryCallInfo* find_library_call(std::string_view name) {
  for (const auto& c : library_calls())
    if (c.name == name) return &c;
  return nullptr;
}

std::string library_call_list() {
  std::string out;
  for (const auto& c : library_calls()) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

}  // namespace tiletune
