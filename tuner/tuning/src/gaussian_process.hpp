// A Gaussian process regressor over feature rows scaled to [0, 1]: a Matern 5/2 kernel of one length scale
// for every column, chosen at each fit among a few by the marginal likelihood. Where the trees say what looks
// fast, it says how sure that is, for an expected-improvement pick.
#pragma once

#include <cstddef>
#include <vector>

namespace tiletune {

class GaussianProcess {
 public:
  // Fits rows of x (each `columns` wide, row-major, scaled to [0, 1]) to y (not empty), replacing any
  // earlier fit.
  void fit(const std::vector<float>& x, std::size_t columns, const std::vector<float>& y);
  // The expected improvement over the lowest y fitted, per row of x; empty before a fit.
  std::vector<double> expected_improvement(const std::vector<float>& x) const;

 private:
  std::vector<float> x_;
  std::size_t columns_ = 0;
  double inverse_square_scale_ = 1;  // 1 / the length scale kept, squared
  std::vector<double> alpha_;        // K^-1 y, y standardised
  std::vector<double> chol_;         // K's Cholesky factor, row-major
  double lowest_ = 0;                // the lowest y fitted, standardised
};

}  // namespace tiletune
