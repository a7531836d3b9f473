#include "gaussian_process.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

namespace tiletune {

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr double kNoise = 1e-2;  // the measurements' noise, in units of their spread (1e-3, 1e-1: no better)

double matern52(double squared_distance) {
  const double r = std::sqrt(5.0 * squared_distance);
  return (1 + r + r * r / 3) * std::exp(-r);
}

Matrix covariance(const std::vector<float>& a, const std::vector<float>& b,
                  const std::vector<double>& weights) {
  const std::size_t columns = weights.size(), n = a.size() / columns, m = b.size() / columns;
  Matrix k(n, m);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j) {
      double d = 0;
      for (std::size_t c = 0; c < columns; ++c) {
        const double e = a[i * columns + c] - b[j * columns + c];
        d += weights[c] * e * e;
      }
      k(i, j) = matern52(d);
    }
  return k;
}

}  // namespace

// The log marginal likelihood of y under these weights (-inf where K is not positive definite); the best so
// far is kept as the fit.
double GaussianProcess::try_fit(const std::vector<double>& weights, const std::vector<double>& y) {
  const auto n = static_cast<Eigen::Index>(y.size());
  Matrix k = covariance(x_, x_, weights);
  k.diagonal().array() += kNoise;
  const Eigen::LLT<Matrix> llt(k);
  if (llt.info() != Eigen::Success) return -INFINITY;
  const Eigen::Map<const Eigen::VectorXd> v(y.data(), n);
  const Eigen::VectorXd a = llt.solve(v);
  const double likelihood = -0.5 * v.dot(a) - llt.matrixLLT().diagonal().array().log().sum();
  if (alpha_.empty() || likelihood > best_likelihood_) {
    best_likelihood_ = likelihood;
    weights_ = weights;
    const Matrix l = llt.matrixL();
    chol_.assign(l.data(), l.data() + l.size());
    alpha_.assign(a.data(), a.data() + a.size());
  }
  return likelihood;
}

void GaussianProcess::fit(const std::vector<float>& x, std::size_t columns, const std::vector<float>& y) {
  x_ = x;
  alpha_.clear();
  std::vector<double> v(y.begin(), y.end());
  double mean = 0, spread = 0;
  for (double e : v) mean += e / static_cast<double>(v.size());
  for (double e : v) spread += (e - mean) * (e - mean) / static_cast<double>(v.size());
  spread = spread > 0 ? std::sqrt(spread) : 1;
  for (double& e : v) e = (e - mean) / spread;
  lowest_ = *std::min_element(v.begin(), v.end());
  const double scales[] = {0.25, 0.5, 1.0, 2.0, 4.0};
  for (const double s : scales) try_fit(std::vector<double>(columns, 1 / (s * s)), v);
}

std::vector<double> GaussianProcess::expected_improvement(const std::vector<float>& x) const {
  if (alpha_.empty()) return {};
  const auto n = static_cast<Eigen::Index>(alpha_.size());
  const Matrix ks = covariance(x_, x, weights_);  // n x m
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
