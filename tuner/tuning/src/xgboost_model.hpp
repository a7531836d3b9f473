// A gradient-boosted tree regressor from XGBoost's C API, opened at run time (dlopen) so that tiletune starts
// without the library and says in one line what is missing when a strategy needs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tiletune {

// Why XGBoost cannot be used ("" when it can): the library or one of its functions is missing.
const std::string& xgboost_unavailable();

class BoostedTrees {
 public:
  // rounds: trees grown per fit; seed: XGBoost's own, so that a fit is reproducible. Throws
  // std::runtime_error (xgboost_unavailable()) when the library cannot be used.
  BoostedTrees(int rounds, std::uint64_t seed);
  // Fits rows of x (each `columns` wide, row-major) to y, replacing any earlier fit. Throws
  // std::runtime_error with XGBoost's message when it fails.
  void fit(const std::vector<float>& x, std::size_t columns, const std::vector<float>& y);
  // Predictions for rows of x of the fitted width.
  std::vector<float> predict(const std::vector<float>& x, std::size_t columns) const;

 private:
  int rounds_;
  std::uint64_t seed_;
  std::shared_ptr<void> booster_;  // freed through XGBoost
};

}  // namespace tiletune
