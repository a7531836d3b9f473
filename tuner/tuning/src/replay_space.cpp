// The space of a stored sweep, as replay reads it.
#include <algorithm>
#include <stdexcept>

#include "tiletune/guided.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/replay.hpp"
#include "tiletune/store.hpp"

namespace tiletune {

namespace {

// The median of the values present; `fallback` when there are none.
double median_of(std::vector<double> v, double fallback) {
  if (v.empty()) return fallback;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Whether the stored strategy measured every configuration (a sample cannot be replayed).
bool measured_everything(const std::string& strategy) {
  return strategy.rfind("brute_force", 0) == 0 || strategy == "kernel_tuner";
}

void check_sweep(const std::optional<SweepInfo>& info, std::int64_t id) {
  const std::string name = "sweep " + std::to_string(id);
  if (!info) throw std::invalid_argument(name + ": no such sweep in the database");
  if (info->status != "done")
    throw std::invalid_argument(name + ": status is " + info->status + ", replay needs a complete sweep");
  if (!measured_everything(info->strategy))
    throw std::invalid_argument(name + ": strategy " + info->strategy +
                                " measured a sample, replay needs every configuration (brute_force)");
}

}  // namespace

ReplaySpace replay_space_from_store(const Store& store, std::int64_t sweep_id) {
  const auto info = store.sweep(sweep_id);
  check_sweep(info, sweep_id);
  ReplaySpace space;
  space.family = info->family;
  space.problem = info->problem;
  space.name = info->family + " " + info->problem.text() + " " + info->device.name;
  std::vector<double> compile, measure;
  for (const auto& r : store.results(sweep_id)) {
    const ResultRecord& rec = r.record;
    if (rec.outcome == Outcome::pruned) continue;
    ReplayPoint p;
    p.params = rec.params;
    if (rec.outcome == Outcome::ok) p.median_ms = rec.median_ms;
    p.compiled = rec.outcome != Outcome::compile_failed;
    p.compile_ms = rec.compile_ms.value_or(-1);
    p.measure_ms = rec.measure_ms.value_or(-1);
    if (rec.compile_ms) compile.push_back(*rec.compile_ms);
    if (rec.measure_ms) measure.push_back(*rec.measure_ms);
    space.points.push_back(std::move(p));
  }
  if (!space.best_ms())
    throw std::invalid_argument("sweep " + std::to_string(sweep_id) + ": no configuration ran (nothing ok)");
  // A CUBIN from the cache, or an import without times: as long as a typical one.
  const double compile_fill = median_of(compile, 1000), measure_fill = median_of(measure, 100);
  for (auto& p : space.points) {
    if (p.compile_ms < 0) p.compile_ms = compile_fill;
    if (p.measure_ms < 0) p.measure_ms = p.median_ms ? std::max(measure_fill, *p.median_ms) : measure_fill;
  }
  sort_in_space_order(space);
  return space;
}

void sort_in_space_order(ReplaySpace& space) {
  const SpaceIndex index(replay_family(space));
  std::stable_sort(space.points.begin(), space.points.end(), [&](const ReplayPoint& a, const ReplayPoint& b) {
    return index.index_of(a.params) < index.index_of(b.params);
  });
}

void add_plan_features(ReplaySpace& space, const KernelFamily& family, const DeviceLimits& device,
                       const ProblemKey& problem) {
  for (auto& p : space.points) {
    const PlannedConfig c = prune_before_compile(family, device, problem, p.params);
    if (c.outcome != Outcome::ok)
      throw std::invalid_argument(space.name + ": " + params_to_text(p.params) +
                                  " no longer plans as runnable (" + c.reason +
                                  "): the family changed since the sweep");
    p.plan = plan_features(c, device);
  }
  space.plan_names = plan_feature_names();
}

}  // namespace tiletune
