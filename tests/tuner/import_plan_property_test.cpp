// The promise of an import: whatever it stores as ok, the family's plan for that device and problem finds
// runnable. Kernel Tuner caches that call every configuration ok, whatever its constraints, threads, grid or
// sizes, are imported over random problems and devices, and every stored ok result is planned again.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "../test_paths.hpp"
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

}  // namespace

TEST(ImportProperty, WhatAnImportStoresAsOkThePlanFindsRunnable) {
  const KernelFamily& f = gemm_tiled();
  std::mt19937_64 rng(27);
  // Sizes that fit (most often), that need a grid over the device's limit or buffers no device holds, and
  // that overflow the kernel's int scalars.
  const std::vector<std::int64_t> sizes = {1, 64, 1000, 4096, 70000, 1000000, 3000000000LL};
  std::discrete_distribution<std::size_t> pick({4, 4, 4, 4, 1, 1, 1});
  const std::vector<std::string> profiles = {"h100", "a100", "rtx4090"};
  tiletune::test::TempDir dir;
  Store store = Store::open(dir.path / "t.db");
  std::size_t ok_seen = 0, refused_seen = 0;
  for (int round = 0; round < 9; ++round) {
    const DeviceLimits device = load_profile(profiles[static_cast<std::size_t>(round) % profiles.size()]);
    const ProblemKey problem = f.make_problem({sizes[pick(rng)], sizes[pick(rng)], sizes[pick(rng)]}, {});
    SCOPED_TRACE(problem.size_text() + " on " + device.name);
    const KernelTunerTarget target = target_for(f, device, problem);
    store.import_json(
        kernel_tuner_import_document(read_kernel_tuner_cache(all_ok_cache(f, problem, rng)), target));
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
        EXPECT_EQ(r.record.reason, planned.reason + " (Kernel Tuner: ok)");
      }
    }
    if (const auto best = store.best(f.name, device.name, problem)) {
      EXPECT_EQ(prune_before_compile(f, device, problem, best->record.params).outcome, Outcome::ok);
    }
  }
  // Both sides of the promise were exercised.
  EXPECT_GT(ok_seen, 0u);
  EXPECT_GT(refused_seen, 0u);
}
