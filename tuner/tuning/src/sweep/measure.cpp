#include "measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "../requests.hpp"

namespace tiletune::sweep {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

ConfigMeasurer::ConfigMeasurer(const KernelFamily& family, const ProblemKey& problem,
                               const std::vector<Worker*>& workers, const std::vector<DeviceLimits>& devices,
                               const CompileCache& cache, BackgroundCompiler& compiler,
                               bool wait_for_compilers, const SweepOptions& options)
    : family_(family),
      problem_(problem),
      workers_(workers),
      devices_(devices),
      cache_(cache),
      compiler_(compiler),
      wait_for_compilers_(wait_for_compilers),
      options_(options),
      work_(static_cast<double>(family.metric_work.eval(family.vars(problem, {})))),
      setup_(
          wire::message("setup", setup_request(family, problem, devices.front(), cache, options.measure))) {}

LaneResult ConfigMeasurer::operator()(std::size_t k, LaneTask& task, bool& ready) const {
  LaneResult result;
  result.pick = task.pick;
  const auto tc = Clock::now();
  const CompileResult compiled = compiler_.get(task.job, wait_for_compilers_);
  result.compile_wait_s = since(tc);
  PlannedConfig& c = task.config;
  apply_compile_result(c, compiled, devices_[k]);
  result.record = to_record(c);
  if (c.outcome != Outcome::ok) return result;
  if (!ready) {
    set_up(k, result);
    ready = true;
  }
  measure(k, task, result, ready);
  return result;
}

void ConfigMeasurer::set_up(std::size_t k, LaneResult& result) const {
  const auto ts = Clock::now();
  const wire::Reply reply = ask(*workers_[k], setup_, 900);
  result.busy_s += since(ts);
  if (!reply.ok)
    throw SweepError("worker setup for " + family_.name + " " + problem_.text() +
                     (workers_.size() > 1 ? " on GPU " + std::to_string(devices_[k].ordinal) : "") +
                     " failed: " + reply.error);
}

void ConfigMeasurer::measure(std::size_t k, const LaneTask& task, LaneResult& result, bool& ready) const {
  const PlannedConfig& c = task.config;
  ResultRecord& rec = result.record;
  const std::string cubin =
      (cache_.dir() / (c.cache_key.empty() ? compiler_.key(task.job) : c.cache_key)).string() + ".cubin";
  const auto tm = Clock::now();
  bool timed_out = false;
  const wire::Reply reply = ask(*workers_[k],
                                wire::message("measure", measure_request(family_, problem_, c.params,
                                                                         c.launch, cubin, options_.measure)),
                                task.timeout_s, &timed_out);
  result.busy_s += since(tm);
  rec.measure_ms = since(tm) * 1e3;
  if (timed_out) {
    rec.outcome = Outcome::timeout;
    std::ostringstream why;
    why << "no result within " << std::setprecision(3) << task.timeout_s << " s; the worker was stopped";
    rec.reason = why.str();
    ready = false;
  } else if (!reply.ok && reply.outcome.empty()) {
    rec.outcome = Outcome::runtime_failed;
    rec.reason = reply.error;
    ready = false;
  } else {
    apply_measurement(rec, reply, work_, family_.metric_unit);
    if (reply.fatal) ready = false;
  }
  result.measured = true;
}

double config_timeout(const SweepOptions& options, double best_ms) {
  if (options.timeout_s > 0) return options.timeout_s;
  return std::isfinite(best_ms) ? std::max(10.0, 50.0 * best_ms * 1e-3 * (options.measure.max_reps + 2) + 5.0)
                                : 120.0;
}

}  // namespace tiletune::sweep
