// TMA descriptors (CUtensorMap) encoded on the host, for the worker and the runtime: the driver's
// cuTensorMapEncodeTiled is reached through the CUDA runtime (cudaGetDriverEntryPointByVersion), so nothing
// links the driver library.
#pragma once

#include <string>

#include "tiletune/worker_protocol.hpp"

namespace tiletune {

// The 128 opaque bytes of a CUtensorMap, aligned as cuda.h aligns it (128; the driver needs 64).
struct alignas(128) EncodedTensorMap {
  unsigned char bytes[128];
};

// Encodes `spec` over the device pointer `global` (element strides 1, no interleave) into `out`. Returns ""
// on success, otherwise one line with the map's name, the CUresult or why the driver could not be reached,
// and the values it was given.
std::string encode_tensor_map(const wire::TensorMapSpec& spec, const void* global, EncodedTensorMap& out);

// The map's values in one line: "tma_A over A: bfloat16, dims 1024,512, strides 2048, box 64,128, ...".
std::string describe_tensor_map(const wire::TensorMapSpec& spec);

}  // namespace tiletune
