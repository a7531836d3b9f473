// Planning: enumerate a family's configurations for one problem, prune what cannot run on the device,
// compile the rest and compute their occupancy. Everything here runs without a GPU.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tiletune/compiler.hpp"
#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/occupancy.hpp"
#include "tiletune/results.hpp"
#include "tiletune/shard.hpp"

namespace tiletune {

// A tensor map argument's values for one configuration and problem, evaluated and checked against TMA's rules
// before compiling.
struct TensorMapValues {
  std::string name;    // the argument
  std::string buffer;  // the buffer it describes
  ElementType element = ElementType::f32;
  bool tf32 = false;
  std::vector<std::uint64_t> dims;     // elements, innermost first
  std::vector<std::uint64_t> strides;  // bytes, of dims[1..]
  std::vector<std::uint32_t> box;      // elements
  int swizzle = 0;                     // bytes
  int l2_promotion = 128;              // bytes
  bool oob_nan = false;
};

struct LaunchGeometry {
  std::array<long long, 3> block{1, 1, 1};
  std::array<long long, 3> grid{1, 1, 1};
  std::array<long long, 3> cluster{1, 1, 1};  // thread block cluster; 1 x 1 x 1: none
  long long dynamic_smem = 0;
  long long static_smem_estimate = 0;
  // The kernel's symbol in its CUBIN (the lowered name of a C++ kernel), known once compiled; empty: the
  // family's kernel name. It travels with the launch because the launch is what reaches the measure request.
  std::string kernel_symbol;
  std::vector<TensorMapValues> tensor_maps;  // in argument order
  long long threads() const { return block[0] * block[1] * block[2]; }
  long long blocks() const { return grid[0] * grid[1] * grid[2]; }
  long long cluster_size() const { return cluster[0] * cluster[1] * cluster[2]; }
};

struct PlannedConfig {
  Params params;
  LaunchGeometry launch;
  Outcome outcome = Outcome::ok;  // ok: runnable so far; pruned or compile_failed otherwise
  std::string reason;
  bool compiled = false;
  bool from_cache = false;
  ResourceUsage usage;
  double compile_ms = 0;  // NVRTC's time for its CUBIN (a cache hit keeps the original compile's)
  Occupancy occupancy;
  std::string cache_key;  // where the CUBIN is in the compile cache
};

struct Plan {
  std::vector<PlannedConfig> configs;
  CompileStats compile_stats;
  std::size_t count(Outcome outcome) const;
};

// The most configurations a plan or a sweep enumerates; a larger space is refused before it is built (a
// sampling sweep with a budget reads a larger one lazily, through SpaceIndex).
inline constexpr std::uint64_t kMaxSpaceSize = 1'000'000;
// The number of configurations in the family's space; nullopt when it does not fit in 64 bits.
std::optional<std::uint64_t> space_size(const KernelFamily& family);
// How refusals name a space: "7290000000000 configurations (9 TILE_WIDTH x 9 BLOCK_Y x ...)", or "more
// than 2^64 configurations (...)" when its size does not fit in 64 bits.
std::string describe_space(const KernelFamily& family);
// The one-line refusal of a space whose size does not fit in 64 bits (no index can address it).
std::string unaddressable_space(const KernelFamily& family);
// Throws FamilyError, one line with the space's size, when the space has more than kMaxSpaceSize
// configurations (a plan or a brute-force sweep cannot hold it; the message says how to sample it).
void check_space_enumerable(const KernelFamily& family);
// Every configuration in the family's space (the cartesian product of the parameter values), in order.
// Throws check_space_enumerable's FamilyError first when it has more than kMaxSpaceSize.
std::vector<Params> enumerate_space(const KernelFamily& family);

// The family's space read as a mixed-radix number, one digit per parameter (the last parameter varies
// fastest): configuration i is enumerate_space's i-th, computed from i alone, so that a space of any size a
// 64-bit index holds can be sampled without being built.
class SpaceIndex {
 public:
  // Throws FamilyError, one line with the space's description, when its size does not fit in 64 bits.
  explicit SpaceIndex(const KernelFamily& family);
  std::uint64_t size() const { return size_; }
  // The configuration at `index` (< size()).
  Params at(std::uint64_t index) const;
  // nullopt when the configuration lacks a parameter or holds a value outside its list.
  std::optional<std::uint64_t> index_of(const Params& params) const;
  // The configurations that differ from `index` in one parameter, by one step along its list: parameter by
  // parameter, the previous value first (annealing's neighbourhood).
  std::vector<std::uint64_t> neighbours(std::uint64_t index) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<std::int64_t>> values_;
  std::vector<std::uint64_t> stride_;  // the index step of one step along each parameter's list
  std::uint64_t size_ = 1;
};

// The family's space as a SpaceIndex, once check_space_enumerable has let it through (a plan, an enumerated
// sweep and enumerate_space walk it whole).
SpaceIndex enumerable_space(const KernelFamily& family);

// The most blocks in a thread block cluster that every GPU with clusters launches (more needs an opt-in).
inline constexpr long long kMaxPortableClusterSize = 8;

// Evaluates launch geometry (with the cluster and the tensor maps) and applies the constraints and the device
// limits that are known before compiling: an architecture suffix the device lacks, a cluster that does not
// divide the grid or needs a newer GPU, a tensor map that breaks a rule of TMA's or reaches outside its
// buffer.
PlannedConfig prune_before_compile(const KernelFamily& family, const DeviceLimits& device,
                                   const ProblemKey& problem, const Params& params);
// The occupancy a launch gives before its kernel is compiled: the registers not yet known, the static shared
// memory as the family estimates it.
Occupancy occupancy_before_compile(const LaunchGeometry& launch, const DeviceLimits& device);

// prune_before_compile of configuration_at(i) for every i in `indices`, a block at a time on every core;
// `each` gets them in the order of `indices`. Each configuration is made by the thread that prunes it, so a
// space is never held whole (half a million configurations held as Params, a map each, took a quarter of the
// planning time). `tiletune plan` and an enumerated sweep both prune through it.
void prune_each(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
                const std::function<Params(std::uint64_t)>& configuration_at,
                const std::vector<std::uint64_t>& indices, const std::function<void(PlannedConfig&&)>& each);

// The runnable configurations of a space too large to enumerate, found as a strategy visits points. A
// point is pruned (by `prune`, e.g. prune_before_compile) on its first visit: a runnable one takes the next
// candidate slot (the table grows with the visits, not with the space); a pruned one goes to `on_pruned`
// (a sweep stores it at once). Points `skip` names (stored before a resume) are neither. What was visited
// is remembered by index, so that no point is reported twice, except what the caller marks as never asked
// for again (a draw without replacement), so that memory follows the visits the caller needs remembered.
class LazyCandidates {
 public:
  using Prune = std::function<PlannedConfig(const Params&)>;
  using Sink = std::function<void(PlannedConfig&&)>;
  using Skip = std::function<bool(const Params&)>;
  // Throws FamilyError when the space's size does not fit in 64 bits (see SpaceIndex).
  LazyCandidates(const KernelFamily& family, Prune prune, Sink on_pruned = {}, Skip skip = {});

  enum class Fate { runnable, pruned, skipped };
  struct Visit {
    Fate fate = Fate::pruned;
    std::size_t slot = 0;  // runnable: the candidate's slot
  };
  // The fate of the point at `index`, pruning it on its first visit. remember = false: the caller never asks
  // for a pruned or skipped point again (runnable ones are always remembered).
  Visit visit(std::uint64_t index, bool remember = true);
  // A visited point's fate, if it was remembered.
  std::optional<Visit> known(std::uint64_t index) const;

  const SpaceIndex& space() const { return space_; }
  std::vector<PlannedConfig>& candidates() { return candidates_; }
  const std::vector<PlannedConfig>& candidates() const { return candidates_; }
  std::uint64_t index_of(std::size_t slot) const { return indices_[slot]; }
  std::uint64_t visited() const { return visited_; }
  std::uint64_t pruned() const { return pruned_; }

 private:
  SpaceIndex space_;
  Prune prune_;
  Sink on_pruned_;
  Skip skip_;
  std::vector<PlannedConfig> candidates_;
  std::vector<std::uint64_t> indices_;  // each candidate's space index
  std::unordered_map<std::uint64_t, Visit> seen_;
  std::uint64_t visited_ = 0, pruned_ = 0;
};

// The one place a family's compile is described: its source for `params`, for the device's sm_XX plus the
// family's arch_suffix (sm_90a).
CompileJob compile_job(const KernelFamily& family, const DeviceLimits& device, const Params& params);

// Records what compiling gave (resources, NVRTC's time, the kernel's lowered name for the launch) and applies
// the limits known only after compiling (registers, shared memory as compiled, occupancy).
void apply_compile_result(PlannedConfig& config, const CompileResult& result, const DeviceLimits& device);

struct PlanOptions {
  bool compile = true;
  int jobs = 1;
  ParallelMode mode = ParallelMode::processes;
  // When set, only these configurations (a strategy's choice) are planned.
  std::optional<std::vector<Params>> subset;
  // Only this part of the space (a CPU node's share when warming a shared compile cache).
  Shard shard;
};

Plan make_plan(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
               const CompileCache& cache, const PlanOptions& options);

// What a stored plan or sweep of this family on this device records about itself.
SweepSpec sweep_spec(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
                     const std::string& kind, const std::string& strategy);

// The stored form of a planned configuration (no timing yet).
ResultRecord to_record(const PlannedConfig& config);

}  // namespace tiletune
