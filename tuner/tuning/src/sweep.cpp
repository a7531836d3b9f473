#include "tiletune/sweep.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "requests.hpp"
#include "sweep/candidates.hpp"
#include "sweep/dealer.hpp"
#include "sweep/lanes.hpp"
#include "sweep/measure.hpp"
#include "sweep/printer.hpp"
#include "sweep/pruned_tally.hpp"
#include "sweep/recorder.hpp"
#include "sweep/resume.hpp"
#include "sweep/search.hpp"
#include "tiletune/guided.hpp"
#include "tiletune/strategy.hpp"

namespace tiletune {

using Clock = std::chrono::steady_clock;

DeviceLimits worker_device(Worker& worker) {
  const wire::Reply reply = ask(worker, wire::message("hello", nlohmann::json::object()), 120);
  if (!reply.ok) {
    std::string err = reply.error.empty() ? "the measuring worker did not start" : reply.error;
    if (err.rfind("no CUDA GPU", 0) != 0) err = "no CUDA GPU: " + err;
    throw SweepError(err);
  }
  return device_from_json(reply.summary);
}

SpaceWalk sweep_space_walk(const KernelFamily& family, const SweepOptions& options) {
  // Counted, never enumerated: the refusal comes before anything the size would allocate.
  const auto size = space_size(family);
  if (!size) throw SweepError(unaddressable_space(family));
  if (*size <= kMaxSpaceSize) return SpaceWalk::enumerated;
  const std::string head = family.name + ": the space has " + describe_space(family);
  const std::string more = ", more than the " + std::to_string(kMaxSpaceSize);
  if (options.strategy == "brute_force" || (options.strategy == "auto" && options.budget == 0))
    throw SweepError(head + more +
                     " brute force measures; sample it with --strategy random --budget N (or annealing)");
  if (options.budget == 0)
    throw SweepError(head + more + " a sweep enumerates; --strategy " + options.strategy +
                     " samples it with --budget N");
  return SpaceWalk::sampled;
}

namespace {

// The devices of a sweep's workers, which must all be one model: a sweep's results are one GPU model's.
std::vector<DeviceLimits> pool_devices(const std::vector<Worker*>& workers) {
  if (workers.empty()) throw SweepError("a sweep needs a measuring worker");
  std::vector<DeviceLimits> devices;
  for (Worker* w : workers) {
    devices.push_back(worker_device(*w));
    if (w->gpu() >= 0) devices.back().ordinal = w->gpu();
  }
  for (const auto& d : devices) {
    const DeviceLimits& first = devices.front();
    if (d.name != first.name || d.cc_major != first.cc_major || d.cc_minor != first.cc_minor ||
        d.sm_count != first.sm_count)
      throw SweepError("GPU " + std::to_string(d.ordinal) + " (" + d.name + ") is not the model of GPU " +
                       std::to_string(first.ordinal) + " (" + first.name + "): one sweep per model");
    for (const auto& e : devices)
      if (&e != &d && !d.uuid.empty() && e.uuid == d.uuid)
        throw SweepError("GPU " + d.uuid + " is named twice");
  }
  return devices;
}

}  // namespace

std::string resolve_strategy(const std::string& strategy, std::size_t runnable, std::size_t budget,
                             std::string* why) {
  if (strategy != "auto") return strategy;
  const bool whole = budget == 0 || runnable <= budget;
  // Guided where XGBoost can be opened; a random sample, saying why, where it cannot.
  const std::string sampler = guided_unavailable().empty() ? "guided" : "random";
  if (why)
    *why =
        "auto: " + std::to_string(runnable) + " runnable configurations, " +
        (whole ? (budget ? "within the budget of " + std::to_string(budget) + ": brute force"
                         : "no budget: brute force")
               : "more than the budget of " + std::to_string(budget) + ": " +
                     (sampler == "guided" ? "guided search for " : "a random sample of ") +
                     std::to_string(budget) + (sampler == "guided" ? "" : " (" + guided_unavailable() + ")"));
  return whole ? "brute_force" : sampler;
}

SweepSummary run_sweep(const KernelFamily& family, const ProblemKey& problem, Store& store, Worker& worker,
                       const CompileCache& cache, const SweepOptions& options, std::ostream& out,
                       const std::atomic<bool>* stop_requested) {
  return run_sweep(family, problem, store, std::vector<Worker*>{&worker}, cache, options, out,
                   stop_requested);
}

namespace {

// One sweep, stage by stage (see tuner/tuning/src/sweep/): resume, candidates, search, lanes and dealing,
// recording, printing. Holds what the stages share; each method is one step of run().
class SweepRun {
 public:
  SweepRun(const KernelFamily& family, const ProblemKey& problem, Store& store,
           const std::vector<Worker*>& workers, const CompileCache& cache, const SweepOptions& options,
           std::ostream& out, const std::atomic<bool>* stop_requested)
      : family_(family),
        problem_(problem),
        store_(store),
        workers_(workers),
        cache_(cache),
        options_(options),
        out_(out),
        stop_requested_(stop_requested),
        walk_(sweep_space_walk(family, options)),
        devices_(pool_devices(workers)),
        printer_(out, options),
        pruned_(store, summary_) {
    for (const auto& d : devices_) summary_.gpus.push_back({d.ordinal, d.uuid, 0, 0, 0});
    // The workers serve sweep after sweep: this one's restarts are the rise.
    for (Worker* w : workers) restarts_before_.push_back(w->restarts());
  }

  SweepSummary run() {
    if (options_.resume) resume();
    std::optional<sweep::Search> search =
        walk_ == SpaceWalk::enumerated ? start_enumerated() : start_sampled();
    summary_.walkers = static_cast<int>(search->walker_count());
    printer_.pool(devices_, search->walker_count(), summary_.strategy);
    const sweep::ConfigMeasurer measurer(family_, problem_, workers_, devices_, cache_, search->compiler(),
                                         search->order_is_fixed(), options_);
    sweep::Recorder recorder(store_, summary_, t0_, candidates_.list().size());
    {
      sweep::Lanes lanes(workers_.size(), std::cref(measurer));
      sweep::Dealer dealer(*search, candidates_, lanes, recorder, options_);
      dealer.run([&] { return keep_dealing(); },
                 [&](const LaneResult& r, bool new_best) {
                   printer_.recorded(progress(recorder), r.record, new_best);
                 });
    }
    finish(recorder, *search);
    return std::move(summary_);
  }

 private:
  using LaneResult = sweep::LaneResult;
  const DeviceLimits& device() const { return devices_.front(); }

  void resume() {
    resume_ = sweep::find_resume(store_, family_, problem_, devices_, options_.shard, options_.resume_sweep);
    summary_.sweep_id = resume_.prior->id;
    printer_.resuming(resume_.prior->id, resume_.done.size(), resume_.measured, options_.budget);
    if (!options_.budget) return;
    spent_ = resume_.measured >= options_.budget;
    options_.budget = spent_ ? 1 : options_.budget - resume_.measured;
  }

  // The strategy as stored: a shard's and a pool's sweep say so.
  std::string strategy_text(const std::string& name) const {
    const std::size_t lanes = workers_.size();
    std::string text = name + (options_.shard.whole() ? "" : " shard " + options_.shard.text());
    if (lanes > 1)
      text += " on " + std::to_string(lanes) + " GPUs" +
              (find_strategy(name).walker_per_lane ? " (" + std::to_string(lanes) + " walkers)" : "");
    return text;
  }

  // The sweep's row (a resumed one has it), once its strategy is known.
  void begin(const std::string& name) {
    summary_.strategy = name;
    if (!resume_.prior)
      summary_.sweep_id =
          store_.begin_sweep(sweep_spec(family_, device(), problem_, "sweep", strategy_text(name)));
  }

  sweep::SpaceLine space_line(const std::string& name) const {
    sweep::SpaceLine l;
    l.family = family_.name;
    l.problem = problem_.text();
    l.device = device().name;
    l.strategy = name;
    l.lanes = workers_.size();
    l.configurations = candidates_.space_size;
    l.shard = options_.shard.text();
    l.in_shard = candidates_.in_shard;
    l.pruned = pruned_.count();
    return l;
  }

  std::optional<sweep::Search> start_enumerated() {
    candidates_ =
        sweep::enumerated_candidates(family_, device(), problem_, options_.shard, resume_.done, pruned_);
    summary_.resumed_skipped = candidates_.resumed_skipped;
    std::string why;
    const std::string name =
        resolve_strategy(options_.strategy, candidates_.table.size(), options_.budget, &why);
    begin(name);
    pruned_.store();
    std::optional<sweep::Search> search =
        sweep::Search::enumerated(name, family_, device(), problem_, candidates_.table, store_,
                                  summary_.sweep_id, options_, workers_.size(), cache_, out_);
    total_ = options_.budget ? std::min(options_.budget, candidates_.table.size()) : candidates_.table.size();
    sweep::SpaceLine line = space_line(name);
    line.total = total_;
    printer_.enumerated(line, why);
    return search;
  }

  std::optional<sweep::Search> start_sampled() {
    const std::string name = options_.strategy == "auto"
                                 ? (guided_unavailable().empty() ? "guided" : "random")
                                 : options_.strategy;
    begin(name);
    candidates_ = sweep::lazy_candidates(family_, device(), problem_, options_.shard, resume_.done, pruned_);
    summary_.resumed_skipped = candidates_.resumed_skipped;
    std::optional<sweep::Search> search =
        sweep::Search::lazy(name, family_, device(), problem_, *candidates_.lazy, store_, summary_.sweep_id,
                            options_, workers_.size(), cache_, out_);
    total_ = options_.budget;
    sweep::SpaceLine line = space_line(name);
    line.total = total_;
    printer_.sampled(line);
    return search;
  }

  bool keep_dealing() const {
    if (spent_ || (stop_requested_ && stop_requested_->load())) return false;
    return !(options_.time_limit_s > 0 && since_start() >= options_.time_limit_s);
  }

  double since_start() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

  sweep::Progress progress(const sweep::Recorder& recorder) const {
    sweep::Progress p;
    p.recorded = recorder.recorded();
    p.total = total_;
    p.pruned = pruned_.count();
    p.failed = recorder.failed();
    p.best_ms = recorder.best_ms();
    p.best_params = recorder.best_params();
    p.elapsed_s = since_start();
    p.gpus = &summary_.gpus;
    return p;
  }

  void finish(const sweep::Recorder& recorder, const sweep::Search& search) {
    summary_.interrupted = stop_requested_ && stop_requested_->load();
    for (std::size_t k = 0; k < workers_.size(); ++k) {
      summary_.gpus[k].worker_restarts = workers_[k]->restarts() - restarts_before_[k];
      summary_.worker_restarts += summary_.gpus[k].worker_restarts;
    }
    printer_.finished(progress(recorder), search.stop_reason());
    printer_.lines(search.remarks());
    pruned_.store();  // what the draws of a sampled space pruned
    if (summary_.best_found_at)
      store_.set_best_found(summary_.sweep_id, static_cast<std::int64_t>(summary_.best_found_at),
                            summary_.best_found_seconds);
    store_.finish_sweep(summary_.sweep_id, summary_.interrupted ? "interrupted" : "done");
    summary_.best = store_.best(family_.name, device().name, problem_);
    summary_.seconds = since_start();
  }

  const KernelFamily& family_;
  const ProblemKey& problem_;
  Store& store_;
  const std::vector<Worker*>& workers_;
  const CompileCache& cache_;
  SweepOptions options_;  // a resumed sweep's budget is what is left of it
  std::ostream& out_;
  const std::atomic<bool>* stop_requested_;
  const Clock::time_point t0_ = Clock::now();
  SweepSummary summary_;
  SpaceWalk walk_;
  std::vector<DeviceLimits> devices_;
  std::vector<int> restarts_before_;
  sweep::Printer printer_;
  sweep::PrunedTally pruned_;
  sweep::ResumePoint resume_;
  sweep::Candidates candidates_;
  std::size_t total_ = 0;
  bool spent_ = false;  // a resumed sweep that had measured its whole budget
};

}  // namespace

SweepSummary run_sweep(const KernelFamily& family, const ProblemKey& problem, Store& store,
                       const std::vector<Worker*>& workers, const CompileCache& cache,
                       const SweepOptions& options, std::ostream& out,
                       const std::atomic<bool>* stop_requested) {
  if (!nvrtc_unavailable().empty()) throw SweepError(nvrtc_unavailable());
  return SweepRun(family, problem, store, workers, cache, options, out, stop_requested).run();
}

}  // namespace tiletune
