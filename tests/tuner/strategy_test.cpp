#include "tiletune/strategy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>

#include "../test_paths.hpp"
#include "tiletune/plan.hpp"

using namespace tiletune;

namespace {

// A made-up landscape over gemm_tiled's space with one best point, to drive strategies without a GPU.
double cost(const Params& p) {
  return 1.0 + std::abs(std::log2(static_cast<double>(p.at("TILE_WIDTH")) / 32)) +
         std::abs(std::log2(static_cast<double>(p.at("BLOCK_Y")) / 8)) +
         0.5 * std::abs(std::log2(static_cast<double>(p.at("TILE_K")) / 32));
}

// The configurations of a family that run on the H100 at 1000x1000x1000.
std::vector<Params> runnable_on_h100(const KernelFamily& f) {
  std::vector<Params> out;
  const DeviceLimits h100 = load_profile("h100");
  for (const auto& p : enumerate_space(f))
    if (prune_before_compile(f, h100, f.make_problem({1000, 1000, 1000}, {}), p).outcome == Outcome::ok)
      out.push_back(p);
  return out;
}

std::pair<double, std::size_t> run(const std::string& name, std::size_t budget) {
  const auto fams = load_families({tiletune::test::templates_dir()});
  const auto& f = find_family(fams, "gemm_tiled");
  const std::vector<Params> candidates = runnable_on_h100(f);
  auto s = make_strategy(name, f, candidates, budget, 7);
  std::vector<std::optional<double>> times(candidates.size());
  std::set<std::size_t> seen;
  double best = std::numeric_limits<double>::infinity();
  while (auto i = s->next(times)) {
    EXPECT_TRUE(seen.insert(*i).second) << name << " measured a candidate twice";
    times[*i] = cost(candidates[*i]);
    best = std::min(best, *times[*i]);
  }
  return {best, seen.size()};
}

}  // namespace

TEST(Strategy, BruteForceMeasuresEverythingOnce) {
  const auto [best, n] = run("brute_force", 0);
  EXPECT_EQ(n, 127u);
  EXPECT_DOUBLE_EQ(best, 1.0);
}

TEST(Strategy, BudgetsAreRespected) {
  EXPECT_EQ(run("random", 20).second, 20u);
  EXPECT_EQ(run("annealing", 20).second, 20u);
  EXPECT_EQ(run("brute_force", 5).second, 5u);
}

TEST(Strategy, AnnealingFindsTheOptimumOfASmoothLandscapeWithinHalfTheSpace) {
  const auto [best, n] = run("annealing", 60);
  EXPECT_LE(n, 60u);
  EXPECT_DOUBLE_EQ(best, 1.0);
}

// Annealing announces what it will ask for (so that it compiles together): most candidates it asks for (not
// its random starts, nor a move the look-ahead did not foresee) were announced by upcoming() just before.
TEST(Strategy, AnnealingAsksForWhatItAnnounced) {
  const auto fams = load_families({tiletune::test::templates_dir()});
  const auto& f = find_family(fams, "gemm_regtile");
  const std::vector<Params> candidates = runnable_on_h100(f);
  // A landscape with one best point: the distance in steps along each parameter's list from the default.
  const Params best = f.default_params();
  auto cost = [&](const Params& p) {
    double c = 1.0;
    for (const auto& param : f.parameters) {
      const auto& v = param.values;
      c += std::abs(std::find(v.begin(), v.end(), p.at(param.name)) -
                    std::find(v.begin(), v.end(), best.at(param.name)));
    }
    return c;
  };
  auto s = make_strategy("annealing", f, candidates, 80, 3);
  std::vector<std::optional<double>> times(candidates.size());
  std::vector<std::size_t> announced;
  int asked = 0, foreseen = 0;
  while (auto i = s->next(times)) {
    ++asked;
    if (std::find(announced.begin(), announced.end(), *i) != announced.end()) ++foreseen;
    times[*i] = cost(candidates[*i]);
    announced = s->upcoming();
    for (auto a : announced) EXPECT_FALSE(times[a].has_value()) << "announced a measured candidate";
  }
  EXPECT_EQ(asked, 80);
  EXPECT_GE(foreseen, asked * 3 / 4) << foreseen << " of " << asked;
}

TEST(Strategy, UnknownNameIsRejected) {
  EXPECT_THROW(make_strategy("genetic", KernelFamily{}, {}, 0, 0), std::invalid_argument);
}

// The registry is the one list of strategies: each has help for --help, those that sample lazily can be made
// over a lazily indexed space and the others refuse it in one line, walkers per lane follow the capability,
// and the README's sweep line names every registered strategy.
TEST(Strategy, TheRegistryDrivesHelpCapabilitiesAndTheReadme) {
  const std::string help = strategy_help();
  std::ifstream readme(test::templates_dir() / ".." / "README.md");
  const std::string text((std::istreambuf_iterator<char>(readme)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  const auto sweep_line = text.find("`--strategy brute_force|");
  ASSERT_NE(sweep_line, std::string::npos);
  const std::string line = text.substr(sweep_line, text.find('`', sweep_line + 1) - sweep_line);
  const auto families = load_families({test::templates_dir()});
  const KernelFamily& f = find_family(families, "gemm_tiled");
  const auto candidates = runnable_on_h100(f);
  for (const StrategyInfo& s : strategy_registry()) {
    EXPECT_NE(help.find(s.name + ": "), std::string::npos) << s.name;
    EXPECT_FALSE(s.help.empty()) << s.name;
    EXPECT_NE(line.find(s.name), std::string::npos) << s.name << " is not in the README's --strategy list";
    EXPECT_EQ(s.samples_lazily, s.make_lazy != nullptr) << s.name;
    EXPECT_EQ(&find_strategy(s.name), &s);
    if (s.reads_history) continue;  // guided needs XGBoost, tested where it is
    const auto walkers = make_strategies(s.name, f, candidates, 10, 1, 3);
    EXPECT_EQ(walkers.size(), s.walker_per_lane ? 3u : 1u) << s.name;
  }
  try {
    find_strategy("genetic");
    ADD_FAILURE() << "an unknown strategy was found";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("brute_force, random, annealing, guided"), std::string::npos)
        << e.what();
  }
}
