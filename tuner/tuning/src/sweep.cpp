#include "tiletune/sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "requests.hpp"
#include "tiletune/guided.hpp"
#include "tiletune/strategy.hpp"
#include "tiletune/transfer.hpp"
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

// "I/N" from a stored strategy such as "random shard 3/8 on 2 GPUs"; empty for a whole sweep.
std::string shard_of(const std::string& strategy) {
  const auto at = strategy.find(" shard ");
  if (at == std::string::npos) return "";
  const auto from = at + 7;
  return strategy.substr(from, strategy.find(' ', from) - from);
}

// The guided strategy over an enumerated space: its model also sees what the plan knows of each candidate,
// and where the store holds sweeps of the family on other problems or devices, it starts from them.
std::vector<std::unique_ptr<Strategy>> guided_walker(const KernelFamily& family, const DeviceLimits& device,
                                                     const std::vector<PlannedConfig>& table,
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
  Transfer t = transfer_from(prior_sweeps(store, family.name, sweep_id), params);
  if (!t.line.empty()) {
    out << t.line << "\n";
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i].push_back(t.rank[i]);
    guided.first = std::move(t.first);
    guided.prior = std::move(t.rank);
  }
  std::vector<std::unique_ptr<Strategy>> walkers;
  walkers.push_back(make_guided_strategy(std::move(rows), options.budget, options.measure.seed, guided));
  return walkers;
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

SweepSummary run_sweep(const KernelFamily& family, const ProblemKey& problem, Store& store,
                       const std::vector<Worker*>& workers, const CompileCache& cache,
                       const SweepOptions& options, std::ostream& out,
                       const std::atomic<bool>* stop_requested) {
  const auto t0 = Clock::now();
  if (!nvrtc_unavailable().empty()) throw SweepError(nvrtc_unavailable());
  const SpaceWalk walk = sweep_space_walk(family, options);
  SweepSummary summary;
  const std::vector<DeviceLimits> devices = pool_devices(workers);
  const DeviceLimits& device = devices.front();
  const std::size_t lanes = workers.size();
  const std::string problem_text = problem.text();
  for (const auto& d : devices) summary.gpus.push_back({d.ordinal, d.uuid, 0, 0, 0});
  std::vector<int> restarts_before;  // the workers serve sweep after sweep: this one's restarts are the rise
  for (Worker* w : workers) restarts_before.push_back(w->restarts());

  std::set<std::string> done;
  std::optional<SweepInfo> prior;
  if (options.resume) {
    // A shard's sweep resumes only a sweep of the same shard.
    for (const auto& s : store.sweeps(family.name, "", problem))
      if (s.kind == "sweep" && s.status != "done" && shard_of(s.strategy) == options.shard.text() &&
          (devices.size() == 1 || std::any_of(devices.begin(), devices.end(), [&](const DeviceLimits& d) {
             return d.uuid == s.device.uuid;
           }))) {
        prior = s;
        break;
      }
    if (!prior)
      throw SweepError("nothing to resume: no unfinished sweep of " + family.name + " at " + problem_text +
                       (options.shard.whole() ? "" : " in shard " + options.shard.text()));
    const std::string id = "sweep " + std::to_string(prior->id);
    if (std::none_of(devices.begin(), devices.end(),
                     [&](const DeviceLimits& d) { return d.uuid == prior->device.uuid; }))
      throw SweepError(
          "cannot resume " + id + ": it ran on " + prior->device.name + " (" + prior->device.uuid + "), " +
          (lanes > 1 ? "not one of these GPUs" : "this GPU is " + device.name + " (" + device.uuid + ")"));
    if (prior->template_hash != family.template_hash)
      throw SweepError("cannot resume " + id + ": the template of " + family.name + " changed since (hash " +
                       prior->template_hash + ", now " + family.template_hash + ")");
    if (prior->space_hash != family.space_hash())
      throw SweepError("cannot resume " + id + ": the parameter list of " + family.name + " changed since");
    summary.sweep_id = prior->id;
    for (auto& k : store.stored_param_keys(prior->id)) done.insert(std::move(k));
    out << "resuming sweep " << prior->id << ": " << done.size() << " configurations already stored\n";
  }

  // What cannot run is pruned before anything reaches the GPU, and stored at once (in batches: a sampled
  // space may prune many points between two measurements). Before the sweep row exists (a new enumerated
  // sweep learns its strategy from the pruning), they wait.
  std::vector<ResultRecord> pruned;  // [pruned_stored, end) wait to be stored
  std::size_t pruned_stored = 0, pruned_count = 0;
  // Stores at most `limit` of them: an enumerated space's (up to a million) are stored a block at a time
  // while the GPUs measure, rather than ahead of the first measurement.
  auto flush_pruned = [&](std::size_t limit = static_cast<std::size_t>(-1)) {
    if (summary.sweep_id == 0) return;
    const std::size_t end = pruned.size() - pruned_stored > limit ? pruned_stored + limit : pruned.size();
    if (end > pruned_stored)
      store.add_results(summary.sweep_id, {pruned.begin() + static_cast<std::ptrdiff_t>(pruned_stored),
                                           pruned.begin() + static_cast<std::ptrdiff_t>(end)});
    pruned_stored = end;
    if (pruned_stored == pruned.size()) pruned.clear(), pruned_stored = 0;
  };
  auto record_pruned = [&](const PlannedConfig& c) {
    pruned.push_back(to_record(c));
    ++summary.counts[c.outcome];
    ++pruned_count;
    if (pruned.size() >= 1024 && walk == SpaceWalk::sampled) flush_pruned();
  };
  // The strategy as stored: a shard's and a pool's sweep say so.
  auto strategy_text = [&](const std::string& name) {
    std::string text = name + (options.shard.whole() ? "" : " shard " + options.shard.text());
    if (lanes > 1)
      text += " on " + std::to_string(lanes) + " GPUs" +
              (find_strategy(name).walker_per_lane ? " (" + std::to_string(lanes) + " walkers)" : "");
    return text;
  };
  auto begin = [&](const std::string& name) {
    summary.strategy = name;
    if (!prior)
      summary.sweep_id = store.begin_sweep(sweep_spec(family, device, problem, "sweep", strategy_text(name)));
  };

  std::vector<PlannedConfig> table;      // the enumerated space's runnable candidates
  std::unique_ptr<LazyCandidates> lazy;  // or a sampled space's, found as the strategy draws
  std::vector<std::unique_ptr<Strategy>> walkers;
  std::unique_ptr<BackgroundCompiler> compiler;
  std::vector<std::size_t> job_of;  // each candidate's compile job (kNoJob: none yet)
  constexpr std::size_t kNoJob = static_cast<std::size_t>(-1);
  std::size_t total = 0;
  if (walk == SpaceWalk::enumerated) {
    const std::vector<Params> space = enumerate_space(family);
    std::vector<std::size_t> todo;  // the space's indices in this shard and not stored before a resume
    for (std::size_t i = 0; i < space.size(); ++i) {
      if (!options.shard.contains(i)) continue;
      if (!done.empty() && done.count(params_to_text(space[i]))) {
        ++summary.resumed_skipped;
        continue;
      }
      todo.push_back(i);
    }
    const std::size_t in_shard = todo.size() + static_cast<std::size_t>(summary.resumed_skipped);
    // Pruning is pure: a block of the space at a time, on every core.
    const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 32);
    constexpr std::size_t kBlock = 1 << 16;
    std::vector<PlannedConfig> block;
    for (std::size_t first = 0; first < todo.size(); first += kBlock) {
      block.assign(std::min(kBlock, todo.size() - first), PlannedConfig{});
      std::vector<std::exception_ptr> failed(threads);
      const auto prune_part = [&](std::size_t part) {
        try {
          for (std::size_t j = part; j < block.size(); j += threads)
            block[j] = prune_before_compile(family, device, problem, space[todo[first + j]]);
        } catch (...) {
          failed[part] = std::current_exception();
        }
      };
      {
        std::vector<std::thread> pool;
        struct JoinAll {
          std::vector<std::thread>& threads;
          ~JoinAll() {
            for (auto& t : threads) t.join();
          }
        } join_all{pool};  // also when a thread cannot be started
        for (std::size_t t = 1; t < std::min(threads, block.size()); ++t) pool.emplace_back(prune_part, t);
        prune_part(0);
      }
      for (const auto& e : failed)
        if (e) std::rethrow_exception(e);
      for (auto& c : block)
        if (c.outcome == Outcome::ok)
          table.push_back(std::move(c));
        else
          record_pruned(c);
    }
    std::string why;
    const std::string name = resolve_strategy(options.strategy, table.size(), options.budget, &why);
    begin(name);

    std::vector<Params> candidate_params;
    for (const auto& c : table) candidate_params.push_back(c.params);
    walkers =
        find_strategy(name).reads_history
            ? guided_walker(family, device, table, store, summary.sweep_id, options, out)
            : make_strategies(name, family, candidate_params, options.budget, options.measure.seed, lanes);
    std::vector<CompileJob> jobs;
    job_of.assign(table.size(), kNoJob);
    for (std::size_t i : walkers.front()->likely_order()) {
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
                                                    walkers.front()->order_is_fixed());

    total = options.budget ? std::min(options.budget, table.size()) : table.size();
    out << family.name << " " << problem_text << " on " << device.name
        << (lanes > 1 ? " x" + std::to_string(lanes) : "") << ": " << space.size() << " configurations"
        << (options.shard.whole() ? std::string()
                                  : ", " + std::to_string(in_shard) + " in shard " + options.shard.text())
        << ", " << pruned_count << " pruned before compiling, " << total << " to measure"
        << (name != "brute_force" ? " (" + name + ")" : "") << "\n";
    if (!why.empty()) out << why << "\n";
  } else {
    const std::string name =
        options.strategy == "auto" ? (guided_unavailable().empty() ? "guided" : "random") : options.strategy;
    begin(name);
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
    walkers = make_lazy_strategies(name, *lazy, options.budget, options.measure.seed, lanes);
    compiler = std::make_unique<BackgroundCompiler>(std::vector<CompileJob>{}, cache, options.compile_jobs,
                                                    /*eager=*/false);
    summary.resumed_skipped = static_cast<int>(done.size());
    total = options.budget;
    out << family.name << " " << problem_text << " on " << device.name
        << (lanes > 1 ? " x" + std::to_string(lanes) : "") << ": " << lazy->space().size()
        << " configurations" << (options.shard.whole() ? "" : " (shard " + options.shard.text() + ")")
        << ", sampled lazily (" << name << "): up to " << total
        << " to measure, each drawn point pruned as it comes; the draws give up after " << kMaxFruitlessDraws
        << " in a row find nothing runnable\n";
  }
  summary.walkers = static_cast<int>(walkers.size());
  if (lanes > 1)
    out << "measuring on " << lanes << " GPUs:" <<
        [&] {
          std::string list;
          for (const auto& d : devices) list += " " + std::to_string(d.ordinal);
          return list;
        }()
        << (walkers.size() > 1 ? " (one annealing walker per GPU)"
                               : " (dealing out one " + summary.strategy + " order)")
        << "\n";
  const bool fixed_order = walkers.front()->order_is_fixed();
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

  // One thread per GPU (a lane) measures what this thread deals it; this thread alone draws from the
  // strategies and writes to the store. A lane holds one configuration at a time: it waits for its CUBIN,
  // sets its worker up when needed and measures.
  struct Task {
    std::size_t pick = 0, job = 0;
    PlannedConfig config;  // a copy: a sampled space's table grows meanwhile
    double timeout_s = 0;
  };
  struct Done {
    std::size_t pick = 0;
    ResultRecord record;
    double busy_s = 0, compile_wait_s = 0;
    bool measured = false;
  };
  struct Lane {
    std::optional<Task> task;
    std::optional<Done> done;
    std::exception_ptr error;
    bool busy = false, drained = false;
    std::vector<std::size_t> ahead;  // the jobs its walker will likely ask for next
  };
  std::vector<Lane> lane(lanes);
  std::mutex mutex;
  std::condition_variable changed;
  bool quit = false;

  auto measure = [&](std::size_t k, Task& t, bool& ready) {
    Done d;
    d.pick = t.pick;
    const auto tc = Clock::now();
    const CompileResult compiled = compiler->get(t.job, fixed_order);
    d.compile_wait_s = since(tc);
    PlannedConfig& c = t.config;
    apply_compile_result(c, compiled, devices[k]);
    d.record = to_record(c);
    if (c.outcome != Outcome::ok) return d;
    ResultRecord& rec = d.record;
    if (!ready) {
      const auto ts = Clock::now();
      const wire::Reply reply = ask(*workers[k], setup, 900);
      d.busy_s += since(ts);
      if (!reply.ok)
        throw SweepError("worker setup for " + family.name + " " + problem_text +
                         (lanes > 1 ? " on GPU " + std::to_string(devices[k].ordinal) : "") +
                         " failed: " + reply.error);
      ready = true;
    }
    const std::string cubin =
        (cache.dir() / (c.cache_key.empty() ? compiler->key(t.job) : c.cache_key)).string() + ".cubin";
    const auto tm = Clock::now();
    bool timed_out = false;
    const wire::Reply reply = ask(*workers[k],
                                  wire::message("measure", measure_request(family, problem, c.params,
                                                                           c.launch, cubin, options.measure)),
                                  t.timeout_s, &timed_out);
    d.busy_s += since(tm);
    rec.measure_ms = since(tm) * 1e3;
    if (timed_out) {
      rec.outcome = Outcome::timeout;
      std::ostringstream why;
      why << "no result within " << std::setprecision(3) << t.timeout_s << " s; the worker was stopped";
      rec.reason = why.str();
      ready = false;
    } else if (!reply.ok && reply.outcome.empty()) {
      rec.outcome = Outcome::runtime_failed;
      rec.reason = reply.error;
      ready = false;
    } else {
      apply_measurement(rec, reply, work, family.metric_unit);
      if (reply.fatal) ready = false;
    }
    d.measured = true;
    return d;
  };
  auto lane_main = [&](std::size_t k) {
    bool ready = false;  // the worker holds this problem's set-up
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return lane[k].task || quit; });
      if (quit || !lane[k].task) return;  // ending (an error on the dealing thread): drop what was dealt
      Task t = std::move(*lane[k].task);
      lane[k].task.reset();
      lock.unlock();
      std::optional<Done> d;
      std::exception_ptr error;
      try {
        d = measure(k, t, ready);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      lane[k].done = std::move(d);
      lane[k].error = error;
      changed.notify_all();
    }
  };
  std::vector<std::thread> threads;
  // Whatever ends the loop (an exception included), the lanes finish what they hold and end.
  struct Joiner {
    std::mutex& mutex;
    std::condition_variable& changed;
    bool& quit;
    std::vector<std::thread>& threads;
    ~Joiner() {
      {
        std::lock_guard<std::mutex> lock(mutex);
        quit = true;
      }
      changed.notify_all();
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } joiner{mutex, changed, quit, threads};
  for (std::size_t k = 0; k < lanes; ++k) threads.emplace_back(lane_main, k);

  // times[i]: candidate i's median; +inf when it failed, or while a lane measures it (so that no strategy
  // gives it again and budgets count it); nullopt before it is dealt.
  std::vector<std::optional<double>> times(candidates.size());
  constexpr double kInFlight = std::numeric_limits<double>::infinity();
  double best_ms = std::numeric_limits<double>::infinity();
  std::string best_text;
  int failed = 0;
  std::size_t n = 0;
  auto progress = [&](bool final_line) {
    const double elapsed = since(t0);
    const double left =
        n ? elapsed / static_cast<double>(n) * static_cast<double>(total - std::min(n, total)) : 0;
    std::ostringstream line;
    line << "[" << n << "/" << total << "] pruned " << pruned_count << ", failed " << failed << ", best "
         << (std::isfinite(best_ms) ? std::to_string(best_ms).substr(0, 7) + " ms " + best_text : "-")
         << ", elapsed " << duration_text(elapsed)
         << (final_line ? "" : ", ~" + duration_text(left) + " left");
    if (lanes > 1) {
      line << " |";
      for (const auto& g : summary.gpus)
        line << " GPU" << g.ordinal << " " << g.measured << " ("
             << static_cast<int>(elapsed > 0 ? 100 * g.busy_seconds / elapsed : 0) << "% busy)";
    }
    if (options.progress_line)
      out << "\r\033[K" << line.str() << (final_line ? "\n" : "") << std::flush;
    else
      out << line.str() << "\n" << std::flush;
  };
  auto record_done = [&](std::size_t k, Done& d) {
    ResultRecord& rec = d.record;
    auto& g = summary.gpus[k];
    g.busy_seconds += d.busy_s;
    summary.gpu_busy_seconds += d.busy_s;
    summary.compile_wait_seconds += d.compile_wait_s;
    if (d.measured) ++summary.measured, ++g.measured;
    times[d.pick] = rec.outcome == Outcome::ok ? *rec.median_ms : std::numeric_limits<double>::infinity();
    ++summary.counts[rec.outcome];
    store.add_results(summary.sweep_id, {rec});
    ++n;
    const bool new_best = rec.outcome == Outcome::ok && *rec.median_ms < best_ms;
    if (new_best) {
      summary.best_found_at = n;
      summary.best_found_seconds = since(t0);
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
  };
  auto deal = [&](std::size_t k) {
    Strategy& walker = *walkers[walkers.size() == 1 ? 0 : k];
    const auto pick = walker.next(times);
    if (walk == SpaceWalk::sampled) flush_pruned();  // what the draws pruned
    if (!pick) {
      if (walkers.size() == 1)
        for (auto& l : lane) l.drained = true;
      else
        lane[k].drained = true;
      return;
    }
    times.resize(candidates.size());  // a sampled space's table grows as it is drawn
    times[*pick] = kInFlight;
    Task t;
    t.pick = *pick;
    t.job = job_for(*pick);
    t.config = candidates[*pick];
    t.timeout_s = options.timeout_s;
    if (t.timeout_s <= 0)
      t.timeout_s = std::isfinite(best_ms)
                        ? std::max(10.0, 50.0 * best_ms * 1e-3 * (options.measure.max_reps + 2) + 5.0)
                        : 120.0;
    if (!fixed_order) {  // compile the picks in flight and what each walker asks for next, together
      lane[k].ahead = {t.job};
      for (std::size_t i : walker.upcoming()) lane[k].ahead.push_back(job_for(i));
      std::vector<std::size_t> all;
      for (std::size_t j = 0;; ++j) {  // interleaved, so that every lane's next CUBIN comes early
        bool any = false;
        for (const auto& l : lane)
          if (j < l.ahead.size()) all.push_back(l.ahead[j]), any = true;
        if (!any) break;
      }
      compiler->prefetch(all);
    }
    std::lock_guard<std::mutex> lock(mutex);
    lane[k].task = std::move(t);
    lane[k].busy = true;
    changed.notify_all();
  };

  std::exception_ptr error;
  bool dealing = true;
  for (;;) {
    if ((stop_requested && stop_requested->load()) ||
        (options.time_limit_s > 0 && since(t0) >= options.time_limit_s) || error)
      dealing = false;
    for (std::size_t k = 0; k < lanes && dealing; ++k) {
      bool idle = false;
      {
        std::lock_guard<std::mutex> lock(mutex);
        idle = !lane[k].busy && !lane[k].drained;
      }
      if (idle) deal(k);
    }
    std::vector<std::pair<std::size_t, Done>> finished;
    const bool backlog = pruned_stored < pruned.size();
    {
      std::unique_lock<std::mutex> lock(mutex);
      const auto any_done = [&] {
        return std::any_of(lane.begin(), lane.end(), [](const Lane& l) { return l.done || l.error; });
      };
      if (!any_done() && std::none_of(lane.begin(), lane.end(), [](const Lane& l) { return l.busy; }))
        break;  // nothing in flight and nothing more to deal
      // Waits in short steps, so that an interrupt or the time limit stops the dealing promptly; with
      // pruned configurations to store, does not wait at all.
      if (!backlog) changed.wait_for(lock, std::chrono::milliseconds(100), any_done);
      for (std::size_t k = 0; k < lanes; ++k) {
        if (lane[k].error && !error) error = lane[k].error;
        if (lane[k].done) finished.emplace_back(k, std::move(*lane[k].done));
        if (lane[k].done || lane[k].error) lane[k].busy = false;
        lane[k].done.reset();
        lane[k].error = nullptr;
      }
    }
    for (auto& [k, d] : finished) record_done(k, d);
    if (backlog) flush_pruned(4096);
  }
  flush_pruned();
  if (error) std::rethrow_exception(error);
  summary.interrupted = stop_requested && stop_requested->load();
  for (std::size_t k = 0; k < lanes; ++k) {
    summary.gpus[k].worker_restarts = workers[k]->restarts() - restarts_before[k];
    summary.worker_restarts += summary.gpus[k].worker_restarts;
  }
  progress(true);
  for (const auto& w : walkers)
    if (const std::string why = w->stop_reason(); !why.empty()) {
      out << why << "\n";
      break;
    }
  if (summary.best_found_at)
    store.set_best_found(summary.sweep_id, static_cast<std::int64_t>(summary.best_found_at),
                         summary.best_found_seconds);
  store.finish_sweep(summary.sweep_id, summary.interrupted ? "interrupted" : "done");
  summary.best = store.best(family.name, device.name, problem);
  summary.seconds = since(t0);
  return summary;
}

}  // namespace tiletune
