// Search strategies: which configuration to measure next. Every strategy measures each candidate at most
// once and stops at its budget.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/family.hpp"

namespace tiletune {

class Strategy {
 public:
  virtual ~Strategy() = default;
  // `times[i]` is the measured median of candidate i, +inf when it failed, nullopt when not yet measured.
  virtual std::optional<std::size_t> next(const std::vector<std::optional<double>>& times) = 0;
  // The order in which candidates are likely to be asked for, so compiling can run ahead.
  virtual std::vector<std::size_t> likely_order() const = 0;
  // Whether likely_order is the true order (compiling ahead then never wastes work).
  virtual bool order_is_fixed() const = 0;
  // For a strategy whose order is not fixed: what it will ask for after the candidate next() just gave, so
  // that they compile together.
  virtual std::vector<std::size_t> upcoming() const { return {}; }
};

std::vector<std::string> strategy_names();  // brute_force, random, annealing

// budget: at most this many measurements (0: no limit beyond the candidate count).
// Throws std::invalid_argument on an unknown name.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const KernelFamily& family,
                                        const std::vector<Params>& candidates, std::size_t budget, std::uint64_t seed);

}  // namespace tiletune
