// guided's models predict on threads of their own (tuner/tuning/src/ensemble.hpp): what they give must be
// what each gives alone, one after the other, so that a seed's picks do not depend on the threads.
#include "ensemble.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "gaussian_process.hpp"

namespace tiletune {
namespace {

constexpr std::size_t kWidth = 3;

// Rows of kWidth columns in [0, 1]; the first row all 0 and the second all 1, so that scaling each column
// to [0, 1] over any table holding both changes nothing.
std::vector<float> rows(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> x(n * kWidth);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = i < kWidth ? 0.0f : i < 2 * kWidth ? 1.0f : u(rng);
  return x;
}

// The rows moved to [3, 10], as the ensemble gets them: the Gaussian process must scale them back.
std::vector<float> stretched(std::vector<float> x) {
  for (float& v : x) v = 7 * v + 3;
  return x;
}

std::vector<float> times_of(const std::vector<float>& x) {
  std::vector<float> y;
  for (std::size_t i = 0; i < x.size(); i += kWidth)
    y.push_back(std::log(1 + 3 * x[i] + (x[i + 1] - 0.4f) * (x[i + 1] - 0.4f) + 0.1f * x[i + 2]));
  return y;
}

TEST(Ensemble, EachModelPredictsWhatItPredictsAlone) {
  if (!xgboost_unavailable().empty()) GTEST_SKIP() << xgboost_unavailable();
  std::mt19937_64 rng(7);
  const std::vector<float> measured = rows(40, rng), open = rows(500, rng);
  const std::vector<float> y = times_of(measured);
  BoostedTrees full(20, 1);
  EnsembleInput input;
  input.full = &full;
  input.full_x = stretched(measured);
  input.full_y = y;
  input.rounds = 20;
  input.width = kWidth;
  for (std::uint64_t seed : {11u, 12u, 13u}) {
    Resample r;
    r.x = stretched(rows(40, rng));
    r.y = times_of(r.x);
    r.seed = seed;
    input.resamples.push_back(std::move(r));
  }
  input.process = ProcessRows{stretched(measured), y};

  const EnsemblePredictions p = predict_ensemble(input, stretched(open));

  BoostedTrees full_alone(20, 1);
  full_alone.fit(stretched(measured), kWidth, y);
  EXPECT_EQ(p.full, full_alone.predict(stretched(open), kWidth));
  EXPECT_EQ(full.predict(stretched(open), kWidth), p.full) << "the full model is left fitted";
  ASSERT_EQ(p.resampled.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    BoostedTrees alone(20, input.resamples[k].seed);
    alone.fit(input.resamples[k].x, kWidth, input.resamples[k].y);
    EXPECT_EQ(p.resampled[k], alone.predict(stretched(open), kWidth)) << "resample " << k;
  }
  EXPECT_NE(p.resampled[0], p.resampled[1]) << "the resamples differ, so a mix-up would show";
  // The process sees the columns scaled to [0, 1] over the fitted and the open rows together: here the rows
  // as they were before stretching (to rounding).
  GaussianProcess process;
  process.fit(measured, kWidth, y);
  const std::vector<double> expected = process.expected_improvement(open);
  ASSERT_EQ(p.improvements.size(), expected.size());
  for (std::size_t j = 0; j < expected.size(); ++j)
    EXPECT_NEAR(p.improvements[j], expected[j], 1e-4 + 1e-3 * expected[j]) << "row " << j;
}

TEST(Ensemble, WithoutAProcessItGivesNoImprovementsAndAModelsErrorReachesTheCaller) {
  if (!xgboost_unavailable().empty()) GTEST_SKIP() << xgboost_unavailable();
  std::mt19937_64 rng(3);
  const std::vector<float> measured = rows(20, rng), open = rows(50, rng);
  BoostedTrees full(10, 1);
  EnsembleInput input;
  input.full = &full;
  input.full_x = measured;
  input.full_y = times_of(measured);
  input.rounds = 10;
  input.width = kWidth;
  EXPECT_TRUE(predict_ensemble(input, open).improvements.empty());

  Resample bad;  // one label for two rows: XGBoost refuses the fit
  bad.x = rows(2, rng);
  bad.y = {1.0f};
  input.resamples.push_back(bad);
  EXPECT_THROW(predict_ensemble(input, open), std::runtime_error);
}

}  // namespace
}  // namespace tiletune
