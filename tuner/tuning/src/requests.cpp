#include "requests.hpp"

#include <algorithm>

#include "tiletune/kernel_spec.hpp"

namespace tiletune {

namespace {

wire::Repetitions repetitions(const MeasureSettings& s) {
  return {s.min_reps, s.max_reps, s.budget_ms, s.target_spread, s.sustained_ms};
}

// A file fill's count is checked here, before any worker is asked: a file of the wrong size stops the sweep
// with one line naming it.
wire::FillSpec fill_spec(const Fill& f, ElementType type, std::uint64_t count, const std::string& where) {
  if (f.kind == Fill::Kind::file) {
    try {
      inspect_input(f.path, f.format, type, count);
    } catch (const InputFileError& e) {
      throw SweepError(where + ": " + e.what());
    }
    return {wire::FillKind::file, 0, 0, f.path.string(), to_string(f.format), f.hash};
  }
  const wire::FillKind kind = f.kind == Fill::Kind::uniform ? wire::FillKind::uniform
                              : f.kind == Fill::Kind::range ? wire::FillKind::range
                                                            : wire::FillKind::constant;
  return {kind, f.lo, f.hi, "", "", ""};
}

Vars device_vars(Vars vars, const DeviceLimits& device) {
  vars[kDeviceCcVar] = device.cc_major * 10 + device.cc_minor;
  vars[kDeviceSmsVar] = device.sm_count;
  return vars;
}

// The reference kernel's arguments: the family's by name (never a tensor map), and scalars of its own.
std::vector<wire::ArgValue> reference_values(const KernelFamily& family, const Vars& vars,
                                             const std::vector<ReferenceArgument>& list) {
  std::vector<wire::ArgValue> out;
  for (const auto& a : list) {
    if (a.name.empty()) {
      wire::ArgValue v;
      v.scalar = a.scalar;
      v.integer = a.value.eval(vars);
      v.real = static_cast<double>(v.integer);
      out.push_back(v);
      continue;
    }
    if (const Argument* arg = find_argument(family, a.name)) try {
        out.push_back(arg_value(*arg, vars, nullptr));
      } catch (const LaunchSpecError& e) {
        throw SweepError(e.what());
      }
  }
  return out;
}

// A compiled kernel as the worker loads it: the CUBIN's path and the symbol to look up in it.
struct CubinKernel {
  std::string path;
  std::string symbol;
};

CubinKernel compiled_cubin(const CompileJob& job, const CompileCache& cache, const std::string& what) {
  const std::string key = cache.key(job);
  const CompileResult compiled = cache.load_or_compile(key, job);
  if (const auto* err = std::get_if<CompileError>(&compiled))
    throw SweepError(what + " does not compile: " + err->log.substr(0, err->log.find('\n', 400)));
  const std::string& lowered = std::get<CompiledKernel>(compiled).lowered_name;
  return {(cache.dir() / (key + ".cubin")).string(), lowered.empty() ? job.kernel : lowered};
}

// A kernel of the family's folder with launch geometry of its own (a reference or a setup kernel): its
// geometry evaluated and checked against the device, compiled through the cache, its arguments bound.
wire::KernelSpec plain_kernel(const KernelFamily& family, const ProblemKey& problem,
                              const DeviceLimits& device, const CompileCache& cache,
                              const ReferenceKernel& rk, const std::string& what, wire::KernelSpec k) {
  const Vars vars = device_vars(family.vars(problem, {}), device);
  try {
    for (std::size_t i = 0; i < rk.block.size(); ++i) k.block[i] = rk.block[i].eval(vars);
    for (std::size_t i = 0; i < rk.grid.size(); ++i) k.grid[i] = rk.grid[i].eval(vars);
  } catch (const ExprError& e) {
    throw SweepError(family.name + ": " + what + " " + rk.name + " launch: " + e.what());
  }
  for (int i = 0; i < 3; ++i)
    if (k.block[i] < 1 || k.grid[i] < 1 || k.block[i] > device.max_block_dim[i] ||
        k.grid[i] > device.max_grid_dim[i])
      throw SweepError(family.name + ": the launch geometry of " + what + " " + rk.name +
                       " does not fit the device");
  const CubinKernel compiled =
      compiled_cubin(CompileJob{rk.source, rk.file, rk.name, device.arch(), {}}, cache, what + " " + rk.file);
  k.cubin_path = compiled.path;
  k.kernel = compiled.symbol;
  k.args = reference_values(family, vars, rk.arguments);
  return k;
}

wire::KernelSpec reference_kernel(const KernelFamily& family, const ProblemKey& problem,
                                  const DeviceLimits& device, const CompileCache& cache) {
  const Reference& ref = family.reference;
  wire::KernelSpec k;
  for (const auto& c : family.constants) k.constants.push_back(c.name);
  if (ref.kind == Reference::Kind::family) {
    if (!ref.family_def)
      throw SweepError(family.name + ": reference family " + ref.family + " is not loaded");
    const KernelFamily& other = *ref.family_def;
    std::map<std::string, std::int64_t> args;
    for (const auto& [name, value] : problem.args)
      if (std::any_of(other.problem_args.begin(), other.problem_args.end(),
                      [&name = name](const ProblemArg& a) { return a.name == name; }))
        args[name] = value;
    const ProblemKey other_problem = other.make_problem(problem.dims, args);
    Params params = other.default_params();
    for (const auto& [k2, v] : ref.config) params[k2] = v;
    const PlannedConfig c = prune_before_compile(other, device, other_problem, params);
    if (c.outcome != Outcome::ok)
      throw SweepError(family.name + ": reference " + other.name + " (" + params_to_text(params) +
                       ") cannot run: " + c.reason);
    const CubinKernel compiled =
        compiled_cubin(compile_job(other, device, params), cache, "reference " + other.name);
    try {
      k = kernel_spec(other, other_problem, params, c.launch, compiled.path);
    } catch (const LaunchSpecError& e) {
      throw SweepError(family.name + ": reference " + other.name + ": " + e.what());
    }
    k.kernel = compiled.symbol;
    return k;
  }
  if (ref.kernel.source.empty())
    throw SweepError(family.name + ": reference family " + ref.from + " is not loaded");
  return plain_kernel(family, problem, device, cache, ref.kernel, "reference kernel", std::move(k));
}

}  // namespace

wire::SetupRequest setup_request(const KernelFamily& family, const ProblemKey& problem,
                                 const DeviceLimits& device, const CompileCache& cache,
                                 const MeasureSettings& settings) {
  const Vars vars = family.vars(problem, {});
  wire::SetupRequest req;
  req.seed = settings.seed;
  try {
    for (const auto& a : family.arguments) {
      if (a.kind != ArgKind::buffer) continue;
      wire::BufferSpec b;
      b.name = a.name;
      b.type = a.type;
      const std::int64_t count = a.count.eval(vars);
      if (count < 0) throw SweepError(family.name + ": buffer " + a.name + " has a negative count");
      b.count = static_cast<std::uint64_t>(count);
      b.role = a.role;
      if (a.role != BufferRole::output)
        b.fill = fill_spec(a.fill, a.type, b.count, family.name + " input " + a.name);
      for (const auto& d : a.dims) b.dims.push_back(d.eval(vars));
      b.truth = family.reference.truth_type(a.type);
      const Tolerance t = family.reference.tolerance_for(a.type);
      b.rtol = t.rtol;
      b.atol = t.atol;
      b.scale_floor = t.scale_floor.value_or(-1);
      if (a.is_output()) b.max_differing = family.reference.allowed_differing(a.type, b.count);
      req.buffers.push_back(std::move(b));
    }
    for (const auto& c : family.constants) {
      const std::int64_t count = c.count.eval(vars);
      if (count < 0) throw SweepError(family.name + ": constant " + c.name + " has a negative count");
      const auto n = static_cast<std::uint64_t>(count);
      req.constants.push_back(
          {c.name, c.type, n, fill_spec(c.fill, c.type, n, family.name + " constant " + c.name)});
    }
  } catch (const ExprError& e) {
    throw SweepError(family.name + " " + problem.size_text() + ": " + e.what());
  }
  for (const auto& setup : family.setup)
    req.setup_kernels.push_back(
        plain_kernel(family, problem, device, cache, setup.kernel, "setup kernel", {}));
  req.reference = reference_kernel(family, problem, device, cache);
  return req;
}

wire::MeasureRequest measure_request(const KernelFamily& family, const ProblemKey& problem,
                                     const Params& params, const LaunchGeometry& launch,
                                     const std::string& cubin_path, const MeasureSettings& settings) {
  wire::MeasureRequest req;
  try {
    req.kernel = kernel_spec(family, problem, params, launch, cubin_path);
  } catch (const LaunchSpecError& e) {
    throw SweepError(e.what());
  }
  req.reps = repetitions(settings);
  return req;
}

wire::BaselineRequest baseline_request(const KernelFamily& family, const ProblemKey& problem,
                                       const LibraryBaseline& library, const MeasureSettings& settings) {
  wire::BaselineRequest req;
  req.library = library.library;
  req.buffers = library.buffers;
  const Vars vars = family.vars(problem, {});
  for (const auto& [op, e] : library.scalars) req.scalars[op] = e.eval(vars);
  req.reps = repetitions(settings);
  return req;
}

wire::Reply ask(Worker& worker, const nlohmann::json& message, double timeout_s, bool* timed_out) {
  const auto r = worker.request(message, timeout_s);
  if (timed_out) *timed_out = r.status == Worker::Reply::Status::timeout;
  wire::Reply reply;
  if (r.status != Worker::Reply::Status::ok) {
    reply.ok = false;
    reply.error = r.detail.empty() ? "timed out" : r.detail;
    return reply;
  }
  try {
    reply = r.body.get<wire::Reply>();
  } catch (const nlohmann::json::exception& e) {
    reply = wire::Reply{};
    reply.ok = false;
    reply.error = std::string("malformed reply from the worker: ") + e.what();
  }
  return reply;
}

void apply_measurement(ResultRecord& r, const wire::Reply& reply, double work, const std::string& unit) {
  const auto outcome = outcome_from_string(reply.outcome);
  if (!reply.ok || !outcome) {
    r.outcome = Outcome::runtime_failed;
    r.reason = "worker: " + (reply.error.empty() ? std::string("no outcome in reply") : reply.error);
    return;
  }
  r.outcome = *outcome;
  r.reason = reply.reason;
  if (r.outcome == Outcome::ok || r.outcome == Outcome::wrong_result) r.error = reply.error_l2;
  if (r.outcome != Outcome::ok) return;
  r.median_ms = reply.median_ms;
  r.min_ms = reply.min_ms;
  r.spread = reply.spread;
  r.repetitions = reply.reps;
  r.times_ms = reply.times_ms;
  if (reply.sm_clock_mhz > 0) r.sm_clock_mhz = reply.sm_clock_mhz;
  if (reply.median_ms > 0) r.metric = work / (reply.median_ms * 1e-3) / 1e9;
  r.metric_unit = unit;
}

}  // namespace tiletune
