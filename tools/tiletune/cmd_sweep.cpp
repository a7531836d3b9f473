#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <deque>
#include <exception>
#include <iostream>
#include <memory>
#include <thread>

#include "cli.hpp"
#include "input_option.hpp"
#include "tiletune/capture.hpp"
#include "tiletune/strategy.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune::cli {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_interrupt(int) { g_stop.store(true); }

void print_summary(const KernelFamily& family, const ProblemKey& problem, const SweepSummary& s,
                   const Store& store) {
  std::cout << "\n"
            << family.name << " at " << problem.text() << ": sweep " << s.sweep_id
            << (s.interrupted ? " interrupted" : " done") << " in " << fmt(s.seconds, 1) << " s (GPU busy "
            << fmt(s.gpu_busy_seconds, 1) << " s, "
            << fmt(s.seconds > 0 ? 100 * s.gpu_busy_seconds / (s.seconds * std::max<double>(1, s.gpus.size()))
                                 : 0,
                   0)
            << (s.gpus.size() > 1 ? "% of " + std::to_string(s.gpus.size()) + " GPUs" : std::string("%"))
            << "; waited on NVRTC " << fmt(s.compile_wait_seconds, 1) << " s; choosing "
            << fmt(s.choosing_seconds, 1) << " s)"
            << (s.best_found_at ? "; best found at measurement " + std::to_string(s.best_found_at) +
                                      ", after " + fmt(s.best_found_seconds, 1) + " s"
                                : std::string())
            << "\n";
  if (s.gpus.size() > 1)
    for (const auto& g : s.gpus)
      std::cout << "  GPU " << g.ordinal << ": " << g.measured << " measured, busy " << fmt(g.busy_seconds, 1)
                << " s (" << fmt(s.seconds > 0 ? 100 * g.busy_seconds / s.seconds : 0, 0)
                << "%), worker restarts " << g.worker_restarts << "\n";
  std::vector<std::vector<std::string>> rows;
  int n = 0;
  for (const auto& r : store.results(s.sweep_id, 10)) {
    if (r.record.outcome != Outcome::ok || ++n > 10) break;
    const auto& x = r.record;
    rows.push_back({std::to_string(n), params_to_text(x.params), fmt(x.median_ms, 4),
                    x.spread ? fmt(100 * *x.spread, 1) + "%" : "-",
                    x.metric ? fmt(*x.metric, 1) + " " + x.metric_unit : "-",
                    x.registers ? std::to_string(*x.registers) : "-",
                    x.occupancy ? fmt(100 * *x.occupancy, 0) + "% " + x.occupancy_limiter : "-",
                    x.sm_clock_mhz ? fmt(*x.sm_clock_mhz, 0) : "-"});
  }
  print_table(std::cout, {"#", "config", "median ms", "spread", "metric", "regs", "occupancy", "SM MHz"},
              rows);
  std::cout << "outcomes:";
  for (const auto& [o, k] : s.counts) std::cout << " " << to_string(o) << " " << k;
  if (s.resumed_skipped) std::cout << " (+" << s.resumed_skipped << " stored before the resume)";
  std::cout << "; worker restarts " << s.worker_restarts << "\n";
}

// --gpus: "all" (every GPU present) or a list of device indices, e.g. "0,1".
std::vector<int> parse_gpus(const std::string& text) {
  std::vector<int> out;
  if (text == "all") {
    std::string why;
    for (const auto& d : present_devices(&why)) out.push_back(d.ordinal);
    if (out.empty()) throw SweepError(why.empty() ? "no CUDA GPU" : why);
    return out;
  }
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("sweep: --gpus takes 'all' or device indices separated by commas (e.g. 0,1), not '" +
                       text + "'");
    const int gpu = std::stoi(item);
    if (std::find(out.begin(), out.end(), gpu) != out.end())
      throw UsageError("sweep: --gpus names GPU " + item + " twice");
    out.push_back(gpu);
    at = comma + 1;
  }
  return out;
}

// A pool's device indices as --gpus takes them: "0,1".
std::string gpu_list(const std::vector<Worker*>& pool) {
  std::string list;
  for (const Worker* w : pool) {
    if (!list.empty()) list += ',';
    list += std::to_string(w->gpu());
  }
  return list;
}

// The GPUs' workers, one sweep pool per GPU model (a pool's GPUs share every sweep; models never mix).
struct Pools {
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<std::vector<Worker*>> pools;
  std::vector<std::string> names;               // each pool's "GPUs 0,1 (NVIDIA H100 80GB HBM3)"
  std::vector<std::vector<std::string>> uuids;  // each pool's GPUs
};

Pools start_pools(const std::vector<int>& gpus) {
  Pools p;
  // The workers start together: each spends a second or two bringing CUDA up on its GPU.
  std::vector<DeviceLimits> found(gpus.size());
  std::vector<std::exception_ptr> failed(gpus.size());
  {
    for (int gpu : gpus) p.workers.push_back(std::make_unique<WorkerProcess>(gpu));
    std::vector<std::thread> starting;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      starting.emplace_back([&found, &failed, i, worker = p.workers[i].get()] {
        try {
          found[i] = worker_device(*worker);  // says "no CUDA GPU" before anything else
        } catch (...) {
          failed[i] = std::current_exception();
        }
      });
    }
    for (auto& t : starting) t.join();
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (!failed[i]) continue;
    if (gpus.size() == 1) std::rethrow_exception(failed[i]);
    try {
      std::rethrow_exception(failed[i]);
    } catch (const std::exception& e) {  // which of the GPUs named
      throw SweepError("GPU " + std::to_string(gpus[i]) + ": " + e.what());
    }
  }
  std::vector<std::string> models;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const DeviceLimits& d = found[i];
    const std::string model = d.name + "/" + d.arch() + "/" + std::to_string(d.sm_count);
    const auto at = std::find(models.begin(), models.end(), model) - models.begin();
    if (static_cast<std::size_t>(at) == models.size()) {
      models.push_back(model);
      p.pools.emplace_back();
      p.names.push_back(d.name);
      p.uuids.emplace_back();
    }
    p.pools[at].push_back(p.workers[i].get());
    p.uuids[at].push_back(d.uuid);
  }
  for (std::size_t i = 0; i < p.pools.size(); ++i)
    p.names[i] = (p.pools[i].size() > 1 ? "GPUs " : "GPU ") + gpu_list(p.pools[i]) + " (" + p.names[i] + ")";
  return p;
}

// The option that names a pool's GPUs again (for the resume hint).
std::string gpu_option(const std::vector<Worker*>& pool) {
  return (pool.size() > 1 ? " --gpus " : " --gpu ") + gpu_list(pool);
}

// The main job's line after each problem: how far, and how long the rest should take, estimated from the
// configurations each problem plans to measure.
void print_overall(std::size_t done, std::size_t total, double spent, double planned_done,
                   double planned_left) {
  std::cout << "== " << done << "/" << total << " problems done, " << fmt(spent, 0) << " s spent";
  if (done < total && planned_done > 0)
    std::cout << ", about " << fmt(spent / planned_done * planned_left, 0) << " s left";
  std::cout << "\n";
}

// A copy of `family` filled from a captured problem's saved inputs (paths relative to the capture file's
// folder); a missing or malformed file is one line naming the capture file, its line and the field.
KernelFamily with_saved_inputs(const KernelFamily& family, const CapturedProblem& p, const std::string& path,
                               const std::string& where) {
  KernelFamily copy = family;
  for (const auto& [name, file] : p.inputs) {
    try {
      use_input_file(copy, name, std::filesystem::path(path).parent_path() / file);
    } catch (const std::exception& e) {
      std::string why = e.what();
      const std::string prefix = "--input " + name + ": ";
      if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
      throw CaptureError(where + "field 'inputs." + name + "': " + why);
    }
  }
  return copy;
}

// One problem to sweep, and the budget its family asks for it in the main job (0: the run's own).
struct WorkItem {
  const KernelFamily* family;
  ProblemKey problem;
  std::size_t budget = 0;
};

// A problem's options: the run's, with the budget its family asks for where it asks for one.
SweepOptions options_for(const WorkItem& item, const SweepOptions& o) {
  SweepOptions one = o;
  if (item.budget) one.budget = item.budget;
  return one;
}

// The problems of a capture file, each once, for the families loaded, with their saved inputs where the file
// has them (those families' copies are kept in `filled`); a family not loaded, a problem it refuses or a bad
// saved input is one line naming the file and the line.
std::vector<WorkItem> captured_work(const std::vector<KernelFamily>& fams, const std::string& path,
                                    std::deque<KernelFamily>& filled) {
  std::vector<WorkItem> work;
  for (const CapturedProblem& p : read_capture(path)) {
    const std::string where = path + ": line " + std::to_string(p.line) + ": ";
    const auto it =
        std::find_if(fams.begin(), fams.end(), [&](const KernelFamily& f) { return f.name == p.family; });
    if (it == fams.end()) throw CaptureError(where + "unknown family '" + p.family + "'");
    ProblemKey problem;
    try {
      problem = it->make_problem(parse_size_text(p.size), parse_args_text(p.args));
    } catch (const std::exception& e) {
      throw CaptureError(where + e.what());
    }
    const bool seen = std::any_of(work.begin(), work.end(), [&](const auto& w) {
      return w.family->name == p.family && w.problem == problem;
    });
    if (seen) continue;
    const KernelFamily* family = &*it;
    if (!p.inputs.empty()) family = &filled.emplace_back(with_saved_inputs(*it, p, path, where));
    work.push_back({family, problem});
  }
  if (work.empty()) throw CaptureError(path + ": holds no problem to tune");
  return work;
}

}  // namespace

namespace {

void add_sweep_options(po::options_description& desc, SweepOptions& o, std::string& cache_dir) {
  desc.add_options()(
      "gpus", po::value<std::string>(),
      "measure on several GPUs at once: 'all' or indices such as 0,1 (one sweep per GPU model)")(
      "resume", "continue the newest unfinished sweep of this family and problem on this GPU")(
      "strategy", po::value(&o.strategy)->default_value(o.strategy),
      (strategy_help() +
       "auto: brute force up to --budget runnable configurations, guided (or a random sample where XGBoost "
       "cannot be opened) beyond; the default without --family")
          .c_str())(
      "budget", po::value(&o.budget)->default_value(0),
      ("measure at most this many configurations (0: all; a space over " + std::to_string(kMaxSpaceSize) +
       " needs one; " + std::to_string(kMainJobBudget) + " without --family)")
          .c_str())("time", po::value(&o.time_limit_s)->default_value(0),
                    "stop after this many seconds (0: no limit)")(
      "timeout", po::value(&o.timeout_s)->default_value(0),
      "per-configuration limit in seconds (0: from the best time so far)")(
      "jobs,j", po::value(&o.compile_jobs)->default_value(o.compile_jobs), "compiler processes")(
      "cache", po::value(&cache_dir)->default_value(cache_dir), "compile cache folder")(
      "min-reps", po::value(&o.measure.min_reps)->default_value(o.measure.min_reps), "timed runs at least")(
      "max-reps", po::value(&o.measure.max_reps)->default_value(o.measure.max_reps), "timed runs at most")(
      "rep-budget-ms", po::value(&o.measure.budget_ms)->default_value(o.measure.budget_ms),
      "time budget for one configuration's runs")(
      "target-spread", po::value(&o.measure.target_spread)->default_value(o.measure.target_spread),
      "stop repeating below this (p75-p25)/median")("seed",
                                                    po::value(&o.measure.seed)->default_value(o.measure.seed),
                                                    "seed of the random inputs and strategies")(
      "shard", po::value<std::string>(),
      "I/N: measure only part I (0 to N-1) of N of each space, e.g. one Slurm array task's; merge the "
      "databases with 'tiletune merge'")(
      "input", po::value<std::vector<std::string>>()->composing(),
      "NAME=PATH: fill the input buffer or constant NAME from this file (.npy, else raw little-endian); "
      "repeatable; the file's hash keeps these results apart from other data's")(
      "captured", po::value<std::string>(),
      "tune exactly the problems in this capture file (what the runtime served without an exact match; "
      "--strategy auto --budget as the main job unless given)");
}

const std::string kSweepHelp =
    "Measures every runnable configuration of a family on the GPU in a separate worker process, validates\n"
    "each against a float64 reference and stores every outcome. Without --family: every built-in family\n"
    "at its default sizes (the main job: --strategy auto --budget " +
    std::to_string(kMainJobBudget) +
    " unless given). Random and annealing with\n"
    "--budget sample a space of any size (one that a 64-bit index holds) without building it. With --gpus\n"
    "one sweep measures on several GPUs of one model at once.";

using Work = std::vector<WorkItem>;

struct SweepArgs {
  std::vector<int> gpus;
  std::string captured;  // the capture file to tune, if any
  bool main_job = false;
  bool family_budgets = false;  // the main job without --budget: each family's default_budgets apply
};

// The problems to sweep: the capture file's, the one given, or every family's default sizes (the main job,
// each with the budget its family asks there where `family_budgets`).
Work sweep_work(const std::vector<KernelFamily>& fams, const Common& c, const SweepArgs& args,
                std::deque<KernelFamily>& filled) {
  Work work;
  if (!args.captured.empty()) return captured_work(fams, args.captured, filled);
  if (!c.family.empty()) {
    const KernelFamily& f = find_family(fams, c.family);
    work.push_back({&f, problem_for(f, c)});
    return work;
  }
  if (!c.size.empty()) throw UsageError("sweep: --size needs --family");
  if (!c.args.empty()) throw UsageError("sweep: --arg needs --family");
  for (const auto& f : fams)
    for (const auto& size : f.default_sizes) {
      const auto budget = f.default_budgets.find(size);
      const bool asks = args.family_budgets && budget != f.default_budgets.end();
      work.push_back({&f, default_problem(f, size), asks ? budget->second : 0});
    }
  return work;
}

// A space too large for this strategy is refused, with its size, before the worker or the database start.
// What each problem plans to measure weighs the main job's estimate.
std::vector<double> planned_measurements(const Work& work, const SweepOptions& o) {
  std::vector<double> planned;
  for (const auto& item : work) {
    const SweepOptions one = options_for(item, o);
    sweep_space_walk(*item.family, one);
    const auto size = space_size(*item.family);
    const double n = size ? static_cast<double>(*size) : 0;
    planned.push_back(one.budget ? std::min(n, static_cast<double>(one.budget)) : n);
  }
  return planned;
}

struct SweptProblem {
  const KernelFamily* family;
  ProblemKey problem;
  std::string gpus;
  SweepSummary summary;
};

void print_main_job_table(const std::vector<SweptProblem>& rows, bool several_models, double seconds) {
  std::cout << "\nbest of every problem (" << fmt(seconds, 0) << " s):\n";
  std::vector<std::vector<std::string>> table;
  for (const auto& r : rows) {
    const auto& b = r.summary.best;
    std::vector<std::string> row = {r.family->name, r.problem.text(), r.summary.strategy,
                                    std::to_string(r.summary.measured)};
    if (several_models) row.insert(row.begin() + 2, r.gpus);
    if (b) {
      row.push_back(fmt(b->record.median_ms, 4));
      row.push_back(b->record.metric ? fmt(*b->record.metric, 1) + " " + b->record.metric_unit : "-");
      row.push_back(params_to_text(b->record.params));
    } else {
      row.insert(row.end(), {"-", "-", "nothing ran"});
    }
    table.push_back(row);
  }
  std::vector<std::string> header = {"family",  "problem", "strategy",     "measured",
                                     "best ms", "metric",  "configuration"};
  if (several_models) header.insert(header.begin() + 2, "GPUs");
  print_table(std::cout, header, table);
}

void print_main_job_head(const Work& work, const Pools& gpus, const SweepOptions& o) {
  std::cout << "main job: " << work.size() << " problems of the built-in families on " << gpus.names.front()
            << (gpus.pools.size() > 1 ? " and more" : "") << "; strategy " << o.strategy
            << (o.strategy == "auto"
                    ? " (brute force where at most " + std::to_string(o.budget) +
                          " configurations run, guided search for " + std::to_string(o.budget) + " elsewhere)"
                    : std::string())
            << "\n";
  for (const auto& item : work)
    if (item.budget)
      std::cout << "main job: " << item.family->name << " at " << item.problem.size_text()
                << " asks for a budget of " << item.budget << " (its family's default_budgets)\n";
}

// A finished sweep as the main job's table shows it: what it measured, and the problem's best on this model.
SweepSummary stored_summary(const Store& store, const SweepInfo& s, const ProblemKey& problem) {
  SweepSummary summary;
  summary.sweep_id = s.id;
  summary.strategy = s.strategy;
  summary.measured = static_cast<int>(store.measured_results(s.id).size());
  summary.best = store.best(s.family, s.device.name, problem);
  return summary;
}

// The main job with --resume continues where it stopped: a problem whose newest sweep on these GPUs (of this
// shard, template and parameter list) is done is passed over (its stored summary is returned), an unfinished
// one continues, any other starts afresh.
std::optional<SweepSummary> resume_main_job(const Store& store, const KernelFamily& family,
                                            const ProblemKey& problem, const std::vector<std::string>& uuids,
                                            SweepOptions& one) {
  const auto prior = newest_matching_sweep(store, family, problem, uuids, one.shard);
  one.resume = prior.has_value();
  one.resume_sweep = prior ? prior->id : 0;
  if (!prior || prior->status != "done") return std::nullopt;
  std::cout << family.name << " at " << problem.text() << ": sweep " << prior->id
            << " is done, passed over\n";
  return stored_summary(store, *prior, problem);
}

// What the problems of one run share: the GPUs, the database, the options, and the rows of the main job's
// table.
struct Job {
  const std::vector<KernelFamily>& families;  // loaded: each family's siblings come from them
  Pools& gpus;
  Store& store;
  const CompileCache& cache;
  const SweepOptions& options;
  bool main_job;
  std::vector<SweptProblem> rows;
  int status = 0;  // 130 once a sweep was interrupted
};

// The line that continues an interrupted sweep.
void print_continue_hint(const Job& job, const KernelFamily& family, const ProblemKey& problem,
                         const std::vector<Worker*>& pool) {
  if (job.main_job) {
    std::cout << "interrupted: continue the main job with 'tiletune sweep --resume' and the same options\n";
    return;
  }
  std::cout << "interrupted: continue with 'tiletune sweep --family " << family.name << " --size "
            << problem.size_text() << (problem.args.empty() ? "" : " --arg " + problem.args_text())
            << gpu_option(pool) << " --resume'\n";
}

// One problem on pool p; false when the main job's --resume passed over it.
bool sweep_problem(Job& job, const WorkItem& item, std::size_t p) {
  const KernelFamily& family = *item.family;
  const ProblemKey& problem = item.problem;
  if (job.gpus.pools.size() > 1) std::cout << "\n-- on " << job.gpus.names[p] << "\n";
  SweepOptions one = options_for(item, job.options);
  one.siblings = sibling_families(job.families, family);
  if (job.main_job && one.resume)
    if (auto done = resume_main_job(job.store, family, problem, job.gpus.uuids[p], one)) {
      job.rows.push_back({&family, problem, job.gpus.names[p], std::move(*done)});
      return false;
    }
  const SweepSummary s =
      run_sweep(family, problem, job.store, job.gpus.pools[p], job.cache, one, std::cout, &g_stop);
  print_summary(family, problem, s, job.store);
  job.rows.push_back({&family, problem, job.gpus.names[p], s});
  if (s.interrupted) {
    print_continue_hint(job, family, problem, job.gpus.pools[p]);
    job.status = 130;
  }
  return true;
}

// Sweeps every problem on every GPU model in turn; the exit status (130 when interrupted).
int run_work(const Work& work, const std::vector<double>& planned, Job& job) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double planned_done = 0;  // what the problems swept in this run planned (passed-over ones took no time)
  for (std::size_t w = 0; w < work.size() && !g_stop; ++w) {
    bool swept = false;
    for (std::size_t p = 0; p < job.gpus.pools.size() && !g_stop; ++p)
      swept = sweep_problem(job, work[w], p) || swept;
    if (swept) planned_done += planned[w];
    if (!job.main_job) continue;
    double left = 0;
    for (std::size_t k = w + 1; k < work.size(); ++k) left += planned[k];
    print_overall(w + 1, work.size(), elapsed(), planned_done, left);
  }
  if (job.main_job) print_main_job_table(job.rows, job.gpus.pools.size() > 1, elapsed());
  return job.status;
}

// The options beyond the common ones, checked together; the main job's defaults go into `o`.
SweepArgs read_sweep_args(const po::variables_map& vm, const Common& c, SweepOptions& o) {
  SweepArgs a;
  o.resume = vm.count("resume") > 0;
  if (vm.count("shard")) {
    try {
      o.shard = parse_shard(vm["shard"].as<std::string>());
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("sweep: ") + e.what());
    }
  }
  if (vm.count("gpus") && !vm["gpu"].defaulted()) throw UsageError("sweep: give --gpu or --gpus, not both");
  a.gpus = vm.count("gpus") ? parse_gpus(vm["gpus"].as<std::string>()) : std::vector<int>{c.gpu};
  a.captured = vm.count("captured") ? vm["captured"].as<std::string>() : "";
  if (!a.captured.empty() && (!c.family.empty() || !c.size.empty()))
    throw UsageError(
        "sweep: --captured takes its families and sizes from the file: drop --family and --size");
  a.main_job = c.family.empty();
  if (a.main_job && vm["strategy"].defaulted()) o.strategy = "auto";
  a.family_budgets = a.main_job && vm["budget"].defaulted();
  if (a.family_budgets) o.budget = kMainJobBudget;
  o.progress_line = ::isatty(STDOUT_FILENO);
  if (o.strategy != "auto")
    make_strategy(o.strategy, KernelFamily{}, {}, 0, 0);  // rejects an unknown name before any work
  return a;
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& argv) {
  Common c;
  SweepOptions o;
  std::string cache_dir = CompileCache::default_dir().string();
  o.compile_jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  po::options_description desc("options");
  add_common(desc, c, false, true);
  add_sweep_options(desc, o, cache_dir);
  if (!parse("sweep", kSweepHelp, desc, argv)) return 0;
  po::variables_map vm;
  po::store(po::command_line_parser(argv).options(desc).run(), vm);
  const SweepArgs args = read_sweep_args(vm, c, o);
  auto fams = families(c);
  if (vm.count("input"))
    use_input_files(fams, "sweep", c.family, vm["input"].as<std::vector<std::string>>(), false);
  std::deque<KernelFamily> filled;  // families filled from a capture's saved inputs
  Work work = sweep_work(fams, c, args, filled);
  const std::vector<double> planned = planned_measurements(work, o);
  CompileCache cache(cache_dir);
  if (!cache.enabled())
    cache = CompileCache(std::filesystem::temp_directory_path() /
                         ("tiletune-cache-" + std::to_string(::getpid())));
  // The GPUs are checked (and their workers started) before the database opens: a sweep that cannot run
  // leaves no database behind.
  Pools gpus = start_pools(args.gpus);
  Store store = Store::open(c.db);
  if (gpus.pools.size() > 1) {
    std::cout << "GPUs of different models never share a sweep: one sweep per model, on";
    for (std::size_t i = 0; i < gpus.names.size(); ++i) std::cout << (i ? " and " : " ") << gpus.names[i];
    std::cout << "\n";
  }
  if (args.main_job) print_main_job_head(work, gpus, o);
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  Job job{fams, gpus, store, cache, o, args.main_job, {}};
  return run_work(work, planned, job);
}

}  // namespace tiletune::cli
