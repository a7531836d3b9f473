#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

#include "cli.hpp"
#include "tiletune/strategy.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune::cli {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_interrupt(int) { g_stop.store(true); }

void print_summary(const KernelFamily& family, const ProblemKey& problem, const SweepSummary& s,
                   const Store& store) {
  std::cout << "\n"
            << family.name << " at " << problem_text(problem) << ": sweep " << s.sweep_id
            << (s.interrupted ? " interrupted" : " done") << " in " << fmt(s.seconds, 1) << " s (GPU busy "
            << fmt(s.gpu_busy_seconds, 1) << " s, "
            << fmt(s.seconds > 0 ? 100 * s.gpu_busy_seconds / s.seconds : 0, 0) << "%; waited on NVRTC "
            << fmt(s.compile_wait_seconds, 1) << " s)\n";
  std::vector<std::vector<std::string>> rows;
  int n = 0;
  for (const auto& r : store.results(s.sweep_id)) {
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

}  // namespace

int cmd_sweep(const std::vector<std::string>& argv) {
  Common c;
  SweepOptions o;
  std::string cache_dir = CompileCache::default_dir().string();
  o.compile_jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  po::options_description desc("options");
  add_common(desc, c, false, true);
  desc.add_options()("resume", "continue the newest unfinished sweep of this family and problem on this GPU")(
      "strategy", po::value(&o.strategy)->default_value(o.strategy),
      "brute_force, random or annealing (the last two, with --budget, sample spaces of any size)")(
      "budget", po::value(&o.budget)->default_value(0),
      ("measure at most this many configurations (0: all; a space over " + std::to_string(kMaxSpaceSize) +
       " needs one)")
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
      "databases with 'tiletune merge'");
  if (!parse("sweep",
             "Measures every runnable configuration of a family on the GPU in a separate worker process, "
             "validates\n"
             "each against a float64 reference and stores every outcome. Without --family: every built-in "
             "family\n"
             "at its default sizes. Random and annealing with --budget sample a space of any size (one\n"
             "that a 64-bit index holds) without building it.",
             desc, argv))
    return 0;
  po::variables_map vm;
  po::store(po::command_line_parser(argv).options(desc).run(), vm);
  o.resume = vm.count("resume") > 0;
  if (vm.count("shard")) {
    try {
      o.shard = parse_shard(vm["shard"].as<std::string>());
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("sweep: ") + e.what());
    }
  }
  o.progress_line = ::isatty(STDOUT_FILENO);
  make_strategy(o.strategy, KernelFamily{}, {}, 0, 0);  // rejects an unknown name before any work
  const auto fams = families(c);
  std::vector<std::pair<const KernelFamily*, ProblemKey>> work;
  if (!c.family.empty()) {
    const KernelFamily& f = find_family(fams, c.family);
    work.emplace_back(&f, problem_for(f, c));
  } else {
    if (!c.size.empty()) throw UsageError("sweep: --size needs --family");
    for (const auto& f : fams)
      for (const auto& size : f.default_sizes) {
        Common one = c;
        one.size = size.substr(0, size.find(' '));
        if (size.find(' ') != std::string::npos) one.args.push_back(size.substr(size.find(' ') + 1));
        work.emplace_back(&f, problem_for(f, one));
      }
  }
  // A space too large for this strategy is refused, with its size, before the worker or the database start.
  for (const auto& item : work) sweep_space_walk(*item.first, o);
  CompileCache cache(cache_dir);
  if (!cache.enabled())
    cache = CompileCache(std::filesystem::temp_directory_path() /
                         ("tiletune-cache-" + std::to_string(::getpid())));
  Store store = Store::open(c.db);
  WorkerProcess worker(c.gpu);
  worker_device(worker);  // says "no CUDA GPU" before anything else
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  int status = 0;
  for (const auto& [family, problem] : work) {
    if (g_stop) break;
    const SweepSummary s = run_sweep(*family, problem, store, worker, cache, o, std::cout, &g_stop);
    print_summary(*family, problem, s, store);
    if (s.interrupted) {
      std::cout << "interrupted: continue with 'tiletune sweep --family " << family->name << " --size "
                << problem.size_text() << (problem.args.empty() ? "" : " --arg " + problem.args_text())
                << " --resume'\n";
      status = 130;
    }
  }
  return status;
}

}  // namespace tiletune::cli
