#include "tiletune/plan.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <string_view>

#include "argument_limits.hpp"
#include "tiletune/build_info.hpp"

namespace tiletune {

namespace {

std::string kb(long long bytes) {
  std::ostringstream out;
  if (bytes % 1024 == 0)
    out << bytes / 1024 << " KB";
  else
    out << bytes << " B";
  return out.str();
}

// The device's compute capability as 10 x major + minor (90 on the H100).
int device_cc(const DeviceLimits& device) { return device.cc_major * 10 + device.cc_minor; }

// Why the family's architecture suffix does not exist for the device ("" when it does): NVRTC knows sm_XXa
// from sm_90 on and sm_XXf from sm_100 on.
std::string arch_suffix_problem(const KernelFamily& family, const DeviceLimits& device) {
  const int needs = family.arch_suffix == "a" ? 90 : family.arch_suffix == "f" ? 100 : 0;
  if (device_cc(device) >= needs) return "";
  return "arch: " + device.arch() + family.arch_suffix + " does not exist: the \"" + family.arch_suffix +
         "\" suffix needs sm_" + std::to_string(needs) + " or newer";
}

// Why the cluster cannot be launched ("" when it can): cuLaunchKernelEx refuses a cluster that does not
// divide the grid, more than the portable 8 blocks, or any cluster before sm_90.
std::string cluster_problem(const LaunchGeometry& launch, const DeviceLimits& device) {
  static const char* axis = "xyz";
  for (int i = 0; i < 3; ++i) {
    if (launch.cluster[i] < 1)
      return std::string("cluster: ") + axis[i] + " " + std::to_string(launch.cluster[i]) +
             " must be at least 1";
    if (launch.cluster[i] > kMaxPortableClusterSize)
      return std::string("cluster: ") + axis[i] + " " + std::to_string(launch.cluster[i]) + " blocks > " +
             std::to_string(kMaxPortableClusterSize) + ", the portable maximum";
  }
  const long long size = launch.cluster_size();
  if (size > kMaxPortableClusterSize)
    return "cluster: " + std::to_string(size) + " blocks (" + std::to_string(launch.cluster[0]) + " x " +
           std::to_string(launch.cluster[1]) + " x " + std::to_string(launch.cluster[2]) + ") > " +
           std::to_string(kMaxPortableClusterSize) + ", the portable maximum";
  if (size > 1 && device_cc(device) < 90)
    return "cluster: clusters of " + std::to_string(size) + " blocks need sm_90 or newer; the device is " +
           device.arch();
  for (int i = 0; i < 3; ++i)
    if (launch.grid[i] % launch.cluster[i] != 0)
      return std::string("cluster: grid ") + axis[i] + " " + std::to_string(launch.grid[i]) +
             " is not a multiple of the cluster's " + std::to_string(launch.cluster[i]);
  return "";
}

using u128 = unsigned __int128;

// A tensor map's dims, each in [1, 2^32].
std::string tensor_map_dims(const TensorMapArg& m, const Vars& vars, TensorMapValues& out) {
  constexpr std::int64_t kMaxDim = std::int64_t{1} << 32;
  for (std::size_t i = 0; i < m.dims.size(); ++i) {
    const std::int64_t d = m.dims[i].eval(vars);
    if (d < 1 || d > kMaxDim)
      return "dims[" + std::to_string(i) + "] = " + std::to_string(d) + " is outside [1, 2^32]";
    out.dims.push_back(static_cast<std::uint64_t>(d));
  }
  return "";
}

// The byte strides of dims[1..]: given, or those of packed rows; positive, below 2^40, 16-byte aligned.
std::string tensor_map_strides(const TensorMapArg& m, const Vars& vars, std::uint64_t elem,
                               TensorMapValues& out) {
  constexpr std::int64_t kMaxStride = std::int64_t{1} << 40;
  u128 packed = u128{out.dims[0]} * elem;
  for (std::size_t i = 1; i < m.dims.size(); ++i) {
    const std::string which = " bytes (dims[" + std::to_string(i) + "])";
    u128 stride = packed;
    if (!m.strides.empty()) {
      const std::int64_t s = m.strides[i - 1].eval(vars);
      if (s < 1) return "stride " + std::to_string(s) + which + " must be positive";
      stride = static_cast<u128>(s);
    }
    if (stride >= static_cast<u128>(kMaxStride))
      return "stride " + decimal_text(stride) + which + " is not below 2^40";
    if (stride % 16 != 0)
      return "stride " + decimal_text(stride) + which +
             " is not a multiple of 16: TMA needs 16-byte aligned rows";
    out.strides.push_back(static_cast<std::uint64_t>(stride));
    packed = stride * out.dims[i];  // below 2^72: no overflow
  }
  return "";
}

// The box, each side in [1, 256], its inner side 16-byte aligned and within the swizzle span.
std::string tensor_map_box(const TensorMapArg& m, const Vars& vars, std::uint64_t elem,
                           TensorMapValues& out) {
  for (std::size_t i = 0; i < m.dims.size(); ++i) {  // as many as dims: the family checks it
    const std::int64_t b = m.box[i].eval(vars);
    if (b < 1 || b > 256)
      return "box[" + std::to_string(i) + "] = " + std::to_string(b) + " is outside [1, 256]";
    out.box.push_back(static_cast<std::uint32_t>(b));
  }
  const std::uint64_t inner = out.box[0] * elem;
  const std::string inner_text =
      std::to_string(inner) + " bytes (" + std::to_string(out.box[0]) + " x " + std::to_string(elem) + ")";
  if (inner % 16 != 0) return "box[0] is " + inner_text + ", not a multiple of 16";
  const std::int64_t swizzle = m.swizzle.eval(vars);
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return "swizzle " + std::to_string(swizzle) + " is not 0, 32, 64 or 128 (bytes)";
  if (swizzle > 0 && inner > static_cast<std::uint64_t>(swizzle))
    return "box[0] is " + inner_text + ", more than the " + std::to_string(swizzle) + "-byte swizzle span";
  out.swizzle = static_cast<int>(swizzle);
  return "";
}

// The last byte the map can address, against the bytes the buffer holds.
std::string tensor_map_reach(const KernelFamily& family, const TensorMapArg& m, const Vars& vars,
                             std::uint64_t elem, const TensorMapValues& out) {
  const Argument* buffer = find_argument(family, m.buffer);
  const std::int64_t count = buffer ? buffer->count.eval(vars) : 0;
  u128 reach = u128{out.dims[0]} * elem;
  for (std::size_t i = 1; i < m.dims.size(); ++i) reach += u128{out.dims[i] - 1} * out.strides[i - 1];
  const u128 holds =
      static_cast<u128>(std::max<std::int64_t>(count, 0)) * size_of(buffer ? buffer->type : m.element);
  if (reach > holds)
    return "reaches " + decimal_text(reach) + " bytes into " + m.buffer + ", which holds " +
           decimal_text(holds) + ": TMA would touch memory outside the buffer";
  return "";
}

// Evaluates one tensor map into `out` and checks it against cuTensorMapEncodeTiled's rules and against its
// buffer's size; returns why it cannot be encoded or used ("" when it can). Throws ExprError.
std::string tensor_map_problem(const KernelFamily& family, const Argument& arg, const Vars& vars,
                               const DeviceLimits& device, TensorMapValues& out) {
  const TensorMapArg& m = arg.tensor_map;
  if (device_cc(device) < 90) return "TMA needs sm_90 or newer; the device is " + device.arch();
  out.name = arg.name;
  out.buffer = m.buffer;
  out.element = m.element;
  out.tf32 = m.tf32;
  out.oob_nan = m.oob_nan;
  const std::uint64_t elem = size_of(m.element);
  if (auto why = tensor_map_dims(m, vars, out); !why.empty()) return why;
  if (auto why = tensor_map_strides(m, vars, elem, out); !why.empty()) return why;
  if (auto why = tensor_map_box(m, vars, elem, out); !why.empty()) return why;
  const std::int64_t l2 = m.l2_promotion.eval(vars);
  if (l2 != 0 && l2 != 64 && l2 != 128 && l2 != 256)
    return "l2_promotion " + std::to_string(l2) + " is not 0, 64, 128 or 256 (bytes)";
  out.l2_promotion = static_cast<int>(l2);
  return tensor_map_reach(family, m, vars, elem, out);
}

// Checks the constraints and evaluates the launch geometry into `launch`; returns why the configuration
// cannot run ("" when it can).
std::string evaluate_launch(const KernelFamily& family, const Vars& vars, LaunchGeometry& launch) {
  try {
    for (const auto& constraint : family.constraints)
      if (!constraint.expr.eval(vars)) return "constraint: " + constraint.message;
    for (std::size_t i = 0; i < family.launch.block.size(); ++i)
      launch.block[i] = family.launch.block[i].eval(vars);
    for (std::size_t i = 0; i < family.launch.grid.size(); ++i)
      launch.grid[i] = family.launch.grid[i].eval(vars);
    for (std::size_t i = 0; i < family.launch.cluster.size(); ++i)
      launch.cluster[i] = family.launch.cluster[i].eval(vars);
    launch.dynamic_smem = family.launch.dynamic_shared_bytes.eval(vars);
    launch.static_smem_estimate = family.launch.static_shared_bytes.eval(vars);
  } catch (const ExprError& e) {
    return std::string("launch: ") + e.what();
  }
  return "";
}

// Why the block and grid do not fit the device, per axis ("" when they do).
std::string block_grid_problem(const LaunchGeometry& launch, const DeviceLimits& device) {
  static const char* axis = "xyz";
  for (int i = 0; i < 3; ++i) {
    if (launch.block[i] < 1 || launch.grid[i] < 1)
      return std::string("launch: block and grid sizes must be positive (") + axis[i] + ")";
    if (launch.block[i] > device.max_block_dim[i])
      return std::string("threads: block ") + axis[i] + " " + std::to_string(launch.block[i]) + " > " +
             std::to_string(device.max_block_dim[i]);
    if (launch.grid[i] > device.max_grid_dim[i])
      return std::string("grid: ") + axis[i] + " " + std::to_string(launch.grid[i]) + " blocks > " +
             std::to_string(device.max_grid_dim[i]);
  }
  return "";
}

// Why the launch cannot run on the device ("" when it can): its block, grid and cluster, threads per block,
// shared memory.
std::string launch_problem(const LaunchGeometry& launch, const DeviceLimits& device) {
  if (auto why = block_grid_problem(launch, device); !why.empty()) return why;
  if (auto why = cluster_problem(launch, device); !why.empty()) return why;
  if (launch.threads() > device.max_threads_per_block)
    return "threads: " + std::to_string(launch.threads()) + " per block > " +
           std::to_string(device.max_threads_per_block);
  if (launch.static_smem_estimate > device.shared_per_block)
    return "shared memory: static " + kb(launch.static_smem_estimate) + " > " + kb(device.shared_per_block) +
           " static limit";
  if (launch.static_smem_estimate + launch.dynamic_smem > device.shared_per_block_optin)
    return "shared memory: " + kb(launch.static_smem_estimate + launch.dynamic_smem) + " per block > " +
           kb(device.shared_per_block_optin) + " opt-in maximum";
  return "";
}

// Evaluates the family's tensor maps into `launch`, in argument order; returns why one cannot be used (""
// when all can), and then leaves none.
std::string evaluate_tensor_maps(const KernelFamily& family, const Vars& vars, const DeviceLimits& device,
                                 LaunchGeometry& launch) {
  for (const auto& a : family.arguments) {
    if (a.kind != ArgKind::tensor_map) continue;
    TensorMapValues values;
    std::string why;
    try {
      why = tensor_map_problem(family, a, vars, device, values);
    } catch (const ExprError& e) {
      why = e.what();
    }
    if (!why.empty()) {
      launch.tensor_maps.clear();
      return "tensor map " + a.name + ": " + why;
    }
    launch.tensor_maps.push_back(std::move(values));
  }
  return "";
}

}  // namespace

std::size_t Plan::count(Outcome outcome) const {
  return static_cast<std::size_t>(std::count_if(
      configs.begin(), configs.end(), [&](const PlannedConfig& c) { return c.outcome == outcome; }));
}

std::optional<std::uint64_t> space_size(const KernelFamily& family) {
  std::uint64_t n = 1;
  for (const auto& p : family.parameters)
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(p.values.size()), &n)) return std::nullopt;
  return n;
}

std::string describe_space(const KernelFamily& family) {
  std::string factors;
  for (const auto& p : family.parameters)
    factors += (factors.empty() ? "" : " x ") + std::to_string(p.values.size()) + " " + p.name;
  const auto size = space_size(family);
  return (size ? std::to_string(*size) : std::string("more than 2^64")) + " configurations (" + factors + ")";
}

std::string unaddressable_space(const KernelFamily& family) {
  return family.name + ": the space has " + describe_space(family) +
         ", more than a 64-bit index can address; give its parameters fewer values";
}

void check_space_enumerable(const KernelFamily& family) {
  // Counted, never built: a space too large to hold is refused in one line before anything is allocated.
  const auto size = space_size(family);
  if (!size) throw FamilyError(unaddressable_space(family));
  if (*size > kMaxSpaceSize)
    throw FamilyError(
        family.name + ": the space has " + describe_space(family) + ", more than the " +
        std::to_string(kMaxSpaceSize) +
        " a plan or a brute-force sweep holds; sample it with 'tiletune sweep --strategy random "
        "--budget N' or give its parameters fewer values");
}

SpaceIndex enumerable_space(const KernelFamily& family) {
  check_space_enumerable(family);
  return SpaceIndex(family);
}

std::vector<Params> enumerate_space(const KernelFamily& family) {
  const SpaceIndex space = enumerable_space(family);
  std::vector<Params> out;
  out.reserve(static_cast<std::size_t>(space.size()));
  for (std::uint64_t i = 0; i < space.size(); ++i) out.push_back(space.at(i));
  return out;
}

SpaceIndex::SpaceIndex(const KernelFamily& family) {
  const auto size = space_size(family);
  if (!size) throw FamilyError(unaddressable_space(family));
  size_ = *size;
  for (const auto& p : family.parameters) {
    names_.push_back(p.name);
    values_.push_back(p.values);
  }
  // The last parameter varies fastest, as in enumerate_space. The size fits in 64 bits, so every stride does.
  stride_.assign(values_.size(), 1);
  for (std::size_t k = values_.size(); k-- > 1;) stride_[k - 1] = stride_[k] * values_[k].size();
}

Params SpaceIndex::at(std::uint64_t index) const {
  Params p;
  for (std::size_t k = 0; k < names_.size(); ++k)
    p[names_[k]] = values_[k][static_cast<std::size_t>(index / stride_[k] % values_[k].size())];
  return p;
}

std::optional<std::uint64_t> SpaceIndex::index_of(const Params& params) const {
  std::uint64_t index = 0;
  for (std::size_t k = 0; k < names_.size(); ++k) {
    const auto it = params.find(names_[k]);
    if (it == params.end()) return std::nullopt;
    const auto pos = std::find(values_[k].begin(), values_[k].end(), it->second);
    if (pos == values_[k].end()) return std::nullopt;
    index += static_cast<std::uint64_t>(pos - values_[k].begin()) * stride_[k];
  }
  return index;
}

std::vector<std::uint64_t> SpaceIndex::neighbours(std::uint64_t index) const {
  std::vector<std::uint64_t> out;
  for (std::size_t k = 0; k < names_.size(); ++k) {
    const std::uint64_t digit = index / stride_[k] % values_[k].size();
    if (digit > 0) out.push_back(index - stride_[k]);
    if (digit + 1 < values_[k].size()) out.push_back(index + stride_[k]);
  }
  return out;
}

LazyCandidates::LazyCandidates(const KernelFamily& family, Prune prune, Sink on_pruned, Skip skip)
    : space_(family), prune_(std::move(prune)), on_pruned_(std::move(on_pruned)), skip_(std::move(skip)) {}

std::optional<LazyCandidates::Visit> LazyCandidates::known(std::uint64_t index) const {
  const auto it = seen_.find(index);
  if (it == seen_.end()) return std::nullopt;
  return it->second;
}

LazyCandidates::Visit LazyCandidates::visit(std::uint64_t index, bool remember) {
  if (const auto it = seen_.find(index); it != seen_.end()) return it->second;
  ++visited_;
  Params params = space_.at(index);
  Visit v;
  if (skip_ && skip_(params)) {
    v.fate = Fate::skipped;
  } else {
    PlannedConfig c = prune_(params);
    if (c.outcome == Outcome::ok) {
      v.fate = Fate::runnable;
      v.slot = candidates_.size();
      candidates_.push_back(std::move(c));
      indices_.push_back(index);
      remember = true;  // its slot is how the strategy finds it again
    } else {
      v.fate = Fate::pruned;
      ++pruned_;
      if (on_pruned_) on_pruned_(std::move(c));
    }
  }
  if (remember) seen_.emplace(index, v);
  return v;
}

Occupancy occupancy_before_compile(const LaunchGeometry& launch, const DeviceLimits& device) {
  return compute_occupancy(device, static_cast<int>(launch.threads()), 0, launch.static_smem_estimate,
                           launch.dynamic_smem);
}

PlannedConfig prune_before_compile(const KernelFamily& family, const DeviceLimits& device,
                                   const ProblemKey& problem, const Params& params) {
  PlannedConfig c;
  c.params = params;
  auto prune = [&](std::string why) {
    c.outcome = Outcome::pruned;
    c.reason = std::move(why);
    return c;
  };
  if (auto why = arch_suffix_problem(family, device); !why.empty()) return prune(std::move(why));
  Vars vars = family.vars(problem, params);
  vars[kDeviceCcVar] = device_cc(device);
  vars[kDeviceSmsVar] = device.sm_count;
  if (auto why = evaluate_launch(family, vars, c.launch); !why.empty()) return prune(std::move(why));
  if (auto why = launch_problem(c.launch, device); !why.empty()) return prune(std::move(why));
  if (auto why = evaluate_tensor_maps(family, vars, device, c.launch); !why.empty())
    return prune(std::move(why));
  // Last, so that a launch or tensor map rule names its own limit first.
  if (auto why = argument_problem(family, vars, device); !why.empty()) {
    c.launch.tensor_maps.clear();
    return prune(std::move(why));
  }
  return c;
}

CompileJob compile_job(const KernelFamily& family, const DeviceLimits& device, const Params& params) {
  return CompileJob{family.source_for(params), family.source_file, family.kernel,
                    device.arch() + family.arch_suffix, family.compile_options};
}

namespace {

// A compile log with its first error line put first, so that the one line a sweep prints says why it failed
// rather than repeating a warning that came before (an option given twice, say); the whole log follows.
std::string with_error_first(const std::string& log) {
  std::size_t start = 0;
  while (start < log.size()) {
    const std::size_t end = std::min(log.find('\n', start), log.size());
    const std::string_view line(log.data() + start, end - start);
    if (line.find("error") != std::string_view::npos) {
      if (start == 0) return log;
      const std::size_t first = line.find_first_not_of(' ');
      return std::string(line.substr(first == std::string_view::npos ? 0 : first)) + "\n" + log;
    }
    start = end + 1;
  }
  return log;
}

}  // namespace

void apply_compile_result(PlannedConfig& c, const CompileResult& result, const DeviceLimits& device) {
  c.compiled = true;
  if (const auto* err = std::get_if<CompileError>(&result)) {
    c.outcome = Outcome::compile_failed;
    c.reason = with_error_first(readable_log(err->log));
    return;
  }
  const auto& k = std::get<CompiledKernel>(result);
  c.usage = k.usage;
  c.from_cache = k.from_cache;
  c.compile_ms = k.compile_ms;
  c.launch.kernel_symbol = k.lowered_name;
  const long long threads = c.launch.threads();
  if (static_cast<long long>(k.usage.registers) * threads > device.regs_per_block) {
    c.outcome = Outcome::pruned;
    c.reason = "registers: " + std::to_string(k.usage.registers) + " x " + std::to_string(threads) +
               " threads > " + std::to_string(device.regs_per_block) + " per block";
    return;
  }
  if (k.usage.static_smem + c.launch.dynamic_smem > device.shared_per_block_optin) {
    c.outcome = Outcome::pruned;
    c.reason = "shared memory: " + kb(k.usage.static_smem + c.launch.dynamic_smem) + " as compiled > " +
               kb(device.shared_per_block_optin) + " opt-in maximum";
    return;
  }
  c.occupancy = compute_occupancy(device, static_cast<int>(threads), k.usage.registers, k.usage.static_smem,
                                  c.launch.dynamic_smem);
  if (!c.occupancy.error.empty() || c.occupancy.active_blocks == 0) {
    c.outcome = Outcome::pruned;
    c.reason =
        "occupancy: " + (c.occupancy.error.empty() ? "no block fits on an SM (" + c.occupancy.limiter + ")"
                                                   : c.occupancy.error);
  }
}

Plan make_plan(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
               const CompileCache& cache, const PlanOptions& options) {
  Plan plan;
  std::vector<std::uint64_t> indices;
  const auto keep = [&](PlannedConfig&& c) { plan.configs.push_back(std::move(c)); };
  if (options.subset) {
    indices.resize(options.subset->size());
    std::iota(indices.begin(), indices.end(), 0);
    prune_each(
        family, device, problem, [&](std::uint64_t i) { return (*options.subset)[i]; }, indices, keep);
  } else {
    const SpaceIndex space = enumerable_space(family);
    for (std::uint64_t i = 0; i < space.size(); ++i)
      if (options.shard.contains(i)) indices.push_back(i);
    prune_each(
        family, device, problem, [&](std::uint64_t i) { return space.at(i); }, indices, keep);
  }
  if (!options.compile) return plan;
  std::vector<CompileJob> jobs;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < plan.configs.size(); ++i) {
    if (plan.configs[i].outcome != Outcome::ok) continue;
    jobs.push_back(compile_job(family, device, plan.configs[i].params));
    plan.configs[i].cache_key = cache.key(jobs.back());
    which.push_back(i);
  }
  auto results = compile_all(jobs, cache, options.jobs, options.mode, &plan.compile_stats);
  for (std::size_t j = 0; j < which.size(); ++j)
    apply_compile_result(plan.configs[which[j]], results[j], device);
  return plan;
}

SweepSpec sweep_spec(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
                     const std::string& kind, const std::string& strategy) {
  SweepSpec spec;
  spec.family = family.name;
  spec.template_hash = family.template_hash;
  spec.family_json = family.description_json;
  spec.space_hash = family.space_hash();
  spec.device = device.record();
  spec.problem = problem;
  spec.kind = kind;
  spec.strategy = strategy;
  spec.tiletune_version = TILETUNE_VERSION;
  spec.git_sha = TILETUNE_GIT_SHA;
  return spec;
}

ResultRecord to_record(const PlannedConfig& c) {
  ResultRecord r;
  r.params = c.params;
  r.outcome = c.outcome;
  r.reason = c.reason;
  r.threads_per_block = static_cast<int>(c.launch.threads());
  r.dynamic_smem = static_cast<int>(c.launch.dynamic_smem);
  if (c.compiled && c.outcome != Outcome::compile_failed) {
    r.registers = c.usage.registers;
    r.static_smem = c.usage.static_smem;
    r.local_bytes = c.usage.stack_bytes;
    r.spill_bytes = c.usage.spill_stores + c.usage.spill_loads;
    r.compile_ms = c.compile_ms;
    if (c.occupancy.active_blocks > 0) {
      r.active_blocks = c.occupancy.active_blocks;
      r.active_warps = c.occupancy.active_warps;
      r.occupancy = c.occupancy.fraction;
      r.occupancy_limiter = c.occupancy.limiter;
    }
  }
  return r;
}

}  // namespace tiletune
