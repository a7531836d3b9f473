// Transfer: what the store's sweeps of the same family on other problems or devices say about a new one.
// Their best configurations are measured first, and each configuration's rank among them is a prior the
// guided strategy's model learns from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/records.hpp"

namespace tiletune {

class Store;

// One earlier sweep: what it was ("4096x4096x4096 on NVIDIA H100 80GB HBM3") and every result's median
// (nullopt: it failed). Pruned configurations are left out.
struct PriorSweep {
  std::string label;
  std::vector<std::pair<Params, std::optional<double>>> results;
};

// The newest `limit` sweeps of `family` with an ok result, other than sweep `exclude`.
std::vector<PriorSweep> prior_sweeps(const Store& store, const std::string& family, std::int64_t exclude,
                                     std::size_t limit = 8);

struct Transfer {
  // Per candidate: its mean rank among the prior sweeps' results, 0 the fastest to 1 the slowest or failed;
  // NaN where no prior sweep measured it.
  std::vector<float> rank;
  std::vector<std::size_t> first;  // candidates to measure first: each prior sweep's fastest, in turn
  std::string line;                // what the sweep says on its first line ("" without prior sweeps)
};

// `first_per_sweep`: how many of each prior sweep's fastest configurations are measured first.
Transfer transfer_from(const std::vector<PriorSweep>& prior, const std::vector<Params>& candidates,
                       std::size_t first_per_sweep = 3);

}  // namespace tiletune
