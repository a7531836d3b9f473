// What guided's models say of the open candidates at one pick: the full model's predictions, each bootstrap
// resample's and the Gaussian process's expected improvements. They are independent of each other, so each
// runs on a thread of its own while the GPU waits for the next pick; what each computes, and so every pick,
// is what it was one after the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "xgboost_model.hpp"

namespace tiletune {

// One bootstrap resample of the measurements: its feature rows, its targets and its model's seed.
struct Resample {
  std::vector<float> x, y;
  std::uint64_t seed = 0;
};

// What the Gaussian process fits (rows and targets, not yet scaled).
struct ProcessRows {
  std::vector<float> x, y;
};

struct EnsembleInput {
  const BoostedTrees* full = nullptr;  // fitted on every measurement
  std::vector<Resample> resamples;
  std::optional<ProcessRows> process;  // none: no expected-improvement picks
  int rounds = 0;                      // trees per resample's fit
  std::size_t width = 0;               // feature columns
};

struct EnsemblePredictions {
  std::vector<float> full;
  std::vector<std::vector<float>> resampled;  // one per resample, in the input's order
  std::vector<double> improvements;           // empty without a process or where it could not fit
};

// The predictions for the rows of `open` (each `width` wide, row-major). Rethrows the first model's error.
EnsemblePredictions predict_ensemble(const EnsembleInput& input, const std::vector<float>& open);

}  // namespace tiletune
