#include "tiletune/plan.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>

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

std::vector<Params> enumerate_space(const KernelFamily& family) {
  check_space_enumerable(family);
  const SpaceIndex space(family);
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

PlannedConfig prune_before_compile(const KernelFamily& family, const DeviceLimits& device,
                                   const ProblemKey& problem, const Params& params) {
  PlannedConfig c;
  c.params = params;
  auto prune = [&](std::string why) {
    c.outcome = Outcome::pruned;
    c.reason = std::move(why);
    return c;
  };
  Vars vars = family.vars(problem, params);
  vars[kDeviceCcVar] = device.cc_major * 10 + device.cc_minor;
  vars[kDeviceSmsVar] = device.sm_count;
  try {
    for (const auto& constraint : family.constraints)
      if (!constraint.expr.eval(vars)) return prune("constraint: " + constraint.message);
    for (std::size_t i = 0; i < family.launch.block.size(); ++i)
      c.launch.block[i] = family.launch.block[i].eval(vars);
    for (std::size_t i = 0; i < family.launch.grid.size(); ++i)
      c.launch.grid[i] = family.launch.grid[i].eval(vars);
    c.launch.dynamic_smem = family.launch.dynamic_shared_bytes.eval(vars);
    c.launch.static_smem_estimate = family.launch.static_shared_bytes.eval(vars);
  } catch (const ExprError& e) {
    return prune(std::string("launch: ") + e.what());
  }
  static const char* axis = "xyz";
  for (int i = 0; i < 3; ++i) {
    if (c.launch.block[i] < 1 || c.launch.grid[i] < 1)
      return prune(std::string("launch: block and grid sizes must be positive (") + axis[i] + ")");
    if (c.launch.block[i] > device.max_block_dim[i])
      return prune(std::string("threads: block ") + axis[i] + " " + std::to_string(c.launch.block[i]) +
                   " > " + std::to_string(device.max_block_dim[i]));
    if (c.launch.grid[i] > device.max_grid_dim[i])
      return prune(std::string("grid: ") + axis[i] + " " + std::to_string(c.launch.grid[i]) + " blocks > " +
                   std::to_string(device.max_grid_dim[i]));
  }
  if (c.launch.threads() > device.max_threads_per_block)
    return prune("threads: " + std::to_string(c.launch.threads()) + " per block > " +
                 std::to_string(device.max_threads_per_block));
  if (c.launch.static_smem_estimate > device.shared_per_block)
    return prune("shared memory: static " + kb(c.launch.static_smem_estimate) + " > " +
                 kb(device.shared_per_block) + " static limit");
  if (c.launch.static_smem_estimate + c.launch.dynamic_smem > device.shared_per_block_optin)
    return prune("shared memory: " + kb(c.launch.static_smem_estimate + c.launch.dynamic_smem) +
                 " per block > " + kb(device.shared_per_block_optin) + " opt-in maximum");
  return c;
}

CompileJob compile_job(const KernelFamily& family, const DeviceLimits& device, const Params& params) {
  return CompileJob{family.source_for(params), family.source_file, family.kernel, device.arch(),
                    family.compile_options};
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
    c.reason = with_error_first(err->log);
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
  const std::vector<Params> space = options.subset ? *options.subset : enumerate_space(family);
  for (std::size_t i = 0; i < space.size(); ++i)
    if (options.subset || options.shard.contains(i))
      plan.configs.push_back(prune_before_compile(family, device, problem, space[i]));
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
