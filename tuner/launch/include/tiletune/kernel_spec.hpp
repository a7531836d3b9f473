// The launch description of a configuration: from (family, problem, configuration as planned) to what a
// LoadedKernel needs (the symbol, the geometry, the arguments in order). The sweep sends it to the worker and
// the runtime binds it, so both launch the same thing.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "tiletune/family.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/worker_protocol.hpp"

namespace tiletune {

// A launch that cannot be described (a tensor map without values): one line.
class LaunchSpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One argument as the kernel receives it; a tensor map's values come from `launch` as prune_before_compile
// evaluated them (they may read the parameters and the device). Throws LaunchSpecError for a tensor map
// without values.
wire::ArgValue arg_value(const Argument& argument, const Vars& vars, const LaunchGeometry* launch);

// The configuration's kernel: launch.kernel_symbol (the lowered name apply_compile_result recorded, so that
// C++ kernels are found) or the family's kernel name before it is known, the geometry and cluster, every
// argument in order and the __constant__ symbols to fill. Throws LaunchSpecError.
wire::KernelSpec kernel_spec(const KernelFamily& family, const ProblemKey& problem, const Params& params,
                             const LaunchGeometry& launch, const std::string& cubin_path = "");

}  // namespace tiletune
