#include "ensemble.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <future>
#include <initializer_list>

#include "gaussian_process.hpp"

namespace tiletune {

namespace {

// Scales each of the `columns` columns of the row-major tables to [0, 1] over all of their rows together (a
// column of one value to 0); an unknown value (NaN: a prior's rank unknown) goes to 1, the far end.
void scale_columns(std::initializer_list<std::vector<float>*> tables, std::size_t columns) {
  std::vector<float> lo(columns, INFINITY), hi(columns, -INFINITY);
  for (const std::vector<float>* t : tables)
    for (std::size_t i = 0; i < t->size(); ++i)
      lo[i % columns] = std::min(lo[i % columns], (*t)[i]),
             hi[i % columns] = std::max(hi[i % columns], (*t)[i]);
  for (std::vector<float>* t : tables)
    for (std::size_t i = 0; i < t->size(); ++i) {
      const std::size_t c = i % columns;
      (*t)[i] = std::isnan((*t)[i]) ? 1.0f : hi[c] > lo[c] ? ((*t)[i] - lo[c]) / (hi[c] - lo[c]) : 0.0f;
    }
}

std::vector<float> resample_predictions(const Resample& r, int rounds, std::size_t width,
                                        const std::vector<float>& open) {
  BoostedTrees model(rounds, r.seed);
  model.fit(r.x, width, r.y);
  return model.predict(open, width);
}

// The expected improvement per open row of a Gaussian process fitted on `rows`, every column scaled to
// [0, 1] over the fitted rows and the open ones together.
std::vector<double> improvements(ProcessRows rows, std::vector<float> open, std::size_t width) {
  scale_columns({&rows.x, &open}, width);
  GaussianProcess process;
  process.fit(rows.x, width, rows.y);
  return process.expected_improvement(open);
}

}  // namespace

EnsemblePredictions predict_ensemble(const EnsembleInput& input, const std::vector<float>& open) {
  // The destructor of a future from std::async waits for its task, so every task has ended before this
  // returns or an exception leaves it. Where no thread can be started, a task runs when its result is asked
  // for (the deferred launch), one after the other as before.
  constexpr auto policy = std::launch::async | std::launch::deferred;
  std::vector<std::future<std::vector<float>>> resampled;
  for (const Resample& r : input.resamples)
    resampled.push_back(
        std::async(policy, resample_predictions, std::cref(r), input.rounds, input.width, std::cref(open)));
  std::future<std::vector<double>> improved;
  if (input.process) improved = std::async(policy, improvements, *input.process, open, input.width);
  EnsemblePredictions out;
  input.full->fit(input.full_x, input.width, input.full_y);
  out.full = input.full->predict(open, input.width);
  for (auto& f : resampled) out.resampled.push_back(f.get());
  if (improved.valid()) out.improvements = improved.get();
  return out;
}

}  // namespace tiletune
