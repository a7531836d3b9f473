#include "tiletune/replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <set>

#include "simulated_compile_pool.hpp"
#include "tiletune/guided.hpp"
#include "tiletune/strategy.hpp"

namespace tiletune {

std::optional<double> ReplaySpace::best_ms() const {
  std::optional<double> best;
  for (const auto& p : points)
    if (p.median_ms && (!best || *p.median_ms < *best)) best = p.median_ms;
  return best;
}

KernelFamily replay_family(const ReplaySpace& space) {
  std::map<std::string, std::set<std::int64_t>> values;
  for (const auto& p : space.points)
    for (const auto& [name, v] : p.params) values[name].insert(v);
  KernelFamily family;
  family.name = space.family;
  for (const auto& [name, set] : values) {
    Parameter parameter{name, {set.begin(), set.end()}, *set.begin()};
    family.parameters.push_back(std::move(parameter));
  }
  return family;
}

GridWaves grid_waves_of(const ReplaySpace& space) {
  const auto column = [&](const char* name) {
    const auto it = std::find(space.plan_names.begin(), space.plan_names.end(), name);
    return static_cast<std::size_t>(it - space.plan_names.begin());
  };
  const std::size_t blocks = column("log2_blocks"), waves = column("waves"), per_sm = column("blocks_per_sm"),
                    threads = column("threads");
  if (std::max({blocks, waves, per_sm}) >= space.plan_names.size()) return {};
  GridWaves out;
  std::vector<double> sms;
  for (const auto& p : space.points) {
    const double g = std::exp2(p.plan[blocks]);
    out.grids.push_back({g, 0});
    if (p.plan[waves] > 0) sms.push_back(g / (p.plan[waves] * std::max(1.0f, p.plan[per_sm])));
  }
  if (sms.empty()) return {};
  std::nth_element(sms.begin(), sms.begin() + static_cast<std::ptrdiff_t>(sms.size() / 2), sms.end());
  out.sms = static_cast<int>(std::lround(sms[sms.size() / 2]));
  if (threads < space.plan_names.size())
    for (std::size_t i = 0; i < space.points.size(); ++i)
      out.grids[i].warps = resident_warps(out.grids[i].blocks, out.sms, space.points[i].plan[threads],
                                          space.points[i].plan[per_sm]);
  return out;
}

PriorSweep prior_sweep_of(const ReplaySpace& space) {
  PriorSweep p;
  p.label = space.name;
  for (const auto& point : space.points) p.results.emplace_back(point.params, point.median_ms);
  GridWaves grids = grid_waves_of(space);
  p.grids = std::move(grids.grids);
  p.sms = grids.sms;
  return p;
}

std::optional<ReplayStep> ReplayRun::reached(double best, double fraction) const {
  for (const auto& s : curve)
    if (s.best_ms <= best * (1 + fraction)) return s;
  return std::nullopt;
}

ReplayStat replay_stat(std::vector<double> values) {
  ReplayStat s;
  s.runs = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.reached = static_cast<std::size_t>(
      std::count_if(values.begin(), values.end(), [](double v) { return std::isfinite(v); }));
  const std::size_t n = values.size();
  s.median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  s.low = values.front();
  s.high = values.back();
  return s;
}

namespace {

// The sweep's strategies; guided sees the points' plan features too, as in a sweep.
std::vector<std::unique_ptr<Strategy>> make_walkers(const ReplaySpace& space, const KernelFamily& family,
                                                    const std::vector<Params>& params,
                                                    const std::string& name, std::uint64_t seed,
                                                    const ReplayOptions& options) {
  if (!find_strategy(name).reads_history)
    return make_strategies(name, family, params, options.budget, seed, options.lanes);
  auto rows = parameter_features(family, params);
  GuidedOptions guided;
  if (options.plan_features && !space.plan_names.empty()) {
    guided.plan_begin = family.parameters.size();
    guided.plan_count = space.plan_names.size();
    for (std::size_t i = 0; i < rows.size(); ++i)
      rows[i].insert(rows[i].end(), space.points[i].plan.begin(), space.points[i].plan.end());
  }
  guided.refit_when_idle = options.refit_when_idle;
  if (!options.gaussian_process) guided.improvement_picks = 0;
  if (!options.transfer.empty()) {
    use_transfer(transfer_from(conform(options.transfer, family), params, 3, grid_waves_of(space)), rows,
                 guided);
  }
  std::vector<std::unique_ptr<Strategy>> out;
  out.push_back(make_guided_strategy(std::move(rows), options.budget, seed, guided));
  return out;
}

// One measurement under way on a lane: it ends at `end`.
struct InFlight {
  double end;
  std::size_t lane, pick;
  bool operator>(const InFlight& o) const { return end != o.end ? end > o.end : lane > o.lane; }
};

// The sweep loop of run_sweep in simulated time: idle lanes are dealt the strategies' picks, each waits for
// its CUBIN and measures, and the earliest to finish is recorded first.
class Replayer {
 public:
  Replayer(const ReplaySpace& space, const KernelFamily& family, const std::string& name, std::uint64_t seed,
           const ReplayOptions& options)
      : space_(space), options_(options), times_(space.points.size()), lane_ahead_(options.lanes) {
    std::vector<Params> params;
    std::vector<double> compile_s;
    for (const auto& p : space.points) {
      params.push_back(p.params);
      compile_s.push_back(p.compile_ms * 1e-3);
    }
    walkers_ = make_walkers(space, family, params, name, seed, options);
    fixed_ = walkers_.front()->order_is_fixed();
    std::vector<std::size_t> eager;
    if (fixed_) {
      eager = walkers_.front()->likely_order();
      std::vector<bool> in(space.points.size());
      for (std::size_t i : eager) in[i] = true;
      for (std::size_t i = 0; i < in.size(); ++i)
        if (!in[i]) eager.push_back(i);
    }
    pool_ = std::make_unique<SimulatedCompilePool>(std::move(compile_s), options.compile_jobs, eager);
    if (!fixed_)
      for (auto& w : walkers_) w->watch_compiles([this](std::size_t i) { return pool_->compiled(i, now_); });
    drained_.assign(options.lanes, false);
  }

  ReplayRun run() {
    const double best = space_.best_ms().value_or(0);
    ReplayRun out;
    double best_so_far = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < options_.lanes; ++k) deal(k, 0);
    while (!flight_.empty()) {
      const InFlight f = flight_.top();
      flight_.pop();
      const auto& p = space_.points[f.pick];
      times_[f.pick] = p.median_ms ? *p.median_ms : std::numeric_limits<double>::infinity();
      best_so_far = std::min(best_so_far, *times_[f.pick]);
      out.curve.push_back({out.curve.size() + 1, f.end, best_so_far, f.pick});
      if (options_.stop_within >= 0 && best_so_far <= best * (1 + options_.stop_within)) break;
      deal(f.lane, f.end);
    }
    const auto use = pool_->usage(out.curve.empty() ? 0 : out.curve.back().seconds, asked_);
    out.compiles = use.started;
    out.unused_compiles = use.unused;
    out.compile_busy_s = use.busy_s;
    out.compile_wait_s = wait_s_;
    return out;
  }

 private:
  void deal(std::size_t k, double t) {
    if (drained_[k]) return;
    Strategy& walker = *walkers_[walkers_.size() == 1 ? 0 : k];
    now_ = t;
    const auto pick = walker.next(times_);
    if (!pick) {
      if (walkers_.size() == 1)
        drained_.assign(drained_.size(), true);
      else
        drained_[k] = true;
      return;
    }
    times_[*pick] = kInFlight;  // never asked for twice
    if (!fixed_) prefetch(k, *pick, walker.upcoming(), t);
    const ReplayPoint& p = space_.points[*pick];
    const double ready = pool_->ready_at(*pick, t, fixed_);
    asked_[*pick] = true;
    wait_s_ += ready - t;
    flight_.push({ready + (p.compiled ? p.measure_ms * 1e-3 : 0.0), k, *pick});
  }

  // As run_sweep does: the picks in flight and what each walker asks for next, interleaved over the lanes.
  void prefetch(std::size_t k, std::size_t pick, const std::vector<std::size_t>& upcoming, double t) {
    lane_ahead_[k] = {pick};
    lane_ahead_[k].insert(lane_ahead_[k].end(), upcoming.begin(), upcoming.end());
    pool_->prefetch(t, interleave(lane_ahead_));
  }

  const ReplaySpace& space_;
  ReplayOptions options_;
  std::vector<std::optional<double>> times_;
  std::vector<std::unique_ptr<Strategy>> walkers_;
  bool fixed_ = true;
  std::unique_ptr<SimulatedCompilePool> pool_;
  std::vector<std::vector<std::size_t>> lane_ahead_;
  std::vector<bool> drained_;
  std::vector<bool> asked_ = std::vector<bool>(space_.points.size());  // dealt to a lane
  double wait_s_ = 0;                                                  // lanes waiting for a CUBIN
  double now_ = 0;                                                     // the simulated time of a deal
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> flight_;
};

}  // namespace

ReplayRun replay(const ReplaySpace& space, const KernelFamily& family, const std::string& name,
                 std::uint64_t seed, const ReplayOptions& options) {
  ReplayOptions o = options;
  o.lanes = std::max<std::size_t>(o.lanes, 1);
  return Replayer(space, family, name, seed, o).run();
}

}  // namespace tiletune
