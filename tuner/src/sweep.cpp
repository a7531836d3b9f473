#include "tiletune/sweep.hpp"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

#include "tiletune/strategy.hpp"

namespace tiletune {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string duration_text(double s) {
  std::ostringstream out;
  if (s < 60) out << std::fixed << std::setprecision(1) << s << "s";
  else if (s < 3600) out << static_cast<int>(s) / 60 << "m" << std::setw(2) << std::setfill('0') << static_cast<int>(s) % 60 << "s";
  else out << static_cast<int>(s) / 3600 << "h" << std::setw(2) << std::setfill('0') << (static_cast<int>(s) % 3600) / 60 << "m";
  return out.str();
}

}  // namespace

DeviceLimits worker_device(WorkerProcess& worker) {
  const auto reply = worker.request({{"op", "hello"}}, 120);
  if (reply.status != WorkerProcess::Reply::Status::ok)
    throw SweepError("the measuring worker did not start: " + (reply.detail.empty() ? std::string("timed out") : reply.detail));
  if (!reply.body.value("ok", false)) {
    std::string err = reply.body.value("error", "unknown error");
    if (err.rfind("no CUDA GPU", 0) != 0) err = "no CUDA GPU: " + err;
    throw SweepError(err);
  }
  return device_from_json(reply.body.at("device").dump());
}

json setup_request(const KernelFamily& family, const ProblemKey& problem, const MeasureSettings& settings) {
  const Vars vars = family.vars(problem, {});
  json buffers = json::array(), constants = json::array();
  for (const auto& a : family.arguments)
    if (a.kind == ArgKind::buffer)
      buffers.push_back({{"name", a.name}, {"count", a.count.eval(vars)}, {"role", a.role == BufferRole::output ? "output" : "input"}});
  for (const auto& c : family.constants) constants.push_back({{"name", c.name}, {"count", c.count.eval(vars)}});
  return {{"op", "setup"},           {"reference", family.reference.kind}, {"tolerance", family.reference.tolerance},
          {"seed", settings.seed},   {"vars", vars},                       {"buffers", buffers},
          {"constants", constants}};
}

json measure_request(const KernelFamily& family, const ProblemKey& problem, const Params& params,
                     const LaunchGeometry& launch, const std::string& cubin_path, const MeasureSettings& s) {
  const Vars vars = family.vars(problem, params);
  json args = json::array(), constants = json::array();
  for (const auto& a : family.arguments) {
    if (a.kind == ArgKind::buffer) args.push_back({{"buffer", a.name}});
    else args.push_back({{a.type, a.value.eval(vars)}});
  }
  for (const auto& c : family.constants) constants.push_back(c.name);
  return {{"op", "measure"},
          {"cubin_path", cubin_path},
          {"kernel", family.kernel},
          {"grid", launch.grid},
          {"block", launch.block},
          {"dynamic_smem", launch.dynamic_smem},
          {"args", args},
          {"constants", constants},
          {"min_reps", s.min_reps},
          {"max_reps", s.max_reps},
          {"budget_ms", s.budget_ms},
          {"target_spread", s.target_spread}};
}

void apply_measurement(ResultRecord& r, const json& reply, double work, const std::string& unit) {
  const auto outcome = outcome_from_string(reply.value("outcome", ""));
  if (!outcome) {
    r.outcome = Outcome::runtime_failed;
    r.reason = "worker: " + reply.value("error", std::string("no outcome in reply"));
    return;
  }
  r.outcome = *outcome;
  r.reason = reply.value("reason", "");
  if (reply.contains("error") && reply.at("error").is_number()) r.error = reply.at("error").get<double>();
  if (r.outcome != Outcome::ok) return;
  r.median_ms = reply.at("median_ms").get<double>();
  r.min_ms = reply.at("min_ms").get<double>();
  r.spread = reply.at("spread").get<double>();
  r.repetitions = reply.at("reps").get<int>();
  if (reply.value("sm_clock_mhz", 0.0) > 0) r.sm_clock_mhz = reply.at("sm_clock_mhz").get<double>();
  if (*r.median_ms > 0) r.metric = work / (*r.median_ms * 1e-3) / 1e9;
  r.metric_unit = unit;
}

SweepSummary run_sweep(const KernelFamily& family, const ProblemKey& problem, Store& store, WorkerProcess& worker,
                       const CompileCache& cache, const SweepOptions& options, std::ostream& out,
                       const std::atomic<bool>* stop_requested) {
  const auto t0 = Clock::now();
  SweepSummary summary;
  const DeviceLimits device = worker_device(worker);
  const std::string problem_text = problem.size_text() + (problem.args.empty() ? "" : " " + problem.args_text());

  std::set<std::string> done;
  if (options.resume) {
    std::optional<SweepInfo> prior;
    for (const auto& s : store.sweeps(family.name, "", problem))
      if (s.kind == "sweep" && s.status != "done") {
        prior = s;
        break;
      }
    if (!prior) throw SweepError("nothing to resume: no unfinished sweep of " + family.name + " at " + problem_text);
    const std::string id = "sweep " + std::to_string(prior->id);
    if (prior->device.uuid != device.uuid)
      throw SweepError("cannot resume " + id + ": it ran on " + prior->device.name + " (" + prior->device.uuid + "), this GPU is " +
                       device.name + " (" + device.uuid + ")");
    if (prior->template_hash != family.template_hash)
      throw SweepError("cannot resume " + id + ": the template of " + family.name + " changed since (hash " + prior->template_hash +
                       ", now " + family.template_hash + ")");
    if (prior->space_hash != family.space_hash())
      throw SweepError("cannot resume " + id + ": the parameter list of " + family.name + " changed since");
    summary.sweep_id = prior->id;
    for (auto& k : store.stored_param_keys(prior->id)) done.insert(std::move(k));
    out << "resuming sweep " << prior->id << ": " << done.size() << " configurations already stored\n";
  } else {
    const SweepSpec spec = sweep_spec(family, device, problem, "sweep", options.strategy);
    summary.sweep_id = store.begin_sweep(spec);
  }

  // Prune what cannot run before anything reaches the GPU; store those outcomes at once.
  std::vector<PlannedConfig> candidates;
  std::vector<ResultRecord> pruned;
  const std::vector<Params> space = enumerate_space(family);
  for (const auto& params : space) {
    if (done.count(params_to_text(params))) {
      ++summary.resumed_skipped;
      continue;
    }
    PlannedConfig c = prune_before_compile(family, device, problem, params);
    if (c.outcome == Outcome::ok) candidates.push_back(std::move(c));
    else {
      pruned.push_back(to_record(c));
      ++summary.counts[c.outcome];
    }
  }
  store.add_results(summary.sweep_id, pruned);

  std::vector<Params> candidate_params;
  for (const auto& c : candidates) candidate_params.push_back(c.params);
  auto strategy = make_strategy(options.strategy, family, candidate_params, options.budget, options.measure.seed);
  std::vector<CompileJob> jobs;
  std::vector<std::size_t> job_of(candidates.size(), 0);
  const auto order = strategy->likely_order();
  for (std::size_t j = 0; j < order.size(); ++j) {
    job_of[order[j]] = j;
    jobs.push_back(compile_job(family, device, candidates[order[j]].params));
  }
  // Candidates outside the likely order (a budget cut) still need a job slot.
  std::vector<bool> has_job(candidates.size(), false);
  for (auto i : order) has_job[i] = true;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (!has_job[i]) {
      job_of[i] = jobs.size();
      jobs.push_back(compile_job(family, device, candidates[i].params));
    }
  BackgroundCompiler compiler(jobs, cache, options.compile_jobs, strategy->order_is_fixed());

  const std::size_t total = options.budget ? std::min(options.budget, candidates.size()) : candidates.size();
  out << family.name << " " << problem_text << " on " << device.name << ": " << space.size()
      << " configurations, " << pruned.size() << " pruned before compiling, " << total << " to measure"
      << (options.strategy != "brute_force" ? " (" + options.strategy + ")" : "") << "\n";
  out.flush();

  const double work = static_cast<double>(family.metric_work.eval(family.vars(problem, {})));
  const json setup = setup_request(family, problem, options.measure);
  bool worker_ready = false;
  auto ensure_setup = [&] {
    if (worker_ready) return;
    const auto t = Clock::now();
    const auto reply = worker.request(setup, 900);
    summary.gpu_busy_seconds += since(t);
    if (reply.status != WorkerProcess::Reply::Status::ok || !reply.body.value("ok", false))
      throw SweepError("worker setup for " + family.name + " " + problem_text + " failed: " +
                       (reply.status == WorkerProcess::Reply::Status::ok ? reply.body.value("error", std::string("?"))
                                                                         : reply.detail.empty() ? "timed out" : reply.detail));
    worker_ready = true;
  };

  std::vector<std::optional<double>> times(candidates.size());
  double best_ms = std::numeric_limits<double>::infinity();
  std::string best_text;
  int failed = 0;
  std::size_t n = 0;
  auto progress = [&](bool final_line) {
    const double elapsed = since(t0);
    const double left = n ? elapsed / static_cast<double>(n) * static_cast<double>(total - n) : 0;
    std::ostringstream line;
    line << "[" << n << "/" << total << "] pruned " << pruned.size() << ", failed " << failed << ", best "
         << (std::isfinite(best_ms) ? std::to_string(best_ms).substr(0, 7) + " ms " + best_text : "-") << ", elapsed "
         << duration_text(elapsed) << (final_line ? "" : ", ~" + duration_text(left) + " left");
    if (options.progress_line) out << "\r\033[K" << line.str() << (final_line ? "\n" : "") << std::flush;
    else out << line.str() << "\n" << std::flush;
  };

  while (!(stop_requested && stop_requested->load())) {
    if (options.time_limit_s > 0 && since(t0) >= options.time_limit_s) break;
    const auto pick = strategy->next(times);
    if (!pick) break;
    PlannedConfig& c = candidates[*pick];
    const auto tc = Clock::now();
    if (!strategy->order_is_fixed()) {  // compile the pick and what comes after it together
      std::vector<std::size_t> ahead = {job_of[*pick]};
      for (std::size_t i : strategy->upcoming()) ahead.push_back(job_of[i]);
      compiler.prefetch(ahead);
    }
    CompileResult compiled = compiler.get(job_of[*pick], strategy->order_is_fixed());
    summary.compile_wait_seconds += since(tc);
    apply_compile_result(c, compiled, device);
    ResultRecord rec = to_record(c);
    if (c.outcome == Outcome::ok) {
      ensure_setup();
      double timeout = options.timeout_s;
      if (timeout <= 0)
        timeout = std::isfinite(best_ms)
                      ? std::max(10.0, 50.0 * best_ms * 1e-3 * (options.measure.max_reps + 2) + 5.0)
                      : 120.0;
      const std::string cubin = (cache.dir() / (c.cache_key.empty() ? cache.key(jobs[job_of[*pick]]) : c.cache_key)).string() + ".cubin";
      const auto tm = Clock::now();
      const auto reply = worker.request(measure_request(family, problem, c.params, c.launch, cubin, options.measure), timeout);
      summary.gpu_busy_seconds += since(tm);
      using Status = WorkerProcess::Reply::Status;
      if (reply.status == Status::timeout) {
        rec.outcome = Outcome::timeout;
        std::ostringstream why;
        why << "no result within " << std::setprecision(3) << timeout << " s; the worker was stopped";
        rec.reason = why.str();
        worker_ready = false;
      } else if (reply.status == Status::died) {
        rec.outcome = Outcome::runtime_failed;
        rec.reason = reply.detail;
        worker_ready = false;
      } else {
        apply_measurement(rec, reply.body, work, family.metric_unit);
        if (reply.body.value("fatal", false)) worker_ready = false;
      }
      ++summary.measured;
    }
    times[*pick] = rec.outcome == Outcome::ok ? *rec.median_ms : std::numeric_limits<double>::infinity();
    ++summary.counts[rec.outcome];
    store.add_results(summary.sweep_id, {rec});
    ++n;
    const bool new_best = rec.outcome == Outcome::ok && *rec.median_ms < best_ms;
    if (new_best) {
      best_ms = *rec.median_ms;
      best_text = "(" + params_to_text(rec.params) + ")";
    }
    if (rec.outcome != Outcome::ok) ++failed;
    if (options.progress_line) progress(false);
    else if (new_best || rec.outcome != Outcome::ok || (options.log_every && n % static_cast<std::size_t>(options.log_every) == 0)) {
      if (rec.outcome != Outcome::ok && rec.outcome != Outcome::pruned)
        out << "  " << params_to_text(rec.params) << ": " << to_string(rec.outcome) << ": "
            << rec.reason.substr(0, rec.reason.find('\n')) << "\n";
      progress(false);
    }
  }
  summary.interrupted = stop_requested && stop_requested->load();
  summary.worker_restarts = worker.restarts();
  progress(true);
  store.finish_sweep(summary.sweep_id, summary.interrupted ? "interrupted" : "done");
  summary.best = store.best(family.name, device.name, problem);
  summary.seconds = since(t0);
  return summary;
}

}  // namespace tiletune
