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

int cmd_plan(const std::vector<std::string>& argv) {
  Common c;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string mode = "processes", cache_dir = CompileCache::default_dir().string();
  po::options_description desc("options");
  add_common(desc, c, true, true);
  desc.add_options()("jobs,j", po::value(&jobs)->default_value(jobs),
                     "compile this many configurations at once")(
      "compile-mode", po::value(&mode)->default_value(mode), "processes or threads")(
      "cache", po::value(&cache_dir)->default_value(cache_dir), "compile cache folder ('' to disable)")(
      "no-compile", "prune only; do not compile")("all", "list every configuration, pruned ones included")(
      "json", "print the plan as JSON")("store", "record the plan in the database")(
      "shard", po::value<std::string>(),
      "I/N: only part I (0 to N-1) of N of the space, the part 'sweep --shard I/N' measures (e.g. to fill a "
      "shared compile cache from N CPU nodes)");
  if (!parse("plan",
             "Enumerates a family's configurations for one problem, prunes what the device cannot run, "
             "compiles the\n"
             "rest with NVRTC and computes their occupancy. Needs no GPU: without one it plans for the H100 "
             "profile.",
             desc, argv))
    return 0;
  po::variables_map vm;
  po::store(po::command_line_parser(argv).options(desc).run(), vm);
  const auto fams = families(c);
  if (c.family.empty()) {
    std::string names;
    for (const auto& f : fams) names += "\n  " + f.name + ": " + f.description;
    throw UsageError("plan: give --family; families:" + names);
  }
  const KernelFamily& family = find_family(fams, c.family);
  const ProblemKey problem = problem_for(family, c);
  check_space_enumerable(family);  // a space too large to plan says so, with its size, before any work
  std::string note;
  const DeviceLimits device = device_for_plan(c, &note);
  if (mode != "processes" && mode != "threads")
    throw UsageError("plan: --compile-mode must be processes or threads");
  const CompileCache cache(cache_dir);
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
  const Plan plan = make_plan(family, device, problem, cache, options);

  if (vm.count("json")) {
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
  } else {
    std::cout << note << "\n"
              << family.name << " at " << problem.text() << ": " << plan.configs.size() << " configurations"
              << (options.shard.whole() ? std::string() : " in shard " + options.shard.text()) << "\n\n";
    std::vector<std::vector<std::string>> rows;
    std::vector<const PlannedConfig*> order;
    for (const auto& p : plan.configs)
      if (vm.count("all") || p.outcome == Outcome::ok) order.push_back(&p);
    std::stable_sort(order.begin(), order.end(), [](const PlannedConfig* a, const PlannedConfig* b) {
      if ((a->outcome == Outcome::ok) != (b->outcome == Outcome::ok)) return a->outcome == Outcome::ok;
      return a->occupancy.fraction > b->occupancy.fraction;
    });
    for (const auto* p : order) {
      const bool ok = p->outcome == Outcome::ok && p->compiled;
      rows.push_back(
          {params_to_text(p->params),
           p->outcome == Outcome::ok ? (p->compiled ? "runnable" : "not compiled")
                                     : std::string(to_string(p->outcome)),
           std::to_string(p->launch.threads()), ok ? std::to_string(p->usage.registers) : "-",
           ok ? std::to_string(p->usage.static_smem + p->launch.dynamic_smem) : "-",
           ok ? std::to_string(p->occupancy.active_blocks) + "/" + std::to_string(p->occupancy.active_warps)
              : "-",
           ok ? fmt(100 * p->occupancy.fraction, 0) + "%" : "-",
           ok ? p->occupancy.limiter : printable(p->reason.substr(0, p->reason.find('\n')))});
    }
    print_table(std::cout,
                {"config", "outcome", "threads", "regs", "smem B", "blocks/warps per SM", "occupancy",
                 "limiter / reason"},
                rows);
    std::map<std::string, int> reasons;
    for (const auto& p : plan.configs)
      if (p.outcome != Outcome::ok) {
        std::string r = printable(p.reason.substr(0, p.reason.find('\n')));
        // Group "threads: 4096 per block > 1024" style reasons by their kind.
        if (r.rfind("constraint:", 0) != 0 && r.find(':') != std::string::npos)
          r = r.substr(0, r.find(':')) + " limit";
        ++reasons[std::string(to_string(p.outcome)) + ": " + r];
      }
    std::cout << "\nrunnable " << plan.count(Outcome::ok) << ", pruned " << plan.count(Outcome::pruned)
              << ", compile_failed " << plan.count(Outcome::compile_failed) << "\n";
    for (const auto& [r, n] : reasons) std::cout << "  " << n << " x " << r << "\n";
    if (options.compile) {
      const auto& s = plan.compile_stats;
      std::cout << "compiled " << s.compiled << " with NVRTC " << nvrtc_version() << " (" << s.from_cache
                << " from cache) in " << fmt(s.seconds, 2) << " s";
      if (s.seconds > 0 && s.jobs > 0) std::cout << ", " << fmt(s.jobs / s.seconds, 1) << " configurations/s";
      std::cout << ", " << jobs << " " << mode << "\n";
    }
  }
  if (vm.count("store")) {
    Store store = Store::open(c.db);
    const SweepSpec spec = sweep_spec(family, device, problem, "plan", "plan");
    std::vector<ResultRecord> records;
    for (const auto& p : plan.configs) {
      records.push_back(to_record(p));
      if (p.outcome == Outcome::ok) records.back().reason = "planned: runnable, not measured";
    }
    // One transaction: a failure leaves no half-made plan behind.
    const auto id = store.add_sweep(spec, records, "done");
    std::cout << "stored as plan " << id << " in " << c.db << "\n";
  }
  return 0;
}

}  // namespace tiletune::cli
