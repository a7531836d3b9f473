#include "weighted_consensus.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tiletune {

std::vector<float> weighted_log_consensus(const std::vector<const std::vector<float>*>& members,
                                          const std::vector<double>& weights) {
  const std::size_t n = members.empty() ? 0 : members.front()->size();
  std::vector<float> out(n, NAN);
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0, weight = 0;
    for (std::size_t k = 0; k < members.size(); ++k) {
      const float v = i < members[k]->size() ? (*members[k])[i] : NAN;
      if (std::isnan(v)) continue;
      sum += weights[k] * v;
      weight += weights[k];
    }
    if (weight > 0) out[i] = static_cast<float>(sum / weight);
  }
  return out;
}

std::vector<float> unit_ranks(const std::vector<float>& log_times) {
  std::vector<std::pair<float, std::size_t>> ok;
  std::vector<float> rank(log_times.size(), NAN);
  for (std::size_t i = 0; i < log_times.size(); ++i) {
    if (std::isfinite(log_times[i]))
      ok.emplace_back(log_times[i], i);
    else if (!std::isnan(log_times[i]))
      rank[i] = 1.0f;
  }
  std::sort(ok.begin(), ok.end());
  for (std::size_t j = 0; j < ok.size(); ++j)
    rank[ok[j].second] = ok.size() > 1
                             ? static_cast<float>(static_cast<double>(j) / static_cast<double>(ok.size() - 1))
                             : 0.0f;
  return rank;
}

double member_weight(double misfit) { return 1.0 / std::pow(std::max(misfit, kLeastMisfit), kMisfitPower); }

}  // namespace tiletune
