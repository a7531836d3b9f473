#include "search.hpp"

#include <ostream>

#include "tiletune/guided.hpp"
#include "tiletune/transfer.hpp"

namespace tiletune::sweep {

namespace {

constexpr std::size_t kNoJob = static_cast<std::size_t>(-1);

// What guided starts from: the newest sweep of each sibling family on this problem, then the family's own
// sweeps of other problems or devices, kMaxPriorSweeps in all, in the family's terms as it is now.
std::vector<PriorSweep> earlier_sweeps(const KernelFamily& family, const ProblemKey& problem,
                                       const Store& store, std::int64_t sweep_id,
                                       const SweepOptions& options) {
  std::vector<PriorSweep> prior = sibling_sweeps(store, options.siblings, problem);
  for (auto& p : prior_sweeps(store, family.name, sweep_id, kMaxPriorSweeps - prior.size()))
    prior.push_back(std::move(p));
  return conform(std::move(prior), family);
}

// Each candidate's grid and the device's SMs, for transfer to scale earlier sweeps' times by.
GridWaves grid_waves(const std::vector<PlannedConfig>& table, const DeviceLimits& device) {
  GridWaves w;
  w.sms = device.sm_count;
  for (const auto& c : table) w.grids.push_back(planned_grid(c, device));
  return w;
}

// The guided strategy over an enumerated space: its model also sees what the plan knows of each candidate,
// and where the store holds sweeps of the family on other problems or devices, or of its siblings on this
// problem, it starts from them.
std::unique_ptr<Strategy> guided_walker(const KernelFamily& family, const DeviceLimits& device,
                                        const ProblemKey& problem, const std::vector<PlannedConfig>& table,
                                        const Store& store, std::int64_t sweep_id,
                                        const SweepOptions& options, std::ostream& out) {
  std::vector<Params> params;
  for (const auto& c : table) params.push_back(c.params);
  auto rows = parameter_features(family, params);
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto plan = plan_features(table[i], device);
    rows[i].insert(rows[i].end(), plan.begin(), plan.end());
  }
  GuidedOptions guided;
  guided.plan_begin = family.parameters.size();
  guided.plan_count = plan_feature_names().size();
  std::vector<PriorSweep> prior = earlier_sweeps(family, problem, store, sweep_id, options);
  add_grids(prior, family, device);  // to scale their times by (a space walked lazily has no rank order)
  Transfer t = transfer_from(prior, params, 3, grid_waves(table, device));
  if (!t.line.empty()) {
    out << t.line << "\n";
    use_transfer(std::move(t), rows, guided);
  }
  return make_guided_strategy(std::move(rows), options.budget, options.measure.seed, guided);
}

}  // namespace

Search Search::enumerated(const std::string& strategy, const KernelFamily& family, const DeviceLimits& device,
                          const ProblemKey& problem, const std::vector<PlannedConfig>& table,
                          const Store& store, std::int64_t sweep_id, const SweepOptions& options,
                          std::size_t lanes, const CompileCache& cache, std::ostream& out) {
  Search s(family, device);
  if (find_strategy(strategy).reads_history) {
    s.walkers_.push_back(guided_walker(family, device, problem, table, store, sweep_id, options, out));
  } else {
    std::vector<Params> params;
    for (const auto& c : table) params.push_back(c.params);
    s.walkers_ = make_strategies(strategy, family, params, options.budget, options.measure.seed, lanes);
  }
  s.job_of_.assign(table.size(), kNoJob);
  std::vector<CompileJob> jobs;
  if (s.order_is_fixed()) {
    for (std::size_t i : s.walkers_.front()->likely_order()) {
      s.job_of_[i] = jobs.size();
      jobs.push_back(compile_job(family, device, table[i].params));
    }
    // Candidates outside the likely order (a budget cut) still need a job slot.
    for (std::size_t i = 0; i < table.size(); ++i)
      if (s.job_of_[i] == kNoJob) {
        s.job_of_[i] = jobs.size();
        jobs.push_back(compile_job(family, device, table[i].params));
      }
  }
  s.compiler_ =
      std::make_unique<BackgroundCompiler>(std::move(jobs), cache, options.compile_jobs, s.order_is_fixed());
  return s;
}

Search Search::lazy(const std::string& strategy, const KernelFamily& family, const DeviceLimits& device,
                    const ProblemKey& problem, LazyCandidates& candidates, const Store& store,
                    std::int64_t sweep_id, const SweepOptions& options, std::size_t lanes,
                    const CompileCache& cache, std::ostream& out) {
  Search s(family, device);
  s.walkers_ = make_lazy_strategies(strategy, candidates, options.budget, options.measure.seed, lanes);
  if (find_strategy(strategy).reads_history) {
    // Guided starts from the fastest configurations of the earlier sweeps that run here, and says so.
    GuidedOptions guided;
    const std::string line =
        lazy_transfer(earlier_sweeps(family, problem, store, sweep_id, options), candidates, guided);
    if (!line.empty()) {
      out << line << "\n";
      s.walkers_.front() =
          make_lazy_guided_strategy(candidates, options.budget, options.measure.seed, guided);
    }
  }
  s.compiler_ = std::make_unique<BackgroundCompiler>(std::vector<CompileJob>{}, cache, options.compile_jobs,
                                                     /*eager=*/false);
  return s;
}

void Search::watch_compiles() {
  if (order_is_fixed() || !compiler_->caching()) return;
  for (auto& w : walkers_) w->watch_compiles([this](std::size_t i) { return compiled(i); });
}

bool Search::compiled(std::size_t index) const {
  return index < job_of_.size() && job_of_[index] != kNoJob && compiler_->ready(job_of_[index]);
}

std::string Search::stop_reason() const {
  for (const auto& w : walkers_)
    if (std::string why = w->stop_reason(); !why.empty()) return why;
  return "";
}

std::string Search::remarks() const {
  std::string out;
  for (const auto& w : walkers_)
    if (std::string remark = w->remarks(); !remark.empty()) out += remark + "\n";
  return out;
}

std::size_t Search::job_for(std::size_t index, const std::vector<PlannedConfig>& candidates) {
  if (job_of_.size() < candidates.size()) job_of_.resize(candidates.size(), kNoJob);
  if (job_of_[index] == kNoJob)
    job_of_[index] = compiler_->add_jobs({compile_job(*family_, *device_, candidates[index].params)});
  return job_of_[index];
}

}  // namespace tiletune::sweep
