// How well one ordering agrees with another: Spearman's rank correlation.
#pragma once

#include <vector>

namespace tiletune {

// Spearman's rank correlation of a and b (of one length): 1 when they order the same, -1 when reversed, 0
// when unrelated or either is constant or shorter than 2. Ties take their mean rank; +inf ranks last.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tiletune
