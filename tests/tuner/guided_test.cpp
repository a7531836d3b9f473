// The model-guided strategy without a GPU: on landscapes made up here and on the committed reference spaces
// measured on an H100 (bench/spaces), by replay. The goal it must keep: within 1% of the brute-force best in
// at most a tenth of the evaluations, median over 20 seeds.
#include "tiletune/guided.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "../test_paths.hpp"
#include "gaussian_process.hpp"
#include "replay_support.hpp"
#include "tiletune/replay.hpp"

using namespace tiletune;
using tiletune::test::evaluations_to;

namespace {

// A GEMM-like landscape over four tile parameters: a valley whose best needs two of them to agree, with
// a third of the points failing (a region past a resource limit).
ReplaySpace tiles() {
  ReplaySpace s;
  s.name = s.family = "tiles";
  for (std::int64_t m = 0; m < 8; ++m)
    for (std::int64_t n = 0; n < 8; ++n)
      for (std::int64_t k = 0; k < 6; ++k)
        for (std::int64_t w = 0; w < 8; ++w) {
          ReplayPoint p;
          p.params = {{"M", 16 << m}, {"N", 16 << n}, {"K", 8 << k}, {"W", 1 + w}};
          p.compile_ms = 900 + 40 * static_cast<double>(m + n);
          p.measure_ms = 60;
          if (m + n + k < 15)
            p.median_ms = 1.0 + 0.3 * std::abs(m - n) + 0.2 * std::abs(m + n - 9) + 0.15 * std::abs(k - 3) +
                          0.05 * std::abs(w - 5) + 0.01 * static_cast<double>((m * 7 + n * 3 + w) % 5);
          s.points.push_back(p);
        }
  return s;
}

}  // namespace

TEST(Guided, FindsTheBestOfAMadeUpSpaceSoonerThanRandom) {
  const ReplaySpace s = tiles();
  const double guided = replay_stat(evaluations_to(s, "guided", 0.01, 20)).median;
  const double random = replay_stat(evaluations_to(s, "random", 0.01, 20)).median;
  EXPECT_LE(guided, 0.1 * static_cast<double>(s.points.size())) << "of " << s.points.size();
  EXPECT_LT(guided, random / 2) << "random took " << random;
}

TEST(Guided, NeverAsksTwiceNorPastItsBudgetAndSteersAwayFromFailures) {
  const ReplaySpace s = tiles();
  std::vector<Params> params;
  for (const auto& p : s.points) params.push_back(p.params);
  auto strategy = make_guided_strategy(parameter_features(replay_family(s), params), 150, 3);
  std::vector<std::optional<double>> times(s.points.size());
  std::size_t asked = 0, failed_late = 0;
  while (const auto i = strategy->next(times)) {
    ASSERT_FALSE(times[*i].has_value()) << "asked twice for " << *i;
    for (std::size_t u : strategy->upcoming()) EXPECT_FALSE(times[u].has_value());
    times[*i] = s.points[*i].median_ms.value_or(INFINITY);
    failed_late += asked >= 75 && !s.points[*i].median_ms;
    ++asked;
  }
  EXPECT_EQ(asked, 150u);
  EXPECT_LT(failed_late, 10u) << "the model should learn where configurations fail";
}

TEST(Guided, ASeedGivesOneRun) {
  const ReplaySpace s = tiles();
  EXPECT_EQ(evaluations_to(s, "guided", 0.0, 3), evaluations_to(s, "guided", 0.0, 3));
}

// Every committed reference space: within 1% of the best in at most a tenth of the evaluations, median over
// 20 seeds, replayed as a sweep of 16 compile jobs runs it (the README's table). That holds the small space
// whose best is a needle too (one configuration within 1% of 116: 10 evaluations on these seeds, 11 over 200,
// where two picks a fit took 14). The same replays, each also without the Gaussian process, show that its
// expected-improvement picks earn their place: the sum of the medians is lower with them than with every
// pick by the trees.
TEST(Guided, MeetsTheGoalOnEveryReferenceSpaceWithTheGaussianProcessPicks) {
  const auto dir = test::spaces_dir();
  ASSERT_FALSE(dir.empty()) << "bench/spaces not found";
  std::map<bool, double> sum;  // with the Gaussian process's picks, and without
  int spaces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".csv") continue;
    const ReplaySpace s = read_replay_space(entry.path());
    ++spaces;
    for (const bool with : {true, false}) {
      ReplayOptions o;
      o.compile_jobs = 16;
      o.gaussian_process = with;
      const double median = replay_stat(evaluations_to(s, "guided", 0.01, 20, o)).median;
      sum[with] += median;
      if (with) {
        EXPECT_LE(median, 0.1 * static_cast<double>(s.points.size()))
            << s.name << ": " << s.points.size() << " configurations";
      }
    }
  }
  EXPECT_GE(spaces, 8);
  EXPECT_LT(sum[true], 0.95 * sum[false]) << sum[true] << " evaluations against " << sum[false];
}

// With two GPUs a refit comes while the other GPU still measures its pick. That pick reads NaN (measured for
// picking, no time yet) and the model leaves it out; read as a failure (+inf, as until this test), it would
// steer the model away from the very region it had just chosen. On six reference spaces, two GPUs then need
// about as many evaluations as one (the sum of the medians over 20 seeds 6% more; it was 26% more).
TEST(Guided, TwoGpusNeedAboutAsManyEvaluationsAsOne) {
  const auto dir = test::spaces_dir();
  ASSERT_FALSE(dir.empty()) << "bench/spaces not found";
  std::map<std::size_t, double> sum;  // by GPUs
  for (const char* name :
       {"conv1d_register-2p28-mask63-h100", "conv1d_register-kt-h100", "conv2d_tiled-8192-mask15-h100",
        "gemm_bf16_wgmma-4096-h100", "gemm_bf16_wgmma-8192-h100", "gemm_tf32_wgmma-4096-h100"}) {
    const ReplaySpace s = read_replay_space(dir / (std::string(name) + ".csv"));
    for (const std::size_t gpus : {1, 2}) {
      ReplayOptions o;
      o.compile_jobs = 16;
      o.lanes = gpus;
      sum[gpus] += replay_stat(evaluations_to(s, "guided", 0.01, 20, o)).median;
    }
  }
  EXPECT_LE(sum[2], 1.15 * sum[1]) << sum[2] << " evaluations on two GPUs against " << sum[1] << " on one";
}

// The Gaussian process alone, on a made-up valley y = (x - 0.7)^2 over [0, 1] measured at seven points away
// from its floor: the highest expected improvement is near the floor, none is negative, and a point far from
// every measurement beats one on top of a measured point of the same predicted value.
TEST(Guided, TheGaussianProcessExpectsMostWhereTheValleyBottoms) {
  const auto valley = [](float x) { return (x - 0.7f) * (x - 0.7f); };
  std::vector<float> x, y;
  for (const float v : {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.95f, 1.0f}) x.push_back(v), y.push_back(valley(v));
  GaussianProcess gp;
  gp.fit(x, 1, y);
  std::vector<float> grid;
  for (int i = 0; i <= 100; ++i) grid.push_back(static_cast<float>(i) / 100);
  const std::vector<double> ei = gp.expected_improvement(grid);
  ASSERT_EQ(ei.size(), grid.size());
  for (const double e : ei) EXPECT_GE(e, 0.0);
  const auto best = static_cast<std::size_t>(std::max_element(ei.begin(), ei.end()) - ei.begin());
  EXPECT_NEAR(grid[best], 0.7, 0.15) << "expected improvement peaks at x = " << grid[best];
  EXPECT_LT(ei[20], 0.1 * ei[best]) << "a measured point far from the floor";
  EXPECT_TRUE(GaussianProcess().expected_improvement(grid).empty()) << "before a fit";
}

// With a probe of what is compiled, a lane is dealt the batch's first compiled pick, not its front; a lane
// that finds nothing compiled after something new was measured gets a refit whose picks join behind the
// batch's own (which stay: they are compiling). Without refits the batch is dealt in order.
TEST(Guided, DealsWhatIsCompiledAndRefitsWhenNothingIs) {
  const ReplaySpace s = tiles();
  std::vector<Params> params;
  for (const auto& p : s.points) params.push_back(p.params);
  for (const bool refit : {true, false}) {
    GuidedOptions o;
    o.initial = 8;
    o.refit_when_idle = refit;
    auto strategy = make_guided_strategy(parameter_features(replay_family(s), params), 100, 5, o);
    std::set<std::size_t> compiled;
    strategy->watch_compiles([&](std::size_t i) { return compiled.count(i) > 0; });
    std::vector<std::optional<double>> times(s.points.size());
    const auto measure = [&](std::size_t i) { times[i] = s.points[i].median_ms.value_or(INFINITY); };
    for (int k = 0; k < 9; ++k) measure(*strategy->next(times));   // the random start, the fit's first
    const std::vector<std::size_t> before = strategy->upcoming();  // the batch's other 7, then the tail
    ASSERT_GT(before.size(), 7u);
    compiled.insert(before[3]);
    EXPECT_EQ(*strategy->next(times), before[3]) << "refit " << refit << ": the compiled pick comes first";
    measure(before[3]);
    compiled.clear();
    EXPECT_EQ(*strategy->next(times), before[0]) << "refit " << refit << ": nothing compiled, the front";
    const std::vector<std::size_t> after = strategy->upcoming();
    const std::vector<std::size_t> kept = {before[1], before[2], before[4], before[5], before[6]};
    ASSERT_GE(after.size(), kept.size());
    EXPECT_EQ(std::vector<std::size_t>(after.begin(), after.begin() + 5), kept) << "refit " << refit;
    std::vector<std::size_t> old_tail(before.begin() + 7, before.end());
    const std::vector<std::size_t> behind(after.begin() + 5, after.end());
    if (refit)
      EXPECT_NE(behind, old_tail) << "a refit's picks join the batch";
    else
      EXPECT_EQ(behind, old_tail) << "no refit: the same tail";
  }
}

// On two compile-bound reference spaces (NVRTC takes seconds a configuration, the GPU milliseconds), the
// refits while compiles run finish a budget of 100 in well under the time of measuring each batch whole,
// and end as near the best.
TEST(Guided, RefitsWhileCompilingShortenCompileBoundSweeps) {
  const auto dir = test::spaces_dir();
  ASSERT_FALSE(dir.empty()) << "bench/spaces not found";
  for (const char* name : {"conv2d_tiled-8192-mask15-h100", "gemm_bf16_wgmma-4096-h100"}) {
    const ReplaySpace s = read_replay_space(dir / (std::string(name) + ".csv"));
    const KernelFamily f = replay_family(s);
    std::map<bool, std::vector<double>> seconds;
    std::map<bool, int> within;
    for (const bool refit : {true, false}) {
      ReplayOptions o;
      o.compile_jobs = 16;
      o.budget = 100;
      o.stop_within = -1;
      o.refit_when_idle = refit;
      for (std::uint64_t seed = 1; seed <= 10; ++seed) {
        const ReplayRun run = replay(s, f, "guided", seed, o);
        seconds[refit].push_back(run.curve.back().seconds);
        within[refit] += run.curve.back().best_ms <= *s.best_ms() * 1.01;
      }
    }
    const double with = replay_stat(seconds[true]).median, without = replay_stat(seconds[false]).median;
    EXPECT_LE(with, 0.8 * without) << name << ": " << with << " s against " << without << " s";
    EXPECT_GE(within[true], within[false] - 1) << name;
  }
}

// What Gpu.GuidedFindsNearlyTheBestOnARealSweep asks of a real sweep, on a stored one of the same space:
// gemm_tiled at 1024^3 (127 runnable configurations, measured on an H200 as that test measures) has one
// fastest configuration and then a tier 8 to 9% slower, so whether a budget of 40 comes within 10% of the
// best hinges on finding that one (about 4 seeds in 10 do; on an H100 the tier sits at 1.10, where the test's
// old bound missed by 0.03% and 0.14%). The five fastest it does reach, on all but a few seeds.
TEST(Guided, ABudgetOfAThirdOfASmallSpaceEndsAmongItsFiveFastest) {
  const auto dir = test::spaces_dir();
  ASSERT_FALSE(dir.empty()) << "bench/spaces not found";
  const ReplaySpace s = read_replay_space(dir / "small" / "gemm_tiled-1024-h200.csv");
  std::vector<double> times;
  for (const auto& p : s.points)
    if (p.median_ms) times.push_back(*p.median_ms);
  std::sort(times.begin(), times.end());
  ASSERT_GE(times.size(), 100u);
  const KernelFamily f = replay_family(s);
  ReplayOptions o;
  o.compile_jobs = 16;
  o.budget = 40;
  o.stop_within = -1;
  int fastest = 0, five = 0;
  constexpr int kSeeds = 100;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    const ReplayRun run = replay(s, f, "guided", static_cast<std::uint64_t>(seed), o);
    ASSERT_EQ(run.curve.size(), 40u);
    const double best = run.curve.back().best_ms;
    fastest += best == times[0];
    five += best <= times[4];
  }
  EXPECT_GE(five, 95) << "of " << kSeeds << " seeds";
  EXPECT_GE(fastest, 30) << "of " << kSeeds << " seeds";
}
