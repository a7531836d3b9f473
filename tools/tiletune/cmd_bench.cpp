#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "input_option.hpp"
#include "tiletune/bench.hpp"

namespace tiletune::cli {

namespace {

// "1.7295 @ 1470 MHz": a time per back-to-back run and the SM clock it ran at.
std::string sustained_text(const Timing& t) {
  return fmt(t.sustained_ms, 4) +
         (t.sustained_clock_mhz > 0 ? " @ " + fmt(t.sustained_clock_mhz, 0) + " MHz" : "");
}

// --config TEXT as a configuration of the family: every name one of its parameters, the rest at their
// defaults. Throws UsageError in one line.
Params given_config(const KernelFamily& family, const std::string& text) {
  Params given;
  try {
    given = params_from_text(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("bench: --config: ") + e.what());
  }
  Params config = family.default_params();
  for (const auto& [name, value] : given) {
    if (!config.count(name)) {
      std::string names;
      for (const auto& p : family.parameters) names += (names.empty() ? "" : ", ") + p.name;
      throw UsageError("bench: --config: " + family.name + " has no parameter '" + name + "' (it has " +
                       (names.empty() ? "none" : names) + ")");
    }
    config[name] = value;
  }
  return config;
}

void print_rows(const std::vector<BenchRow>& rows, bool sustained) {
  std::vector<std::string> head = {"family", "problem",  "config",      "median ms",
                                   "metric", "baseline", "baseline ms", "ratio [range]"};
  if (sustained) head.insert(head.end(), {"sustained ms", "baseline sustained ms", "sustained ratio"});
  std::vector<std::vector<std::string>> table;
  for (const auto& r : rows) {
    const bool base = !r.baseline.empty();  // a family with no baseline has its own row alone
    table.push_back(
        {r.family, r.problem.text(),
         params_to_text(r.config) + (r.config_source == "default" ? " (default)" : ""),
         fmt(r.time.median_ms, 4) + " ±" + fmt(100 * r.time.spread, 1) + "%",
         fmt(r.metric, 1) + " " + r.metric_unit, base ? r.baseline : "-",
         base ? fmt(r.baseline_time.median_ms, 4) + " ±" + fmt(100 * r.baseline_time.spread, 1) + "%" : "-",
         base ? fmt(r.ratio, 3) + " [" + fmt(r.ratio_low, 3) + ", " + fmt(r.ratio_high, 3) + "]" : "-"});
    if (sustained)
      table.back().insert(table.back().end(),
                          {sustained_text(r.time), base ? sustained_text(r.baseline_time) : "-",
                           r.sustained_ratio > 0 ? fmt(r.sustained_ratio, 3) : "-"});
  }
  print_table(std::cout, head, table);
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  Common c;
  MeasureSettings m;
  m.min_reps = 20;
  m.max_reps = 200;
  m.budget_ms = 2000;
  m.target_spread = 0.01;
  std::string json_path, config_text, cache_dir = CompileCache::default_dir().string();
  std::vector<std::string> inputs;
  po::options_description desc("options");
  add_common(desc, c, false, true);
  desc.add_options()("json", po::value(&json_path),
                     "write the results as JSON to this file, merged with what it holds")(
      "cache", po::value(&cache_dir)->default_value(cache_dir), "compile cache folder")(
      "config", po::value(&config_text),
      "NAME=VALUE,...: bench this configuration rather than the best stored one (parameters not named take "
      "their defaults)")("min-reps", po::value(&m.min_reps)->default_value(m.min_reps),
                         "timed runs at least")("max-reps", po::value(&m.max_reps)->default_value(m.max_reps),
                                                "timed runs at most")(
      "rep-budget-ms", po::value(&m.budget_ms)->default_value(m.budget_ms),
      "time budget for each kernel's runs")(
      "sustained-ms", po::value(&m.sustained_ms)->default_value(m.sustained_ms),
      "after its timed runs, run each kernel back to back for this long and report the time per run and the "
      "SM clock over the second half: the GPU at the clock its power limit allows, as under steady load "
      "(0: not)")(
      "input", po::value(&inputs)->composing(),
      "NAME=PATH: fill input NAME of the family, and of each baseline family that has one, from this file "
      "(as sweep --input; repeatable)");
  if (!parse(
          "bench",
          "Runs the best stored configuration of a family (or --config) beside the baselines its "
          "family.json\n"
          "declares, in one process: library calls (cuBLAS, the device-to-device copy) on the family's own\n"
          "buffers, and other families (their best stored configuration, else their default).\n"
          "Ratios are baseline time / our time (above 1: faster than the baseline), with the range from the\n"
          "quartiles of both.",
          desc, argv))
    return 0;
  if (c.family.empty()) throw UsageError("bench: give --family");
  if (!(m.sustained_ms >= 0 && m.sustained_ms <= 60000))
    throw UsageError("bench: --sustained-ms must be between 0 and 60000 (a minute), got " +
                     fmt(m.sustained_ms, 0));
  if (!json_path.empty()) check_output_path(json_path, "bench: --json", c.db);
  auto fams = families(c);
  if (!inputs.empty()) use_input_files(fams, "bench", c.family, inputs, true);
  const KernelFamily& family = find_family(fams, c.family);
  const ProblemKey problem = problem_for(family, c);
  std::optional<Params> config;
  if (!config_text.empty()) config = given_config(family, config_text);
  CompileCache cache(cache_dir);
  if (!cache.enabled()) cache = CompileCache(std::filesystem::temp_directory_path() / "tiletune-bench-cache");
  WorkerProcess worker(c.gpu);
  const DeviceLimits device = worker_device(worker);
  const Store store = Store::open(c.db, Store::Mode::read_only);
  const auto rows = run_bench(fams, family, problem, store, worker, cache, m, std::cerr, config);
  std::cout << device.name << "\n";
  print_rows(rows, m.sustained_ms > 0);
  if (!json_path.empty()) {
    nlohmann::json doc = bench_json(rows, device);
    std::ifstream in(json_path);
    if (in) {
      try {
        doc = merge_bench_json(nlohmann::json::parse(in), doc);
      } catch (const nlohmann::json::exception&) {
        throw std::runtime_error(json_path + " exists but is not a bench JSON file; not overwriting it");
      }
    }
    write_file_replacing(json_path, doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    std::cerr << "wrote " << json_path << "\n";
  }
  return 0;
}

}  // namespace tiletune::cli
