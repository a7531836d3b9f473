// Planning: enumerate a family's configurations for one problem, prune what cannot run on the device,
// compile the rest and compute their occupancy. Everything here runs without a GPU.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/compiler.hpp"
#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/occupancy.hpp"
#include "tiletune/store.hpp"

namespace tiletune {

struct LaunchGeometry {
  std::array<long long, 3> block{1, 1, 1};
  std::array<long long, 3> grid{1, 1, 1};
  long long dynamic_smem = 0;
  long long static_smem_estimate = 0;
  long long threads() const { return block[0] * block[1] * block[2]; }
};

struct PlannedConfig {
  Params params;
  LaunchGeometry launch;
  Outcome outcome = Outcome::ok;  // ok: runnable so far; pruned or compile_failed otherwise
  std::string reason;
  bool compiled = false;
  bool from_cache = false;
  ResourceUsage usage;
  Occupancy occupancy;
  std::string cache_key;  // where the CUBIN is in the compile cache
};

struct Plan {
  std::vector<PlannedConfig> configs;
  CompileStats compile_stats;
  std::size_t count(Outcome outcome) const;
};

// The most configurations a plan or a sweep enumerates; a larger space is refused before it is built.
inline constexpr std::uint64_t kMaxSpaceSize = 1'000'000;
// The number of configurations in the family's space; nullopt when it does not fit in 64 bits.
std::optional<std::uint64_t> space_size(const KernelFamily& family);
// Every configuration in the family's space (the cartesian product of the parameter values), in order.
// Throws FamilyError, one line with the space's size, when it has more than kMaxSpaceSize.
std::vector<Params> enumerate_space(const KernelFamily& family);

// Evaluates launch geometry and applies the constraints and the device limits that are known before
// compiling.
PlannedConfig prune_before_compile(const KernelFamily& family, const DeviceLimits& device,
                                   const ProblemKey& problem, const Params& params);

CompileJob compile_job(const KernelFamily& family, const DeviceLimits& device, const Params& params);

// Records what compiling gave and applies the limits known only after compiling (registers, shared memory as
// compiled, occupancy).
void apply_compile_result(PlannedConfig& config, const CompileResult& result, const DeviceLimits& device);

struct PlanOptions {
  bool compile = true;
  int jobs = 1;
  ParallelMode mode = ParallelMode::processes;
  // When set, only these configurations (a strategy's choice) are planned.
  std::optional<std::vector<Params>> subset;
};

Plan make_plan(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
               const CompileCache& cache, const PlanOptions& options);

// What a stored plan or sweep of this family on this device records about itself.
SweepSpec sweep_spec(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
                     const std::string& kind, const std::string& strategy);

// The stored form of a planned configuration (no timing yet).
ResultRecord to_record(const PlannedConfig& config);

}  // namespace tiletune
