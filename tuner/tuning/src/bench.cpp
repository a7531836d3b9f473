#include "tiletune/bench.hpp"

#include <iomanip>

#include "requests.hpp"
#include "tiletune/build_info.hpp"
#include "tiletune/plan.hpp"

namespace tiletune {

using nlohmann::json;

namespace {

Timing timing_from(const wire::Reply& r) {
  return Timing{r.median_ms, r.p25_ms, r.p75_ms, r.spread, r.reps, r.sustained_run_ms, r.sustained_clock_mhz};
}

struct Measured {
  Params params;
  std::string source;
  Timing time;
  json extra;
};

// Compiles and measures one configuration of a family in the worker; throws SweepError when it does not run.
Measured measure_config(const KernelFamily& family, const ProblemKey& problem, const Params& params,
                        const std::string& source, const DeviceLimits& device, Worker& worker,
                        const CompileCache& cache, const MeasureSettings& settings) {
  PlannedConfig c = prune_before_compile(family, device, problem, params);
  if (c.outcome != Outcome::ok)
    throw SweepError(family.name + " (" + params_to_text(params) + ") cannot run: " + c.reason);
  const CompileJob job = compile_job(family, device, params);
  const std::string key = cache.key(job);
  const CompileResult compiled = cache.load_or_compile(key, job);
  apply_compile_result(c, compiled, device);
  if (c.outcome != Outcome::ok)
    throw SweepError(family.name + " (" + params_to_text(params) + ") cannot run: " + c.reason);
  const wire::Reply setup =
      ask(worker, wire::message("setup", setup_request(family, problem, device, cache, settings)), 900);
  if (!setup.ok) throw SweepError("worker setup for " + family.name + " failed: " + setup.error);
  const wire::Reply reply =
      ask(worker,
          wire::message("measure", measure_request(family, problem, params, c.launch,
                                                   (cache.dir() / (key + ".cubin")).string(), settings)),
          600);
  if (reply.outcome != "ok")
    throw SweepError(family.name + " (" + params_to_text(params) +
                     ") failed: " + (reply.reason.empty() ? reply.error : reply.reason));
  json extra = {
      {"registers", c.usage.registers},        {"static_smem", c.usage.static_smem},
      {"dynamic_smem", c.launch.dynamic_smem}, {"spill_bytes", c.usage.spill_stores + c.usage.spill_loads},
      {"occupancy", c.occupancy.fraction},     {"occupancy_limiter", c.occupancy.limiter},
      {"sm_clock_mhz", reply.sm_clock_mhz},    {"error", reply.error_l2}};
  return Measured{params, source, timing_from(reply), extra};
}

Measured best_or_default(const KernelFamily& family, const ProblemKey& problem, const DeviceLimits& device,
                         const Store& store, Worker& worker, const CompileCache& cache,
                         const MeasureSettings& s, std::ostream& log) {
  if (auto best = store.best(family.name, device.name, problem))
    return measure_config(family, problem, best->record.params, "tuned", device, worker, cache, s);
  log << "note: no tuned " << family.name << " for " << problem.text() << " on " << device.name
      << "; using its default configuration\n";
  return measure_config(family, problem, family.default_params(), "default", device, worker, cache, s);
}

BenchRow make_row(const KernelFamily& family, const ProblemKey& problem, const Measured& ours, double work,
                  const std::string& baseline, const std::string& baseline_config, const Timing& base) {
  BenchRow r;
  r.family = family.name;
  r.problem = problem;
  r.config = ours.params;
  r.config_source = ours.source;
  r.time = ours.time;
  r.metric = work / (ours.time.median_ms * 1e-3) / 1e9;
  r.metric_unit = family.metric_unit;
  r.baseline = baseline;
  r.baseline_config = baseline_config;
  r.baseline_time = base;
  r.ratio = base.median_ms / ours.time.median_ms;  // 0 without a baseline
  r.ratio_low = base.p25_ms / ours.time.p75_ms;
  r.ratio_high = base.p75_ms / ours.time.p25_ms;
  if (base.sustained_ms > 0 && ours.time.sustained_ms > 0)
    r.sustained_ratio = base.sustained_ms / ours.time.sustained_ms;
  r.extra = ours.extra;
  return r;
}

}  // namespace

std::vector<BenchRow> run_bench(const std::vector<KernelFamily>& families, const KernelFamily& family,
                                const ProblemKey& problem, const Store& store, Worker& worker,
                                const CompileCache& cache, const MeasureSettings& settings, std::ostream& log,
                                const std::optional<Params>& config) {
  const DeviceLimits device = worker_device(worker);
  const double work = static_cast<double>(family.metric_work.eval(family.vars(problem, {})));
  std::vector<BenchRow> rows;
  const Measured ours =
      config ? measure_config(family, problem, *config, "given", device, worker, cache, settings)
             : best_or_default(family, problem, device, store, worker, cache, settings, log);

  // Library baselines run on the same buffers, right after our kernel.
  for (const auto& lib : family.library_baselines) {
    const wire::Reply reply =
        ask(worker, wire::message("baseline", baseline_request(family, problem, lib, settings)), 600);
    if (reply.outcome == "ok")
      rows.push_back(make_row(family, problem, ours, work, lib.library, "", timing_from(reply)));
    else
      log << "warning: baseline " << lib.library
          << " failed: " << (reply.reason.empty() ? reply.error : reply.reason) << "\n";
  }

  for (const auto& name : family.baselines) {
    const KernelFamily& base = find_family(families, name);
    // The baseline solves the same problem: same dimensions, and the arguments it knows. An argument it does
    // not know must be at our default (e.g. a boundary mode the seeds' kernel lacks), or it is skipped.
    std::map<std::string, std::int64_t> args;
    std::string missing;
    for (const auto& [k, v] : problem.args) {
      const bool known = std::any_of(base.problem_args.begin(), base.problem_args.end(),
                                     [&k = k](const ProblemArg& a) { return a.name == k; });
      const auto ours = std::find_if(family.problem_args.begin(), family.problem_args.end(),
                                     [&k = k](const ProblemArg& a) { return a.name == k; });
      if (known)
        args[k] = v;
      else if (ours == family.problem_args.end() || ours->default_value != v)
        missing = k;
    }
    if (!missing.empty()) {
      log << "note: " << base.name << " has no '" << missing << "' argument; not compared\n";
      continue;
    }
    const ProblemKey base_problem = base.make_problem(problem.dims, args);
    const Measured b = best_or_default(base, base_problem, device, store, worker, cache, settings, log);
    rows.push_back(make_row(family, problem, ours, work, base.name,
                            params_to_text(b.params) + " (" + b.source + ")", b.time));
  }
  if (rows.empty()) {  // no baseline declared, or none ran: our kernel's own row
    log << "note: " << family.name << " has no baseline to compare with; its own time only\n";
    rows.push_back(make_row(family, problem, ours, work, "", "", Timing{}));
  }
  return rows;
}

json bench_json(const std::vector<BenchRow>& rows, const DeviceLimits& device) {
  json results = json::array();
  for (const auto& r : rows) {
    json problem = {{"size", r.problem.size_text()}};
    for (const auto& [k, v] : r.problem.args) problem[k] = v;
    results.push_back({{"family", r.family},
                       {"problem", problem},
                       {"config", r.config},
                       {"config_source", r.config_source},
                       {"median_ms", r.time.median_ms},
                       {"p25_ms", r.time.p25_ms},
                       {"p75_ms", r.time.p75_ms},
                       {"spread", r.time.spread},
                       {"reps", r.time.reps},
                       {"metric", r.metric},
                       {"metric_unit", r.metric_unit},
                       {"baseline", r.baseline},
                       {"resources", r.extra}});
    if (!r.baseline.empty())
      results.back().update({{"baseline_config", r.baseline_config},
                             {"baseline_median_ms", r.baseline_time.median_ms},
                             {"baseline_spread", r.baseline_time.spread},
                             {"ratio", r.ratio},
                             {"ratio_low", r.ratio_low},
                             {"ratio_high", r.ratio_high}});
    if (r.time.sustained_ms > 0)
      results.back().update(
          {{"sustained_ms", r.time.sustained_ms}, {"sustained_clock_mhz", r.time.sustained_clock_mhz}});
    if (r.sustained_ratio > 0)
      results.back().update({{"baseline_sustained_ms", r.baseline_time.sustained_ms},
                             {"baseline_sustained_clock_mhz", r.baseline_time.sustained_clock_mhz},
                             {"sustained_ratio", r.sustained_ratio}});
  }
  return {{"schema_version", 1},
          {"device", json::parse(device.to_json())},
          {"tiletune", {{"version", TILETUNE_VERSION}, {"git_sha", TILETUNE_GIT_SHA}}},
          {"results", results}};
}

json merge_bench_json(const json& existing, const json& fresh) {
  json merged = fresh;
  const auto given = [](const json& r) { return r.value("config_source", "") == "given"; };
  auto same = [&](const json& a, const json& b) {
    return a.at("family") == b.at("family") && a.at("problem") == b.at("problem") &&
           a.at("baseline") == b.at("baseline") && given(a) == given(b) &&
           (!given(a) || a.value("config", json()) == b.value("config", json()));
  };
  json kept = json::array();
  if (existing.is_object() && existing.contains("results"))
    for (const auto& old : existing.at("results")) {
      bool replaced = false;
      for (const auto& r : fresh.at("results")) replaced = replaced || same(old, r);
      if (!replaced) kept.push_back(old);
    }
  for (const auto& r : fresh.at("results")) kept.push_back(r);
  merged["results"] = kept;
  return merged;
}

}  // namespace tiletune
