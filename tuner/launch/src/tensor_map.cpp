#include "tiletune/tensor_map.hpp"

// The driver's types only: the function is looked up at run time, never linked.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <sstream>

namespace tiletune {

namespace {

static_assert(sizeof(CUtensorMap) == sizeof(EncodedTensorMap) &&
                  alignof(CUtensorMap) == alignof(EncodedTensorMap),
              "EncodedTensorMap must have CUtensorMap's size and alignment");

using EncodeTiled = PFN_cuTensorMapEncodeTiled_v12000;

// cuTensorMapEncodeTiled from the driver that the CUDA runtime loaded, looked up once per process; nullptr
// with *why set where there is none.
EncodeTiled encode_function(std::string* why) {
  static std::string error;
  static const EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &status);
    if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || !p) {
      cudaGetLastError();
      error = std::string("the driver has no cuTensorMapEncodeTiled (") +
              (e != cudaSuccess ? std::string(cudaGetErrorName(e))
                                : "query result " + std::to_string(static_cast<int>(status))) +
              ")";
      return EncodeTiled{nullptr};
    }
    return reinterpret_cast<EncodeTiled>(p);
  }();
  if (!fn) *why = error;
  return fn;
}

CUtensorMapDataType data_type(wire::TensorMapDataType t) {
  using T = wire::TensorMapDataType;
  switch (t) {
    case T::uint8:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case T::uint16:
      return CU_TENSOR_MAP_DATA_TYPE_UINT16;
    case T::uint32:
      return CU_TENSOR_MAP_DATA_TYPE_UINT32;
    case T::int32:
      return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case T::uint64:
      return CU_TENSOR_MAP_DATA_TYPE_UINT64;
    case T::int64:
      return CU_TENSOR_MAP_DATA_TYPE_INT64;
    case T::float16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case T::float32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case T::float64:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case T::bfloat16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case T::tfloat32:
      return CU_TENSOR_MAP_DATA_TYPE_TFLOAT32;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

template <typename T>
std::string list(const std::vector<T>& values) {
  std::string out;
  for (const auto& v : values) out.append(out.empty() ? "" : ",").append(std::to_string(v));
  return out.empty() ? "-" : out;
}

}  // namespace

std::string describe_tensor_map(const wire::TensorMapSpec& spec) {
  std::ostringstream out;
  out << spec.name << " over " << spec.buffer << ": " << nlohmann::json(spec.type).get<std::string>()
      << ", dims " << list(spec.dims) << ", strides " << list(spec.strides) << ", box " << list(spec.box)
      << ", swizzle " << spec.swizzle << ", l2_promotion " << spec.l2_promotion << ", oob_fill "
      << (spec.oob_nan ? "nan" : "zero");
  return out.str();
}

std::string encode_tensor_map(const wire::TensorMapSpec& spec, const void* global, EncodedTensorMap& out) {
  const auto failed = [&](const std::string& why) {
    std::ostringstream address;
    address << global;  // TMA needs it 16-byte aligned
    return "tensor map " + describe_tensor_map(spec) + ", address " + address.str() + ": " + why;
  };
  if (spec.rank < 1 || spec.rank > 5 || spec.dims.size() != spec.rank || spec.box.size() != spec.rank ||
      spec.strides.size() + 1 != spec.rank)
    return failed("rank, dims, strides and box do not agree");
  std::string why;
  const EncodeTiled encode = encode_function(&why);
  if (!encode) return failed(why);
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  const CUtensorMapSwizzle swizzle = spec.swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : spec.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                     : spec.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                          : CU_TENSOR_MAP_SWIZZLE_NONE;
  const CUtensorMapL2promotion l2 = spec.l2_promotion == 256   ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                                    : spec.l2_promotion == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                    : spec.l2_promotion == 64  ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                                               : CU_TENSOR_MAP_L2_PROMOTION_NONE;
  const CUresult r = encode(
      reinterpret_cast<CUtensorMap*>(&out), data_type(spec.type), spec.rank, const_cast<void*>(global),
      spec.dims.data(), spec.strides.data(), spec.box.data(), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      swizzle, l2,
      spec.oob_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return failed("cuTensorMapEncodeTiled returned CUresult " + std::to_string(static_cast<int>(r)));
  return "";
}

}  // namespace tiletune
