#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/store.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune::cli {

namespace {

// The options of plan beyond the common ones; `jobs`, `mode` and `cache_dir` come in with their defaults.
void add_plan_options(po::options_description& desc, int& jobs, std::string& mode, std::string& cache_dir) {
  desc.add_options()("jobs,j", po::value(&jobs)->default_value(jobs),
                     "compile this many configurations at once")(
      "compile-mode", po::value(&mode)->default_value(mode), "processes or threads")(
      "cache", po::value(&cache_dir)->default_value(cache_dir), "compile cache folder ('' to disable)")(
      "no-compile", "prune only; do not compile")("all", "list every configuration, pruned ones included")(
      "json", "print the plan as JSON")("store", "record the plan in the database")(
      "shard", po::value<std::string>(),
      "I/N: only part I (0 to N-1) of N of the space, the part 'sweep --shard I/N' measures (e.g. to fill a "
      "shared compile cache from N CPU nodes)");
}

const char* const kPlanHelp =
    "Enumerates a family's configurations for one problem, prunes what the device cannot run, "
    "compiles the\n"
    "rest with NVRTC and computes their occupancy. Needs no GPU: without one it plans for the H100 "
    "profile.";

// Without --family: a usage error that lists the families to choose from.
void require_family(const std::vector<KernelFamily>& fams, const Common& c) {
  if (!c.family.empty()) return;
  std::string names;
  for (const auto& f : fams) names += "\n  " + f.name + ": " + f.description;
  throw UsageError("plan: give --family; families:" + names);
}

// --no-compile, --jobs, --compile-mode (already checked) and --shard, which --store refuses.
PlanOptions plan_options(const po::variables_map& vm, int jobs, const std::string& mode) {
  PlanOptions options;
  options.compile = !vm.count("no-compile");
  options.jobs = jobs;
  options.mode = mode == "threads" ? ParallelMode::threads : ParallelMode::processes;
  if (vm.count("shard")) {
    try {
      options.shard = parse_shard(vm["shard"].as<std::string>());
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("plan: ") + e.what());
    }
    if (vm.count("store")) throw UsageError("plan: --store records a whole plan; leave out --shard");
  }
  return options;
}

void print_plan_json(const KernelFamily& family, const ProblemKey& problem, const DeviceLimits& device,
                     const Plan& plan) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : plan.configs) {
    rows.push_back({{"params", p.params},
                    {"outcome", to_string(p.outcome)},
                    {"reason", p.reason},
                    {"threads", p.launch.threads()},
                    {"block", p.launch.block},
                    {"grid", p.launch.grid},
                    {"cluster", p.launch.cluster},
                    {"registers", p.usage.registers},
                    {"static_smem", p.usage.static_smem},
                    {"dynamic_smem", p.launch.dynamic_smem},
                    {"active_blocks", p.occupancy.active_blocks},
                    {"active_warps", p.occupancy.active_warps},
                    {"occupancy", p.occupancy.fraction},
                    {"limiter", p.occupancy.limiter}});
  }
  std::cout << nlohmann::json{{"family", family.name},
                              {"problem", problem.text()},
                              {"device", device.name},
                              {"configs", rows},
                              {"compile",
                               {{"jobs", plan.compile_stats.jobs},
                                {"compiled", plan.compile_stats.compiled},
                                {"from_cache", plan.compile_stats.from_cache},
                                {"seconds", plan.compile_stats.seconds}}}}
                   .dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
}

// The first line of a configuration's reason, safe to print.
std::string first_line(const std::string& reason) { return printable(reason.substr(0, reason.find('\n'))); }

// The configurations the table lists (the runnable ones, or with --all every one): runnable first, then by
// occupancy, highest first.
std::vector<const PlannedConfig*> table_order(const Plan& plan, bool all) {
  std::vector<const PlannedConfig*> order;
  for (const auto& p : plan.configs)
    if (all || p.outcome == Outcome::ok) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const PlannedConfig* a, const PlannedConfig* b) {
    if ((a->outcome == Outcome::ok) != (b->outcome == Outcome::ok)) return a->outcome == Outcome::ok;
    return a->occupancy.fraction > b->occupancy.fraction;
  });
  return order;
}

std::vector<std::string> table_row(const PlannedConfig& p) {
  const bool ok = p.outcome == Outcome::ok && p.compiled;
  const std::string outcome = p.outcome == Outcome::ok ? (p.compiled ? "runnable" : "not compiled")
                                                       : std::string(to_string(p.outcome));
  if (!ok)
    return {params_to_text(p.params), outcome, std::to_string(p.launch.threads()), "-", "-", "-", "-",
            first_line(p.reason)};
  return {params_to_text(p.params),
          outcome,
          std::to_string(p.launch.threads()),
          std::to_string(p.usage.registers),
          std::to_string(p.usage.static_smem + p.launch.dynamic_smem),
          std::to_string(p.occupancy.active_blocks) + "/" + std::to_string(p.occupancy.active_warps),
          fmt(100 * p.occupancy.fraction, 0) + "%",
          p.occupancy.limiter};
}

// How many configurations did not run for each reason: "pruned: threads limit" groups
// "threads: 4096 per block > 1024" with its kind; a constraint's reason stays whole.
std::map<std::string, int> reason_counts(const Plan& plan) {
  std::map<std::string, int> reasons;
  for (const auto& p : plan.configs) {
    if (p.outcome == Outcome::ok) continue;
    std::string r = first_line(p.reason);
    if (r.rfind("constraint:", 0) != 0 && r.find(':') != std::string::npos)
      r = r.substr(0, r.find(':')) + " limit";
    ++reasons[std::string(to_string(p.outcome)) + ": " + r];
  }
  return reasons;
}

void print_compile_stats(const CompileStats& s, int jobs, const std::string& mode) {
  std::cout << "compiled " << s.compiled << " with NVRTC " << nvrtc_version() << " (" << s.from_cache
            << " from cache) in " << fmt(s.seconds, 2) << " s";
  if (s.seconds > 0 && s.jobs > 0) std::cout << ", " << fmt(s.jobs / s.seconds, 1) << " configurations/s";
  std::cout << ", " << jobs << " " << mode << "\n";
}

void print_plan_table(const KernelFamily& family, const ProblemKey& problem, const std::string& note,
                      const Plan& plan, const PlanOptions& options, bool all, const std::string& mode) {
  std::cout << note << "\n"
            << family.name << " at " << problem.text() << ": " << plan.configs.size() << " configurations"
            << (options.shard.whole() ? std::string() : " in shard " + options.shard.text()) << "\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto* p : table_order(plan, all)) rows.push_back(table_row(*p));
  print_table(std::cout,
              {"config", "outcome", "threads", "regs", "smem B", "blocks/warps per SM", "occupancy",
               "limiter / reason"},
              rows);
  std::cout << "\nrunnable " << plan.count(Outcome::ok) << ", pruned " << plan.count(Outcome::pruned)
            << ", compile_failed " << plan.count(Outcome::compile_failed) << "\n";
  for (const auto& [r, n] : reason_counts(plan)) std::cout << "  " << n << " x " << r << "\n";
  if (options.compile) print_compile_stats(plan.compile_stats, options.jobs, mode);
}

void store_plan(const std::string& db, const KernelFamily& family, const DeviceLimits& device,
                const ProblemKey& problem, const Plan& plan) {
  Store store = Store::open(db);
  const SweepSpec spec = sweep_spec(family, device, problem, "plan", "plan");
  // What was pruned before compiling is stored as counts per reason, as a sweep stores it; what compiled
  // (runnable, failed, or pruned by its compiled resources) as results.
  std::vector<ResultRecord> records;
  PrunedCounts pruned;
  for (const auto& p : plan.configs) {
    if (p.outcome == Outcome::pruned && !p.compiled) {
      ++pruned[p.reason];
      continue;
    }
    records.push_back(to_record(p));
    if (p.outcome == Outcome::ok) records.back().reason = "planned: runnable, not measured";
  }
  // One transaction: a failure leaves no half-made plan behind.
  const auto id = store.add_sweep(spec, records, "done", pruned);
  std::cout << "stored as plan " << id << " in " << db << "\n";
}

}  // namespace

int cmd_plan(const std::vector<std::string>& argv) {
  Common c;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string mode = "processes", cache_dir = CompileCache::default_dir().string();
  po::options_description desc("options");
  add_common(desc, c, true, true);
  add_plan_options(desc, jobs, mode, cache_dir);
  if (!parse("plan", kPlanHelp, desc, argv)) return 0;
  po::variables_map vm;
  po::store(po::command_line_parser(argv).options(desc).run(), vm);
  const auto fams = families(c);
  require_family(fams, c);
  const KernelFamily& family = find_family(fams, c.family);
  const ProblemKey problem = problem_for(family, c);
  check_space_enumerable(family);  // a space too large to plan says so, with its size, before any work
  std::string note;
  const DeviceLimits device = device_for_plan(c, &note);
  if (mode != "processes" && mode != "threads")
    throw UsageError("plan: --compile-mode must be processes or threads");
  const CompileCache cache(cache_dir);
  const PlanOptions options = plan_options(vm, jobs, mode);
  const Plan plan = make_plan(family, device, problem, cache, options);
  if (vm.count("json"))
    print_plan_json(family, problem, device, plan);
  else
    print_plan_table(family, problem, note, plan, options, vm.count("all") > 0, mode);
  if (vm.count("store")) store_plan(c.db, family, device, problem, plan);
  return 0;
}

}  // namespace tiletune::cli
