#include "gaussian_process.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <optional>

namespace tiletune {

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr double kNoise = 1e-2;  // the measurements' noise, in units of their spread (1e-3, 1e-1: no better)

double matern52(double squared_distance) {
  const double r = std::sqrt(5.0 * squared_distance);
  return (1 + r + r * r / 3) * std::exp(-r);
}

// The squared distance between every row of a and every row of b (`columns` wide, row-major).
Matrix squared_distances(const std::vector<float>& a, const std::vector<float>& b, std::size_t columns) {
  const std::size_t n = a.size() / columns, m = b.size() / columns;
  Matrix d(n, m);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j) {
      double sum = 0;
      for (std::size_t c = 0; c < columns; ++c) {
        const double e = a[i * columns + c] - b[j * columns + c];
        sum += e * e;
      }
      d(i, j) = sum;
    }
  return d;
}

// The kernel over those distances for a length scale whose inverse square is `inverse_square_scale`.
Matrix covariance(const Matrix& squared_distances, double inverse_square_scale) {
  return squared_distances.unaryExpr([&](double d) { return matern52(inverse_square_scale * d); });
}

// One length scale's fit of y over the points whose squared distances are given.
struct Fit {
  double likelihood = -INFINITY;  // the log marginal likelihood of y
  double inverse_square_scale = 1;
  std::vector<double> chol, alpha;  // K's Cholesky factor (row-major) and K^-1 y
};

// The fit for this length scale; nullopt where K is not positive definite.
std::optional<Fit> fit_for(const Matrix& squared_distances, double scale, const Eigen::VectorXd& y) {
  Fit fit;
  fit.inverse_square_scale = 1 / (scale * scale);
  Matrix k = covariance(squared_distances, fit.inverse_square_scale);
  k.diagonal().array() += kNoise;
  const Eigen::LLT<Matrix> llt(k);
  if (llt.info() != Eigen::Success) return std::nullopt;
  const Eigen::VectorXd a = llt.solve(y);
  fit.likelihood = -0.5 * y.dot(a) - llt.matrixLLT().diagonal().array().log().sum();
  const Matrix l = llt.matrixL();
  fit.chol.assign(l.data(), l.data() + l.size());
  fit.alpha.assign(a.data(), a.data() + a.size());
  return fit;
}

}  // namespace

void GaussianProcess::fit(const std::vector<float>& x, std::size_t columns, const std::vector<float>& y) {
  x_ = x;
  columns_ = columns;
  Eigen::VectorXd v =
      Eigen::Map<const Eigen::VectorXf>(y.data(), static_cast<Eigen::Index>(y.size())).cast<double>();
  const double mean = v.mean(), spread = std::sqrt((v.array() - mean).square().mean());
  v = (v.array() - mean) / (spread > 0 ? spread : 1);
  lowest_ = v.minCoeff();
  const Matrix d = squared_distances(x, x, columns);
  std::optional<Fit> best;
  for (const double scale : {0.25, 0.5, 1.0, 2.0, 4.0})  // the one of these that explains y best
    if (auto f = fit_for(d, scale, v); f && (!best || f->likelihood > best->likelihood)) best = std::move(f);
  alpha_.clear();
  if (!best) return;
  inverse_square_scale_ = best->inverse_square_scale;
  chol_ = std::move(best->chol);
  alpha_ = std::move(best->alpha);
}

std::vector<double> GaussianProcess::expected_improvement(const std::vector<float>& x) const {
  if (alpha_.empty()) return {};
  const auto n = static_cast<Eigen::Index>(alpha_.size());
  const Matrix ks = covariance(squared_distances(x_, x, columns_), inverse_square_scale_);  // n x m
  const Eigen::Map<const Matrix> l(chol_.data(), n, n);
  const Eigen::Map<const Eigen::VectorXd> a(alpha_.data(), n);
  const Matrix w = l.triangularView<Eigen::Lower>().solve(ks);
  std::vector<double> out(static_cast<std::size_t>(ks.cols()));
  for (Eigen::Index j = 0; j < ks.cols(); ++j) {
    const double mu = ks.col(j).dot(a);
    const double sd = std::sqrt(std::max(1.0 - w.col(j).squaredNorm(), 1e-12));
    const double z = (lowest_ - mu) / sd;
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0)),
                 pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
    out[static_cast<std::size_t>(j)] = (lowest_ - mu) * cdf + sd * pdf;
  }
  return out;
}

}  // namespace tiletune
