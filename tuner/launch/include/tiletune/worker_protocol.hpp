// What the sweep (parent) and the measuring worker say to each other: one typed struct per request and reply,
// shared by both sides and sent as one JSON object per line. The worker learns buffers, types, fills and
// kernels from these; it knows no family.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tiletune/element_type.hpp"
#include "tiletune/family.hpp"

namespace tiletune {

NLOHMANN_JSON_SERIALIZE_ENUM(ElementType, {{ElementType::f32, "float"},
                                           {ElementType::f64, "double"},
                                           {ElementType::f16, "half"},
                                           {ElementType::bf16, "bfloat16"},
                                           {ElementType::i8, "int8"},
                                           {ElementType::u8, "uint8"},
                                           {ElementType::i32, "int32"},
                                           {ElementType::u32, "uint32"},
                                           {ElementType::i64, "int64"}})
NLOHMANN_JSON_SERIALIZE_ENUM(BufferRole, {{BufferRole::input, "input"},
                                          {BufferRole::output, "output"},
                                          {BufferRole::inout, "inout"}})

namespace wire {

enum class FillKind { uniform, range, constant, file };
NLOHMANN_JSON_SERIALIZE_ENUM(FillKind, {{FillKind::uniform, "uniform"},
                                        {FillKind::range, "range"},
                                        {FillKind::constant, "constant"},
                                        {FillKind::file, "file"}})

struct FillSpec {
  FillKind kind = FillKind::uniform;
  double lo = -1, hi = 1;
  std::string path;    // file: absolute
  std::string format;  // file: "npy" or "raw"
  std::string hash;    // file: its content hash when the sweep began, so a changed file is a new setup
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FillSpec, kind, lo, hi, path, format, hash)

struct BufferSpec {
  std::string name;
  ElementType type = ElementType::f32;
  std::uint64_t count = 0;
  BufferRole role = BufferRole::input;
  FillSpec fill;
  std::vector<std::int64_t> dims;  // row-major shape, for naming an element's coordinates; may be empty
  // Outputs: the truth's type and the per-element tolerance.
  ElementType truth = ElementType::f64;
  double rtol = 0, atol = 0;
  double scale_floor = -1;          // < 0: the root mean square of the truth
  std::uint64_t max_differing = 0;  // elements that may be out of tolerance (integer outputs)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BufferSpec, name, type, count, role, fill, dims, truth, rtol,
                                                atol, scale_floor, max_differing)

struct ConstantSpec {
  std::string name;
  ElementType type = ElementType::f32;
  std::uint64_t count = 0;
  FillSpec fill;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ConstantSpec, name, type, count, fill)

// A tensor map's element type as cuTensorMapEncodeTiled takes it (int8 buffers travel as uint8: TMA copies
// bytes, and only floating types are ever converted or filled with NaN).
enum class TensorMapDataType {
  uint8,
  uint16,
  uint32,
  int32,
  uint64,
  int64,
  float16,
  float32,
  float64,
  bfloat16,
  tfloat32
};
NLOHMANN_JSON_SERIALIZE_ENUM(TensorMapDataType, {{TensorMapDataType::uint8, "uint8"},
                                                 {TensorMapDataType::uint16, "uint16"},
                                                 {TensorMapDataType::uint32, "uint32"},
                                                 {TensorMapDataType::int32, "int32"},
                                                 {TensorMapDataType::uint64, "uint64"},
                                                 {TensorMapDataType::int64, "int64"},
                                                 {TensorMapDataType::float16, "float16"},
                                                 {TensorMapDataType::float32, "float32"},
                                                 {TensorMapDataType::float64, "float64"},
                                                 {TensorMapDataType::bfloat16, "bfloat16"},
                                                 {TensorMapDataType::tfloat32, "tfloat32"}})

// A TMA descriptor to encode over a buffer's device pointer (element strides 1, no interleave).
struct TensorMapSpec {
  std::string name;    // the argument, for messages
  std::string buffer;  // the buffer whose pointer it describes
  TensorMapDataType type = TensorMapDataType::float32;
  std::uint32_t rank = 0;              // 0: the argument is not a tensor map
  std::vector<std::uint64_t> dims;     // elements, innermost first
  std::vector<std::uint64_t> strides;  // bytes, rank - 1 of them
  std::vector<std::uint32_t> box;      // elements
  std::uint32_t swizzle = 0;           // bytes: 0, 32, 64, 128
  std::uint32_t l2_promotion = 128;    // bytes: 0, 64, 128, 256
  bool oob_nan = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TensorMapSpec, name, buffer, type, rank, dims, strides, box,
                                                swizzle, l2_promotion, oob_nan)

// One kernel argument: a buffer by name (its data, or for the reference an output's truth), a scalar, or a
// tensor map over a buffer.
struct ArgValue {
  std::string buffer;  // non-empty: a buffer
  ElementType scalar = ElementType::i32;
  std::int64_t integer = 0;
  double real = 0;
  TensorMapSpec tensor_map;  // rank > 0: a tensor map

  bool is_tensor_map() const { return tensor_map.rank > 0; }
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ArgValue, buffer, scalar, integer, real, tensor_map)

// A scalar argument as the kernel receives it, in the low bytes of an 8-byte slot: f32 and f64 from `real`,
// i64 from `integer`, any other type as a 32-bit int.
inline std::uint64_t scalar_bits(const ArgValue& a) {
  std::uint64_t bits = 0;
  if (a.scalar == ElementType::f32) {
    const float v = static_cast<float>(a.real);
    std::memcpy(&bits, &v, sizeof v);
  } else if (a.scalar == ElementType::f64) {
    std::memcpy(&bits, &a.real, sizeof a.real);
  } else if (a.scalar == ElementType::i64) {
    std::memcpy(&bits, &a.integer, sizeof a.integer);
  } else {
    const int v = static_cast<int>(a.integer);
    std::memcpy(&bits, &v, sizeof v);
  }
  return bits;
}

struct KernelSpec {
  std::string cubin_path;
  std::string kernel;
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::array<std::int64_t, 3> cluster{1, 1, 1};  // more than one block: launched as thread block clusters
  std::int64_t dynamic_smem = 0;
  std::vector<ArgValue> args;
  std::vector<std::string> constants;  // __constant__ symbols to fill in this module
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelSpec, cubin_path, kernel, grid, block, cluster,
                                                dynamic_smem, args, constants)

struct Repetitions {
  int min_reps = 5;
  int max_reps = 50;
  double budget_ms = 300;
  double target_spread = 0.02;
  double sustained_ms = 0;  // after the timed runs, back-to-back runs for this long (0: none)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Repetitions, min_reps, max_reps, budget_ms, target_spread,
                                                sustained_ms)

// Allocate and fill the problem's buffers and constants, run the setup kernels in order, then the reference
// once: its outputs are the truth.
struct SetupRequest {
  std::uint64_t seed = 1;
  std::vector<BufferSpec> buffers;
  std::vector<ConstantSpec> constants;
  std::vector<KernelSpec> setup_kernels;
  KernelSpec reference;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SetupRequest, seed, buffers, constants, setup_kernels,
                                                reference)

struct MeasureRequest {
  KernelSpec kernel;
  Repetitions reps;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MeasureRequest, kernel, reps)

// Time a library call on the problem's buffers (operand -> buffer name) and scalars (operand -> value).
struct BaselineRequest {
  std::string library;
  std::map<std::string, std::string> buffers;
  std::map<std::string, std::int64_t> scalars;
  Repetitions reps;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BaselineRequest, library, buffers, scalars, reps)

// Every reply. ok == false: the request itself failed (error says why); fatal: the context is gone.
struct Reply {
  bool ok = true;
  std::string error;
  bool fatal = false;
  // setup
  double setup_ms = 0;
  std::string summary;
  // measure and baseline
  std::string outcome;  // Outcome's text
  std::string reason;
  double median_ms = 0, min_ms = 0, p25_ms = 0, p75_ms = 0, spread = 0;
  int reps = 0;
  std::vector<double> times_ms;  // every timed run, in order
  double error_l2 = 0;           // the largest relative L2 error of an output against its truth
  double sm_clock_mhz = 0;
  double bytes = 0;  // d2d_copy: bytes read plus written
  // Repetitions::sustained_ms: the time per run and the mean SM clock over the second half of the
  // back-to-back runs, and how many runs that half held (0: none made).
  double sustained_run_ms = 0, sustained_clock_mhz = 0;
  int sustained_runs = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Reply, ok, error, fatal, setup_ms, summary, outcome, reason,
                                                median_ms, min_ms, p25_ms, p75_ms, spread, reps, times_ms,
                                                error_l2, sm_clock_mhz, bytes, sustained_run_ms,
                                                sustained_clock_mhz, sustained_runs)

// A request on the wire: {"op": OP, ...the struct's fields}.
template <typename T>
nlohmann::json message(const char* op, const T& body) {
  nlohmann::json j = body;
  j["op"] = op;
  return j;
}

}  // namespace wire
}  // namespace tiletune
