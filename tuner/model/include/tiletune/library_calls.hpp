// The library calls that bench can time beside a family (cuBLAS, the device-to-device copy), one entry each
// (library_calls.cpp): the name, the operands a family maps its own buffers and problem expressions onto, and
// the binding, which routine the measuring worker runs and with what settings. A call that a routine already
// serves is one entry; a new routine is a LibraryRoutine and its binder in the worker.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tiletune {

enum class LibraryRoutine {
  cublas_sgemm,    // cublasSgemm on float buffers, row-major C = A B
  cublas_gemm_ex,  // cublasGemmEx on float, half or bfloat16 buffers, FP32 compute
  device_copy,     // cudaMemcpyAsync of src's bytes (to dst, or a scratch buffer of the worker's)
};

struct LibraryBinding {
  LibraryRoutine routine = LibraryRoutine::device_copy;
  bool tf32 = false;          // TF32 tensor-core math
  bool b_transposed = false;  // C = A B^T with B given as N x K
};

struct LibraryCallInfo {
  std::string name;
  std::vector<std::string> buffers;           // operands that must name a buffer
  std::vector<std::string> optional_buffers;  // operands that may name a buffer
  std::vector<std::string> scalars;           // operands given as expressions of problem variables
  std::string output;                         // the operand it writes and that is checked, or empty
  std::string what;
  LibraryBinding binding;
};

const std::vector<LibraryCallInfo>& library_calls();
const LibraryCallInfo* find_library_call(std::string_view name);
std::string library_call_list();

}  // namespace tiletune
