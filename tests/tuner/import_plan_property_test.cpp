// The promise of an import: whatever it stores as ok, the family's plan for that device and problem finds
// runnable. Kernel Tuner caches, tiletune's JSON and CSV exports and merged databases that call every
// configuration ok, whatever its constraints, threads, grid or sizes, are imported over random problems and
// devices, and every stored ok result is planned again.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../test_paths.hpp"
#include "tiletune/import_check.hpp"
#include "tiletune/kernel_tuner.hpp"
#include "tiletune/plan.hpp"

using namespace tiletune;

namespace {

const KernelFamily& gemm_tiled() {
  static const auto fams = load_families({tiletune::test::templates_dir()});
  return find_family(fams, "gemm_tiled");
}

// A closed Kernel Tuner cache in which every configuration of the space was measured as ok, at random times.
std::string all_ok_cache(const KernelFamily& f, const ProblemKey& problem, std::mt19937_64& rng) {
  nlohmann::json cache = nlohmann::json::object();
  std::vector<std::string> keys;
  for (const auto& p : f.parameters) keys.push_back(p.name);
  std::uniform_real_distribution<double> time(0.001, 5.0);
  for (const Params& params : enumerate_space(f)) {
    std::string key;
    nlohmann::json entry;
    for (const auto& name : keys) {
      key.append(key.empty() ? "" : ",").append(std::to_string(params.at(name)));
      entry[name] = params.at(name);
    }
    entry["time"] = time(rng);
    cache[key] = entry;
  }
  return nlohmann::json{{"device_name", "any"},     {"kernel_name", f.name}, {"problem_size", problem.dims},
                        {"tune_params_keys", keys}, {"objective", "time"},   {"cache", cache}}
      .dump();
}

KernelTunerTarget target_for(const KernelFamily& f, const DeviceLimits& device, const ProblemKey& problem) {
  KernelTunerTarget t;
  t.family = f.name;
  t.template_hash = f.template_hash;
  t.description_json = f.description_json;
  t.space_hash = f.space_hash();
  for (const auto& p : f.parameters) t.parameters.emplace_back(p.name, p.values);
  t.metric_unit = f.metric_unit;
  t.device = device.record();
  t.problem = problem;
  t.plan_refuses = [&f, device, problem](const std::vector<std::pair<std::string, std::int64_t>>& values) {
    const PlannedConfig c = prune_before_compile(f, device, problem, Params(values.begin(), values.end()));
    return c.outcome == Outcome::ok ? std::string() : c.reason;
  };
  return t;
}

// Sizes that fit (most often), that need a grid over the device's limit or buffers no device holds, and
// that overflow the kernel's int scalars.
ProblemKey random_problem(const KernelFamily& f, std::mt19937_64& rng) {
  static const std::vector<std::int64_t> sizes = {1, 64, 1000, 4096, 70000, 1000000, 3000000000LL};
  std::discrete_distribution<std::size_t> pick({4, 4, 4, 4, 1, 1, 1});
  return f.make_problem({sizes[pick(rng)], sizes[pick(rng)], sizes[pick(rng)]}, {});
}

// Every stored result of (f, device, problem) against the plan: ok ones runnable, the others pruned with the
// plan's reason and `origin`; the best runnable. Counts what it saw.
void expect_held_to_plan(const Store& store, const KernelFamily& f, const DeviceLimits& device,
                         const ProblemKey& problem, const std::string& origin, std::size_t& ok_seen,
                         std::size_t& refused_seen) {
  const auto sweeps = store.sweeps(f.name, device.name, problem);
  ASSERT_FALSE(sweeps.empty());
  for (const auto& r : store.results(sweeps.front().id)) {
    const PlannedConfig planned = prune_before_compile(f, device, problem, r.record.params);
    if (r.record.outcome == Outcome::ok) {
      ++ok_seen;
      EXPECT_EQ(planned.outcome, Outcome::ok) << params_to_text(r.record.params) << ": " << planned.reason;
    } else {
      ++refused_seen;
      EXPECT_EQ(r.record.outcome, Outcome::pruned);
      EXPECT_EQ(r.record.reason, planned.reason + " (" + origin + ")");
      EXPECT_FALSE(r.record.median_ms.has_value());
    }
  }
  if (const auto best = store.best(f.name, device.name, problem)) {
    EXPECT_EQ(prune_before_compile(f, device, problem, best->record.params).outcome, Outcome::ok);
  }
}

// A sweep in which every configuration of the space was measured as ok, at random times, written through
// the store's own API (which trusts the tuner) so that its exports claim what the plan refuses.
void add_all_ok_sweep(Store& store, const KernelFamily& f, const DeviceLimits& device,
                      const ProblemKey& problem, std::mt19937_64& rng) {
  const SweepSpec spec = sweep_spec(f, device, problem, "sweep", "brute_force");
  std::vector<ResultRecord> records;
  std::uniform_real_distribution<double> time(0.001, 5.0);
  for (const Params& params : enumerate_space(f)) {
    ResultRecord r;
    r.params = params;
    r.median_ms = r.min_ms = time(rng);
    r.repetitions = 1;
    r.times_ms = {*r.median_ms};
    records.push_back(r);
  }
  store.add_sweep(spec, records);
}

}  // namespace

// tiletune's own exports (JSON, CSV) and merged databases are held to the same promise: a database written
// through the store's API with every configuration ok, exported and imported, or merged, into fresh ones.
TEST(ImportProperty, ExportsAndMergesStoreAsOkOnlyWhatThePlanFindsRunnable) {
  const KernelFamily& f = gemm_tiled();
  const auto fams = load_families({tiletune::test::templates_dir()});
  std::mt19937_64 rng(2724);
  const std::vector<std::string> profiles = {"h100", "a100", "rtx4090"};
  tiletune::test::TempDir dir;
  std::vector<std::pair<DeviceLimits, ProblemKey>> made;
  {
    Store source = Store::open(dir.path / "source.db");
    for (int round = 0; round < 6; ++round) {
      const DeviceLimits device = load_profile(profiles[static_cast<std::size_t>(round) % profiles.size()]);
      made.emplace_back(device, random_problem(f, rng));
      add_all_ok_sweep(source, f, device, made.back().second, rng);
    }
    const auto unchecked = std::make_shared<UncheckedImports>();
    Store from_json = Store::open(dir.path / "json.db");
    from_json.check_imports_with(import_plan_check(fams, unchecked));
    from_json.import_json(source.export_json());
    Store from_csv = Store::open(dir.path / "csv.db");
    from_csv.check_imports_with(import_plan_check(fams, unchecked));
    std::ostringstream csv;
    source.export_csv(csv);
    from_csv.import_csv(csv.str());
    EXPECT_EQ(unchecked_imports_line(*unchecked), "");
  }
  std::ostringstream report;
  Store::merge({dir.path / "source.db"}, dir.path / "merged.db", report,
               import_plan_check(fams, std::make_shared<UncheckedImports>()));
  // Merging the same database again finds every sweep already there, unchanged.
  const auto again = Store::merge({dir.path / "source.db"}, dir.path / "merged.db", report,
                                  import_plan_check(fams, std::make_shared<UncheckedImports>()));
  EXPECT_EQ(again.total.sweeps_skipped, 6);
  EXPECT_EQ(again.total.sweeps_conflicting, 0) << report.str();
  std::size_t ok_seen = 0, refused_seen = 0;
  for (const auto& [db, origin] : std::vector<std::pair<std::string, std::string>>{
           {"json.db", "imported as ok"}, {"csv.db", "imported as ok"}, {"merged.db", "merged as ok"}}) {
    const Store store = Store::open(dir.path / db, Store::Mode::read_only);
    for (const auto& [device, problem] : made) {
      SCOPED_TRACE(db + ": " + problem.size_text() + " on " + device.name);
      expect_held_to_plan(store, f, device, problem, origin, ok_seen, refused_seen);
    }
  }
  EXPECT_GT(ok_seen, 0u);
  EXPECT_GT(refused_seen, 0u);
}

// A family this installation does not load cannot be held to a plan: its results are stored as they came,
// and the check says which families it could not check.
TEST(ImportProperty, ResultsOfFamiliesNotLoadedHereAreStoredAsTheyCameAndNamed) {
  const KernelFamily& f = gemm_tiled();
  std::mt19937_64 rng(7);
  tiletune::test::TempDir dir;
  Store source = Store::open(dir.path / "source.db");
  const DeviceLimits device = load_profile("h100");
  add_all_ok_sweep(source, f, device, f.make_problem({1000, 1000, 1000}, {}), rng);
  const auto unchecked = std::make_shared<UncheckedImports>();
  Store target = Store::open(dir.path / "target.db");
  target.check_imports_with(import_plan_check({}, unchecked));
  target.import_json(source.export_json());
  const auto sweeps = target.sweeps(f.name);
  ASSERT_EQ(sweeps.size(), 1u);
  for (const auto& r : target.results(sweeps.front().id)) EXPECT_EQ(r.record.outcome, Outcome::ok);
  EXPECT_EQ(unchecked_imports_line(*unchecked),
            "not checked against a plan: the ok results of families not loaded here (gemm_tiled; --templates "
            "DIR loads them)");
}

// A configuration that is not in the family's space here (a value it does not list, a parameter it lacks)
// is refused with the parameter named.
TEST(ImportProperty, ConfigurationsOutsideTheSpaceAreRefused) {
  const KernelFamily& f = gemm_tiled();
  const auto fams = load_families({tiletune::test::templates_dir()});
  const ImportPlanCheck check = import_plan_check(fams, std::make_shared<UncheckedImports>());
  const DeviceRecord device = load_profile("h100").record();
  const ProblemKey problem = f.make_problem({1000, 1000, 1000}, {});
  Params params = enumerate_space(f).front();
  EXPECT_EQ(check(f.name, device, problem, params), "");
  params.begin()->second = 7;
  EXPECT_EQ(check(f.name, device, problem, params),
            "not in gemm_tiled's space here: " + params.begin()->first + "=7 is not one of its values");
  params["UNROLL_Q"] = 1;
  params.erase(params.begin());
  EXPECT_EQ(check(f.name, device, problem, params),
            "not in gemm_tiled's space here: no parameter 'UNROLL_Q'");
}

TEST(ImportProperty, WhatAnImportStoresAsOkThePlanFindsRunnable) {
  const KernelFamily& f = gemm_tiled();
  std::mt19937_64 rng(27);
  const std::vector<std::string> profiles = {"h100", "a100", "rtx4090"};
  tiletune::test::TempDir dir;
  Store store = Store::open(dir.path / "t.db");
  std::size_t ok_seen = 0, refused_seen = 0;
  for (int round = 0; round < 9; ++round) {
    const DeviceLimits device = load_profile(profiles[static_cast<std::size_t>(round) % profiles.size()]);
    const ProblemKey problem = random_problem(f, rng);
    SCOPED_TRACE(problem.size_text() + " on " + device.name);
    const KernelTunerTarget target = target_for(f, device, problem);
    store.import_json(
        kernel_tuner_import_document(read_kernel_tuner_cache(all_ok_cache(f, problem, rng)), target));
    expect_held_to_plan(store, f, device, problem, "Kernel Tuner: ok", ok_seen, refused_seen);
  }
  // Both sides of the promise were exercised.
  EXPECT_GT(ok_seen, 0u);
  EXPECT_GT(refused_seen, 0u);
}
