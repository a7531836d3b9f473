#include <algorithm>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "cli.hpp"
#include "tiletune/device.hpp"
#include "tiletune/replay.hpp"
#include "tiletune/store.hpp"
#include "tiletune/strategy.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune::cli {

namespace {

struct ReplayArgs {
  std::string db = "tiletune.db";
  std::vector<std::int64_t> sweeps;
  std::vector<std::string> strategies;
  int seeds = 20;
  std::uint64_t first_seed = 1;
  ReplayOptions options;
  std::string curves;
  std::vector<std::string> space_files;
  std::string write_space;
  std::vector<std::string> transfer_files;
  std::vector<std::string> templates;  // extra family folders, for the plan features of a family not built in
  bool chain = false;                  // the spaces as a main job's chain (see replay_chain)
  std::vector<std::size_t> chain_budgets;  // per space: its family's default_budgets (0: options.budget)
};

// The families replay asks (built in and under --templates), loaded once: for a stored sweep's plan
// features and a chain's budgets. `error` says why there are none.
struct KnownFamilies {
  std::vector<KernelFamily> list;
  std::string error;
};

KnownFamilies known_families(const std::vector<std::string>& templates) {
  try {
    return {families(templates), ""};
  } catch (const std::exception& e) {
    return {{}, e.what()};
  }
}

// The plan features of a stored sweep's points, from its family and the device's profile; a note on stderr
// says why where they cannot be had (an unknown family, a device without a profile).
void try_plan_features(ReplaySpace& space, const SweepInfo& info, const KnownFamilies& known) {
  try {
    if (!known.error.empty()) throw std::runtime_error(known.error);
    const KernelFamily& family = find_family(known.list, info.family);
    for (const auto& name : profile_names()) {
      const DeviceLimits device = load_profile(name);
      if (device.name != info.device.name) continue;
      add_plan_features(space, family, device, info.problem);
      return;
    }
    std::cerr << "replay: " << space.name << ": no device profile is named " << info.device.name
              << ", so no plan features\n";
  } catch (const std::exception& e) {
    std::cerr << "replay: " << space.name << ": no plan features: " << e.what() << "\n";
  }
}

std::vector<ReplaySpace> load_spaces(const ReplayArgs& a, const KnownFamilies& known) {
  std::vector<ReplaySpace> spaces;
  try {
    for (const auto& file : a.space_files) spaces.push_back(read_replay_space(file));
    if (a.sweeps.empty()) return spaces;
    const Store store = Store::open(a.db, Store::Mode::read_only);
    for (std::int64_t id : a.sweeps) {
      spaces.push_back(replay_space_from_store(store, id));
      try_plan_features(spaces.back(), *store.sweep(id), known);
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("replay: ") + e.what());
  }
  return spaces;
}

constexpr double kTargets[] = {0.01, 0.02, 0.05};

std::string stat_text(const ReplayStat& s, int precision) {
  if (s.runs == 0) return "-";
  const auto value = [&](double v) { return std::isfinite(v) ? fmt(v, precision) : std::string("never"); };
  std::string text = value(s.median) + " [" + value(s.low) + "-" + value(s.high) + "]";
  if (s.reached < s.runs) text += " " + std::to_string(s.reached) + "/" + std::to_string(s.runs);
  return text;
}

// One table row (evaluations and seconds to each target, over the seeds' runs) and, for --curves, every
// seed's curve.
std::vector<std::string> replay_row(const ReplaySpace& space, const std::string& strategy,
                                    const std::vector<ReplayRun>& runs, const ReplayArgs& a,
                                    nlohmann::json& curves) {
  const double best = *space.best_ms();
  std::vector<std::vector<double>> evals(std::size(kTargets)), secs(std::size(kTargets));
  std::vector<double> whole, unused;
  for (std::size_t s = 0; s < runs.size(); ++s) {
    const ReplayRun& run = runs[s];
    for (std::size_t t = 0; t < std::size(kTargets); ++t) {
      const auto step = run.reached(best, kTargets[t]);
      evals[t].push_back(step ? static_cast<double>(step->evaluations)
                              : std::numeric_limits<double>::infinity());
      secs[t].push_back(step ? step->seconds : std::numeric_limits<double>::infinity());
    }
    whole.push_back(run.curve.empty() ? 0 : run.curve.back().seconds);
    unused.push_back(static_cast<double>(run.unused_compiles));
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& step : run.curve)
      curve.push_back({step.evaluations, step.seconds, step.best_ms, step.point});
    curves.push_back({{"seed", a.first_seed + s},
                      {"curve", std::move(curve)},
                      {"compiles", run.compiles},
                      {"unused_compiles", run.unused_compiles},
                      {"compile_busy_s", run.compile_busy_s},
                      {"compile_wait_s", run.compile_wait_s}});
  }
  std::vector<std::string> row{space.name, strategy};
  for (std::size_t t = 0; t < std::size(kTargets); ++t) {
    row.push_back(stat_text(replay_stat(evals[t]), 0));
    row.push_back(stat_text(replay_stat(secs[t]), 1));
  }
  if (a.options.stop_within < 0) {
    row.push_back(stat_text(replay_stat(whole), 1));
    row.push_back(stat_text(replay_stat(unused), 0));
  }
  return row;
}

// The line above a chain's table: what transfers from what.
std::string chain_line(const std::vector<ReplaySpace>& spaces, const std::vector<std::size_t>& budgets) {
  std::ostringstream line;
  line << "chain of " << spaces.front().family << ":";
  for (std::size_t k = 0; k < spaces.size(); ++k) {
    const std::string& name = spaces[k].name;
    line << (k ? ", then " : " ") << name.substr(std::min(name.find(' ') + 1, name.size()));
    if (k < budgets.size() && budgets[k]) line << " (budget " << budgets[k] << ", as its family asks)";
  }
  line << "; each searched with its whole budget, transferring from the strategy's sweeps of those before it";
  return line.str();
}

// A main job's budget at each space (see family_budgets), where the family is known (built in or under
// --templates); the main job's budget (0) everywhere where it is not.
std::vector<std::size_t> chain_budgets(const KnownFamilies& known, const std::vector<ReplaySpace>& spaces) {
  try {
    return family_budgets(find_family(known.list, spaces.front().family), spaces);
  } catch (const std::exception&) {  // an unknown family, or a size that is not its: the main job's budget
  }
  return std::vector<std::size_t>(spaces.size(), 0);
}

// --chain: at least two spaces, of one family; a main job's budget unless one is given, measured whole.
void check_chain(ReplayArgs& a, const std::vector<ReplaySpace>& spaces, const KnownFamilies& known) {
  if (spaces.size() < 2)
    throw UsageError("replay: --chain needs at least two spaces, got " + std::to_string(spaces.size()));
  try {
    check_one_family(spaces);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("replay: --chain: ") + e.what());
  }
  if (a.options.budget == 0) {
    a.options.budget = kMainJobBudget;
    a.chain_budgets = chain_budgets(known, spaces);
  }
  a.options.stop_within = -1;
}

// Every seed's run of one strategy: over each space alone, or (--chain) over the spaces in turn, each
// transferring from those before it; runs[space][seed].
std::vector<std::vector<ReplayRun>> replay_runs(const ReplayArgs& a, const std::vector<ReplaySpace>& spaces,
                                                const std::string& strategy) {
  std::vector<std::vector<ReplayRun>> runs(spaces.size());
  for (int s = 0; s < a.seeds; ++s) {
    const std::uint64_t seed = a.first_seed + static_cast<std::uint64_t>(s);
    if (a.chain) {
      std::vector<ReplayRun> chain = replay_chain(spaces, strategy, seed, a.options, a.chain_budgets);
      for (std::size_t k = 0; k < spaces.size(); ++k) runs[k].push_back(std::move(chain[k]));
      continue;
    }
    for (std::size_t k = 0; k < spaces.size(); ++k)
      runs[k].push_back(replay(spaces[k], replay_family(spaces[k]), strategy, seed, a.options));
  }
  return runs;
}

// --write-space: the one space named, as a CSV file.
void write_space(const ReplayArgs& a, const std::vector<ReplaySpace>& spaces) {
  if (spaces.size() != 1) throw UsageError("replay: --write-space writes one space: name one --sweep");
  std::ostringstream text;
  write_replay_space(spaces.front(), text);
  write_file_replacing(a.write_space, text.str());
  std::cout << "wrote " << spaces.front().points.size() << " configurations of " << spaces.front().name
            << " to " << a.write_space << "\n";
}

// Every strategy on every space (in a chain's order): the table, and the curves where --curves asks.
void replay_all(const ReplayArgs& a, const std::vector<ReplaySpace>& spaces) {
  std::vector<std::vector<std::vector<std::string>>> rows(spaces.size());  // [space][strategy]
  std::vector<nlohmann::json> by_strategy(spaces.size(), nlohmann::json::object());
  for (const auto& name : a.strategies) {
    std::vector<std::vector<ReplayRun>> runs;
    try {
      runs = replay_runs(a, spaces, name);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("replay: --strategy: ") + e.what());
    }
    for (std::size_t k = 0; k < spaces.size(); ++k)
      rows[k].push_back(replay_row(spaces[k], name, runs[k], a, by_strategy[k][name]));
  }
  nlohmann::json curves = nlohmann::json::array();
  for (std::size_t k = 0; k < spaces.size(); ++k)
    curves.push_back({{"space", spaces[k].name},
                      {"configurations", spaces[k].points.size()},
                      {"best_ms", *spaces[k].best_ms()},
                      {"strategies", std::move(by_strategy[k])}});
  std::vector<std::vector<std::string>> table;
  for (auto& r : rows) table.insert(table.end(), r.begin(), r.end());
  if (a.chain) std::cout << chain_line(spaces, a.chain_budgets) << "\n";
  std::vector<std::string> header{"space",    "strategy", "evals 1%", "s 1%",
                                  "evals 2%", "s 2%",     "evals 5%", "s 5%"};
  if (a.options.stop_within < 0) header.insert(header.end(), {"s whole", "unused compiles"});
  print_table(std::cout, header, table);
  if (!a.curves.empty())
    write_file_replacing(a.curves, nlohmann::json{{"format", "tiletune-replay-curves"},
                                                  {"columns", {"evaluations", "seconds", "best_ms", "point"}},
                                                  {"spaces", std::move(curves)}}
                                           .dump() +
                                       "\n");
}

}  // namespace

int cmd_replay(const std::vector<std::string>& argv) {
  ReplayArgs a;
  po::options_description desc("options");
  desc.add_options()("db", po::value(&a.db)->default_value(a.db), "the database holding the sweeps")(
      "sweep", po::value(&a.sweeps)->composing(), "a complete stored sweep to replay (repeatable)")(
      "strategy", po::value(&a.strategies)->composing(), "a strategy to replay (repeatable; default: all)")(
      "seeds", po::value(&a.seeds)->default_value(a.seeds), "seeds per strategy")(
      "seed", po::value(&a.first_seed)->default_value(a.first_seed), "the first seed")(
      "jobs,j", po::value(&a.options.compile_jobs)->default_value(16), "simulated compiler processes")(
      "gpus", po::value(&a.options.lanes)->default_value(1), "simulated GPUs measuring at once")(
      "budget", po::value(&a.options.budget)->default_value(0), "the strategies' budget (0: none)")(
      "curves", po::value(&a.curves), "write every seed's best-so-far curve to this JSON file")(
      "space", po::value(&a.space_files)->composing(),
      "a space file (bench/spaces/*.csv) to replay (repeatable)")(
      "write-space", po::value(&a.write_space),
      "write the sweep's space to this CSV file instead of replaying")(
      "templates", po::value(&a.templates)->composing(),
      "extra folder of kernel families, for the plan features of a sweep of a family not built in "
      "(repeatable)")(
      "transfer", po::value(&a.transfer_files)->composing(),
      "guided starts from this space file of the same family at another size or device (repeatable)")(
      "no-plan-features", "guided: leave the plan features out of the model (an ablation)")(
      "no-gaussian-process",
      "guided: every pick by the trees, none by the Gaussian process's expected improvement (an ablation)")(
      "wait-for-batch",
      "guided: measure each batch whole before the next fit, rather than refit when a GPU finds nothing "
      "of the batch compiled (an ablation)")(
      "whole-budget",
      "run each seed to its budget (or the space's end) instead of stopping within 1%; the table adds the "
      "simulated seconds of the whole run and the compiles never measured")(
      "chain",
      "replay the spaces (one family at several problems) as a main job's chain: each in turn, with the "
      "whole budget (130 unless --budget, or what the family's default_budgets ask at a space's problem), "
      "guided transferring from what it measured in those before it");
  if (!parse(
          "replay",
          "Replays strategies against complete stored sweeps without a GPU: evaluations and simulated "
          "seconds until the best is within 1%, 2% and 5% of the sweep's best (median [range] over seeds).",
          desc, argv))
    return 0;
  a.options.plan_features = std::find(argv.begin(), argv.end(), "--no-plan-features") == argv.end();
  a.options.gaussian_process = std::find(argv.begin(), argv.end(), "--no-gaussian-process") == argv.end();
  a.options.refit_when_idle = std::find(argv.begin(), argv.end(), "--wait-for-batch") == argv.end();
  if (std::find(argv.begin(), argv.end(), "--whole-budget") != argv.end()) a.options.stop_within = -1;
  a.chain = std::find(argv.begin(), argv.end(), "--chain") != argv.end();
  if (a.sweeps.empty() && a.space_files.empty())
    throw UsageError("replay: name at least one sweep (--sweep ID) or space file (--space FILE)");
  if (a.seeds < 1) throw UsageError("replay: --seeds must be at least 1, got " + std::to_string(a.seeds));
  if (a.options.compile_jobs < 1) throw UsageError("replay: --jobs must be at least 1");
  if (a.options.lanes < 1) throw UsageError("replay: --gpus must be at least 1");
  if (!a.curves.empty()) check_output_path(a.curves, "--curves", a.db);
  if (!a.write_space.empty()) check_output_path(a.write_space, "--write-space", a.db);
  if (a.strategies.empty()) a.strategies = strategy_names();
  const KnownFamilies known = known_families(a.templates);
  const std::vector<ReplaySpace> spaces = load_spaces(a, known);
  try {
    for (const auto& file : a.transfer_files)
      a.options.transfer.push_back(prior_sweep_of(read_replay_space(file)));
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("replay: --transfer: ") + e.what());
  }
  if (!a.write_space.empty()) {
    write_space(a, spaces);
    return 0;
  }
  if (a.chain) check_chain(a, spaces, known);
  replay_all(a, spaces);
  return 0;
}

}  // namespace tiletune::cli
