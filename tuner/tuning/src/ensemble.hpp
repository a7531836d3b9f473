// What guided's models say of the open candidates at one pick: the predictions of the trees fitted on every
// measurement, of those fitted on each bootstrap resample, and the Gaussian process's expected improvements.
// They are independent of each other, so the resamples' trees and the process are fitted and predict on
// threads of their own while the full model is fitted and predicts on the caller's and the GPU waits for the
// pick; what each computes, and so every pick, is what it was one after the other.
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
  BoostedTrees* full = nullptr;  // fitted here on every measurement: full_x and full_y
  std::vector<float> full_x, full_y;
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

// The predictions for the rows of `open` (each `width` wide, row-major). A model's error is rethrown once
// every task has ended: the full model's first, then the resamples' in order, then the process's.
EnsemblePredictions predict_ensemble(const EnsembleInput& input, const std::vector<float>& open);

}  // namespace tiletune
