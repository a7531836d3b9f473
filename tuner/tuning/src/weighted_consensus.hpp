// The consensus of several earlier sweeps of other problems, each weighed by how well its times fit what
// this problem has measured so far (see GuidedOptions::members).
#pragma once

#include <cstddef>
#include <vector>

namespace tiletune {

// Per candidate, the weighted mean of the members' log times (each over its own sweep's fastest): a member
// without a time for it (NaN) is left out of its mean, one that failed it (+inf) makes it +inf; NaN where
// no member has it. `weights` holds one positive weight per member.
std::vector<float> weighted_log_consensus(const std::vector<const std::vector<float>*>& members,
                                          const std::vector<double>& weights);

// Each log time's rank among the finite ones, 0 the fastest to 1 the slowest; 1 for +inf (a failure); NaN
// stays NaN.
std::vector<float> unit_ranks(const std::vector<float>& log_times);

// A member's weight from its misfit (the standard deviation of log(measured / its time) over what was
// measured): 1 / max(misfit, kLeastMisfit)^kMisfitPower. By replay of `gemm_regtile` 2000^3 on an H200
// from 1000^3 and 4096^3, evaluations to within 1% (median over seeds 1 to 20, and 101 to 120): equal
// weights 223 and 198, the power 2 (inverse variance) 60 and 72, the power 4 24 and 22.
constexpr double kLeastMisfit = 0.01;
constexpr double kMisfitPower = 4;
double member_weight(double misfit);

}  // namespace tiletune
