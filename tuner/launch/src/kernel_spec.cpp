#include "tiletune/kernel_spec.hpp"

#include <algorithm>

namespace tiletune {

namespace {

wire::TensorMapDataType tensor_map_type(const TensorMapValues& m) {
  using T = wire::TensorMapDataType;
  if (m.tf32) return T::tfloat32;
  switch (m.element) {
    case ElementType::f32:
      return T::float32;
    case ElementType::f64:
      return T::float64;
    case ElementType::f16:
      return T::float16;
    case ElementType::bf16:
      return T::bfloat16;
    case ElementType::i8:
    case ElementType::u8:
      return T::uint8;
    case ElementType::i32:
      return T::int32;
    case ElementType::u32:
      return T::uint32;
    case ElementType::i64:
      return T::int64;
  }
  return T::uint8;
}

wire::TensorMapSpec tensor_map_spec(const Argument& a, const LaunchGeometry* launch) {
  const auto found = launch ? std::find_if(launch->tensor_maps.begin(), launch->tensor_maps.end(),
                                           [&](const TensorMapValues& m) { return m.name == a.name; })
                            : std::vector<TensorMapValues>::const_iterator{};
  if (!launch || found == launch->tensor_maps.end())
    throw LaunchSpecError("tensor map " + a.name + " has no values for this launch");
  wire::TensorMapSpec t;
  t.name = found->name;
  t.buffer = found->buffer;
  t.type = tensor_map_type(*found);
  t.rank = static_cast<std::uint32_t>(found->dims.size());
  t.dims = found->dims;
  t.strides = found->strides;
  t.box = found->box;
  t.swizzle = static_cast<std::uint32_t>(found->swizzle);
  t.l2_promotion = static_cast<std::uint32_t>(found->l2_promotion);
  t.oob_nan = found->oob_nan;
  return t;
}

}  // namespace

wire::ArgValue arg_value(const Argument& a, const Vars& vars, const LaunchGeometry* launch) {
  wire::ArgValue v;
  if (a.kind == ArgKind::buffer) {
    v.buffer = a.name;
  } else if (a.kind == ArgKind::tensor_map) {
    v.tensor_map = tensor_map_spec(a, launch);
  } else {
    v.scalar = a.type;
    if (a.real)
      v.real = *a.real;
    else {
      v.integer = a.value.eval(vars);
      v.real = static_cast<double>(v.integer);
    }
  }
  return v;
}

wire::KernelSpec kernel_spec(const KernelFamily& family, const ProblemKey& problem, const Params& params,
                             const LaunchGeometry& launch, const std::string& cubin_path) {
  wire::KernelSpec k;
  k.cubin_path = cubin_path;
  k.kernel = launch.kernel_symbol.empty() ? family.kernel : launch.kernel_symbol;
  k.grid = {launch.grid[0], launch.grid[1], launch.grid[2]};
  k.block = {launch.block[0], launch.block[1], launch.block[2]};
  k.cluster = {launch.cluster[0], launch.cluster[1], launch.cluster[2]};
  k.dynamic_smem = launch.dynamic_smem;
  const Vars vars = family.vars(problem, params);
  for (const auto& a : family.arguments) k.args.push_back(arg_value(a, vars, &launch));
  for (const auto& c : family.constants) k.constants.push_back(c.name);
  return k;
}

}  // namespace tiletune
