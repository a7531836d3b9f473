// Transfer: what the store's sweeps of the same family on other problems or devices say about a new one.
// Their best configurations are measured first; each sweep's rank of each configuration is a feature the
// guided strategy's model learns from, and the start follows the sweep whose order agrees best with what was
// measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/guided.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/records.hpp"

namespace tiletune {

class Store;

// One earlier sweep: what it was ("4096x4096x4096 on NVIDIA H100 80GB HBM3", or "gemm_bf16_wgmma at
// 4096x4096x4096 on NVIDIA H200" for a sibling's) and every result's median (nullopt: it failed). Pruned
// configurations are left out.
struct PriorSweep {
  std::string label;
  std::vector<std::pair<Params, std::optional<double>>> results;
  bool sibling = false;  // a sweep of a sibling family (see sibling_families), not of this one
};

// How many earlier sweeps a sweep starts from at most, its siblings' and its own together.
constexpr std::size_t kMaxPriorSweeps = 8;

// The newest `limit` sweeps of `family` with an ok result, other than sweep `exclude`.
std::vector<PriorSweep> prior_sweeps(const Store& store, const std::string& family, std::int64_t exclude,
                                     std::size_t limit = kMaxPriorSweeps);
// The newest sweep with an ok result of each of `siblings` on `problem` (any device), at most `limit`.
std::vector<PriorSweep> sibling_sweeps(const Store& store, const std::vector<std::string>& siblings,
                                       const ProblemKey& problem, std::size_t limit = 4);

// Earlier sweeps in the terms of `family` as it is now: a parameter the family gained since a sweep ran (a
// configuration stored without it) takes the family's default value, and one it no longer lists is left out
// (of configurations that then coincide, the fastest stands for them). Without this, a sweep stored before
// the family gained a parameter matches none of its configurations and transfers nothing.
std::vector<PriorSweep> conform(std::vector<PriorSweep> prior, const KernelFamily& family);

struct Transfer {
  // Per prior sweep, per candidate: its rank among that sweep's results, 0 the fastest to 1 the slowest or
  // failed; NaN where that sweep did not measure it. Sizes differ in what is fast (a GEMM of 1000^3 splits K,
  // one of 4096^3 does not), so each sweep stays its own column rather than one mean.
  std::vector<std::vector<float>> ranks;
  std::vector<std::size_t> first;  // candidates to measure first: each prior sweep's fastest, in turn
  std::string line;                // what the sweep says on its first line ("" without prior sweeps)
};

// `first_per_sweep`: how many of each prior sweep's fastest configurations are measured first. Where none of
// the prior sweeps' configurations is among `candidates`, the transfer is empty (no line).
Transfer transfer_from(const std::vector<PriorSweep>& prior, const std::vector<Params>& candidates,
                       std::size_t first_per_sweep = 3);

// Transfer over a space too large to enumerate, whose candidates are drawn as the walk goes (so no rank
// prior): each prior sweep's `first_per_sweep` fastest configurations, in turn, that run on this problem are
// visited in `space` now and go into `guided` to be measured first. Returns the line that says so ("" where
// there are no prior sweeps or none of their fastest runs here).
std::string lazy_transfer(const std::vector<PriorSweep>& prior, LazyCandidates& space, GuidedOptions& guided,
                          std::size_t first_per_sweep = 3);

// Hands `transfer` to guided: each prior sweep's rank of each candidate joins the candidate's feature row,
// and its first picks and priors go into `guided`.
void use_transfer(Transfer transfer, std::vector<std::vector<float>>& rows, GuidedOptions& guided);

}  // namespace tiletune
