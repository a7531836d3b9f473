#include "tiletune/sweep.hpp"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include "requests.hpp"
#include "tiletune/strategy.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string duration_text(double s) {
  std::ostringstream out;
  if (s < 60)
    out << std::fixed << std::setprecision(1) << s << "s";
  else if (s < 3600)
    out << static_cast<int>(s) / 60 << "m" << std::setw(2) << std::setfill('0') << static_cast<int>(s) % 60
        << "s";
  else
    out << static_cast<int>(s) / 3600 << "h" << std::setw(2) << std::setfill('0')
        << (static_cast<int>(s) % 3600) / 60 << "m";
  return out.str();
}

}  // namespace

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
  if (options.strategy == "brute_force")
    throw SweepError(head + more +
                     " brute force measures; sample it with --strategy random --budget N (or annealing)");
  if (options.budget == 0)
    throw SweepError(head + more + " a sweep enumerates; --strategy " + options.strategy +
                     " samples it with --budget N");
  return SpaceWalk::sampled;
}

SweepSummary run_sweep(const KernelFamily& family, const ProblemKey& problem, Store& store, Worker& worker,
                       const CompileCache& cache, const SweepOptions& options, std::ostream& out,
                       const std::atomic<bool>* stop_requested) {
  const auto t0 = Clock::now();
  const SpaceWalk walk = sweep_space_walk(family, options);
  SweepSummary summary;
  const DeviceLimits device = worker_device(worker);
  const std::string problem_text =
      problem.size_text() + (problem.args.empty() ? "" : " " + problem.args_text());

  // A shard's sweep says so in its strategy, and resumes only a sweep of the same shard.
  const std::string strategy_text =
      options.strategy + (options.shard.whole() ? "" : " shard " + options.shard.text());
  const auto same_shard = [&](const SweepInfo& s) {
    return s.strategy.find(" shard ") == std::string::npos ? options.shard.whole()
                                                           : s.strategy == strategy_text;
  };
  std::set<std::string> done;
  if (options.resume) {
    std::optional<SweepInfo> prior;
    for (const auto& s : store.sweeps(family.name, "", problem))
      if (s.kind == "sweep" && s.status != "done" && same_shard(s)) {
        prior = s;
        break;
      }
    if (!prior)
      throw SweepError("nothing to resume: no unfinished sweep of " + family.name + " at " + problem_text +
                       (options.shard.whole() ? "" : " in shard " + options.shard.text()));
    const std::string id = "sweep " + std::to_string(prior->id);
    if (prior->device.uuid != device.uuid)
      throw SweepError("cannot resume " + id + ": it ran on " + prior->device.name + " (" +
                       prior->device.uuid + "), this GPU is " + device.name + " (" + device.uuid + ")");
    if (prior->template_hash != family.template_hash)
      throw SweepError("cannot resume " + id + ": the template of " + family.name + " changed since (hash " +
                       prior->template_hash + ", now " + family.template_hash + ")");
    if (prior->space_hash != family.space_hash())
      throw SweepError("cannot resume " + id + ": the parameter list of " + family.name + " changed since");
    summary.sweep_id = prior->id;
    for (auto& k : store.stored_param_keys(prior->id)) done.insert(std::move(k));
    out << "resuming sweep " << prior->id << ": " << done.size() << " configurations already stored\n";
  } else {
    const SweepSpec spec = sweep_spec(family, device, problem, "sweep", strategy_text);
    summary.sweep_id = store.begin_sweep(spec);
  }

  // What cannot run is pruned before anything reaches the GPU, and stored at once (in batches: a sampled
  // space may prune many points between two measurements).
  std::vector<ResultRecord> pruned;
  std::size_t pruned_count = 0;
  auto flush_pruned = [&] {
    if (pruned.empty()) return;
    store.add_results(summary.sweep_id, pruned);
    pruned.clear();
  };
  auto record_pruned = [&](const PlannedConfig& c) {
    pruned.push_back(to_record(c));
    ++summary.counts[c.outcome];
    ++pruned_count;
    if (pruned.size() >= 1024 && walk == SpaceWalk::sampled) flush_pruned();
  };

  std::vector<PlannedConfig> table;      // the enumerated space's runnable candidates
  std::unique_ptr<LazyCandidates> lazy;  // or a sampled space's, found as the strategy draws
  std::unique_ptr<Strategy> strategy;
  std::unique_ptr<BackgroundCompiler> compiler;
  std::vector<std::size_t> job_of;  // each candidate's compile job (kNoJob: none yet)
  constexpr std::size_t kNoJob = static_cast<std::size_t>(-1);
  std::size_t total = 0;
  if (walk == SpaceWalk::enumerated) {
    const std::vector<Params> space = enumerate_space(family);
    std::size_t in_shard = 0;
    for (std::size_t i = 0; i < space.size(); ++i) {
      const Params& params = space[i];
      if (!options.shard.contains(i)) continue;
      ++in_shard;
      if (done.count(params_to_text(params))) {
        ++summary.resumed_skipped;
        continue;
      }
      PlannedConfig c = prune_before_compile(family, device, problem, params);
      if (c.outcome == Outcome::ok)
        table.push_back(std::move(c));
      else
        record_pruned(c);
    }
    flush_pruned();

    std::vector<Params> candidate_params;
    for (const auto& c : table) candidate_params.push_back(c.params);
    strategy =
        make_strategy(options.strategy, family, candidate_params, options.budget, options.measure.seed);
    std::vector<CompileJob> jobs;
    job_of.assign(table.size(), kNoJob);
    for (std::size_t i : strategy->likely_order()) {
      job_of[i] = jobs.size();
      jobs.push_back(compile_job(family, device, table[i].params));
    }
    // Candidates outside the likely order (a budget cut) still need a job slot.
    for (std::size_t i = 0; i < table.size(); ++i)
      if (job_of[i] == kNoJob) {
        job_of[i] = jobs.size();
        jobs.push_back(compile_job(family, device, table[i].params));
      }
    compiler = std::make_unique<BackgroundCompiler>(std::move(jobs), cache, options.compile_jobs,
                                                    strategy->order_is_fixed());

    total = options.budget ? std::min(options.budget, table.size()) : table.size();
    out << family.name << " " << problem_text << " on " << device.name << ": " << space.size()
        << " configurations"
        << (options.shard.whole() ? std::string()
                                  : ", " + std::to_string(in_shard) + " in shard " + options.shard.text())
        << ", " << pruned_count << " pruned before compiling, " << total << " to measure"
        << (options.strategy != "brute_force" ? " (" + options.strategy + ")" : "") << "\n";
  } else {
    // Drawn points are pruned as they come; those stored before a resume, or of other shards, are passed
    // over.
    // The skip test outlives this block (the strategy draws through it): it owns the shard's space index.
    std::shared_ptr<const SpaceIndex> shard_space;
    if (!options.shard.whole()) shard_space = std::make_shared<const SpaceIndex>(family);
    lazy = std::make_unique<LazyCandidates>(
        family, [&](const Params& p) { return prune_before_compile(family, device, problem, p); },
        [&](PlannedConfig&& c) { record_pruned(c); },
        [&, shard_space](const Params& p) {
          if (!options.shard.whole()) {
            const auto index = shard_space->index_of(p);
            if (!index || !options.shard.contains(*index)) return true;
          }
          return done.count(params_to_text(p)) > 0;
        });
    strategy = make_lazy_strategy(options.strategy, *lazy, options.budget, options.measure.seed);
    compiler = std::make_unique<BackgroundCompiler>(std::vector<CompileJob>{}, cache, options.compile_jobs,
                                                    /*eager=*/false);
    summary.resumed_skipped = static_cast<int>(done.size());
    total = options.budget;
    out << family.name << " " << problem_text << " on " << device.name << ": " << lazy->space().size()
        << " configurations" << (options.shard.whole() ? "" : " (shard " + options.shard.text() + ")")
        << ", sampled lazily (" << options.strategy << "): up to " << total
        << " to measure, each drawn point pruned as it comes; the draws give up after " << kMaxFruitlessDraws
        << " in a row find nothing runnable\n";
  }
  std::vector<PlannedConfig>& candidates = lazy ? lazy->candidates() : table;
  // A sampled space's candidates get their compile job when first named.
  auto job_for = [&](std::size_t i) {
    if (job_of.size() < candidates.size()) job_of.resize(candidates.size(), kNoJob);
    if (job_of[i] == kNoJob)
      job_of[i] = compiler->add_jobs({compile_job(family, device, candidates[i].params)});
    return job_of[i];
  };
  out.flush();

  const double work = static_cast<double>(family.metric_work.eval(family.vars(problem, {})));
  const json setup = wire::message("setup", setup_request(family, problem, device, cache, options.measure));
  bool worker_ready = false;
  auto ensure_setup = [&] {
    if (worker_ready) return;
    const auto t = Clock::now();
    const wire::Reply reply = ask(worker, setup, 900);
    summary.gpu_busy_seconds += since(t);
    if (!reply.ok)
      throw SweepError("worker setup for " + family.name + " " + problem_text + " failed: " + reply.error);
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
    line << "[" << n << "/" << total << "] pruned " << pruned_count << ", failed " << failed << ", best "
         << (std::isfinite(best_ms) ? std::to_string(best_ms).substr(0, 7) + " ms " + best_text : "-")
         << ", elapsed " << duration_text(elapsed)
         << (final_line ? "" : ", ~" + duration_text(left) + " left");
    if (options.progress_line)
      out << "\r\033[K" << line.str() << (final_line ? "\n" : "") << std::flush;
    else
      out << line.str() << "\n" << std::flush;
  };

  while (!(stop_requested && stop_requested->load())) {
    if (options.time_limit_s > 0 && since(t0) >= options.time_limit_s) break;
    const auto pick = strategy->next(times);
    flush_pruned();  // what the draws pruned
    if (!pick) break;
    times.resize(candidates.size());  // a sampled space's table grows as it is drawn
    PlannedConfig& c = candidates[*pick];
    const auto tc = Clock::now();
    if (!strategy->order_is_fixed()) {  // compile the pick and what comes after it together
      std::vector<std::size_t> ahead = {job_for(*pick)};
      for (std::size_t i : strategy->upcoming()) ahead.push_back(job_for(i));
      compiler->prefetch(ahead);
    }
    CompileResult compiled = compiler->get(job_for(*pick), strategy->order_is_fixed());
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
      const std::string cubin =
          (cache.dir() / (c.cache_key.empty() ? compiler->key(job_for(*pick)) : c.cache_key)).string() +
          ".cubin";
      const auto tm = Clock::now();
      bool timed_out = false;
      const wire::Reply reply =
          ask(worker,
              wire::message("measure",
                            measure_request(family, problem, c.params, c.launch, cubin, options.measure)),
              timeout, &timed_out);
      summary.gpu_busy_seconds += since(tm);
      rec.measure_ms = since(tm) * 1e3;
      if (timed_out) {
        rec.outcome = Outcome::timeout;
        std::ostringstream why;
        why << "no result within " << std::setprecision(3) << timeout << " s; the worker was stopped";
        rec.reason = why.str();
        worker_ready = false;
      } else if (!reply.ok && reply.outcome.empty()) {
        rec.outcome = Outcome::runtime_failed;
        rec.reason = reply.error;
        worker_ready = false;
      } else {
        apply_measurement(rec, reply, work, family.metric_unit);
        if (reply.fatal) worker_ready = false;
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
    if (options.progress_line)
      progress(false);
    else if (new_best || rec.outcome != Outcome::ok ||
             (options.log_every && n % static_cast<std::size_t>(options.log_every) == 0)) {
      if (rec.outcome != Outcome::ok && rec.outcome != Outcome::pruned)
        out << "  " << params_to_text(rec.params) << ": " << to_string(rec.outcome) << ": "
            << printable(rec.reason.substr(0, rec.reason.find('\n'))) << "\n";
      progress(false);
    }
  }
  flush_pruned();
  summary.interrupted = stop_requested && stop_requested->load();
  summary.worker_restarts = worker.restarts();
  progress(true);
  if (const std::string why = strategy->stop_reason(); !why.empty()) out << why << "\n";
  store.finish_sweep(summary.sweep_id, summary.interrupted ? "interrupted" : "done");
  summary.best = store.best(family.name, device.name, problem);
  summary.seconds = since(t0);
  return summary;
}

}  // namespace tiletune
