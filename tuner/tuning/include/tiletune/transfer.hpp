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

// One configuration's grid on a problem: its blocks, and the warps each SM holds while they run (see
// resident_warps); 0 where unknown.
struct GridOf {
  double blocks = 0;
  double warps = 0;
};

// One earlier sweep: what it was ("4096x4096x4096 on NVIDIA H100 80GB HBM3", or "gemm_bf16_wgmma at
// 4096x4096x4096 on NVIDIA H200" for a sibling's) and every result's median (nullopt: it failed). Pruned
// configurations are left out.
struct PriorSweep {
  std::string label;
  std::vector<std::pair<Params, std::optional<double>>> results;
  bool sibling = false;  // a sweep of a sibling family (see sibling_families), not of this one
  // Where known: each result's grid on its problem, in the order of `results` (empty: none known), and the
  // SMs of the GPU it ran on. With the new problem's grids (GridWaves) they scale its times to the new
  // problem (see wave_scale and latency_scale).
  std::vector<GridOf> grids;
  int sms = 0;
  std::optional<ProblemKey> problem;  // what it measured, where known (a sweep in the store)
};

// Fills the `grids` of each prior sweep that has its problem and SMs: every result's grid there as `family`
// plans it now on `device` with the sweep's SMs (0 where it does not plan as runnable).
void add_grids(std::vector<PriorSweep>& prior, const KernelFamily& family, const DeviceLimits& device);

// The new problem's side of that scaling: each candidate's grid and the GPU's SMs.
struct GridWaves {
  std::vector<GridOf> grids;
  int sms = 0;
};

// The warps an SM holds while a grid of `blocks` blocks of `threads` threads runs on `sms` SMs, of which
// each holds at most `per_sm` blocks (the plan's occupancy): a grid smaller than the GPU's room leaves each
// SM fewer blocks than it could hold. 0 where any of them is unknown (0).
double resident_warps(double blocks, int sms, double threads, double per_sm);
// A planned configuration's grid: its blocks, and their resident_warps with the occupancy its plan gives
// (registers not yet known).
GridOf planned_grid(const PlannedConfig& config, const DeviceLimits& device);

// What a time measured with `from_warps` warps resident per SM is multiplied by to estimate it with
// `to_warps`: below kLatencyWarps (two per scheduler of the SM's four) an SM hides its latencies less, so a
// time measured with enough warps grows as kLatencyWarps over the warps where this problem leaves fewer (a
// GEMM of 1000^3 on 128 blocks of 128 threads holds 4 warps per SM, one of 2048^3 on 512 such blocks 16: by
// replay, those tiles take 1.7 to 1.9 times the best at 1000^3 and are among the best at 2048^3). A time
// measured with too few is not lowered where the warps grow: what held it back may be more than latency
// (lowered, 1000^3's 4-warp tiles came first at 4096^3, which then took 117 evaluations to within 1%
// against 1). 1 where either is unknown (0).
constexpr double kLatencyWarps = 8;
double latency_scale(double from_warps, double to_warps);

// What a time measured with `from_blocks` blocks on `from_sms` SMs is multiplied by to estimate it with
// `to_blocks` blocks on `to_sms` SMs: the blocks run in whole waves of one per SM, each block's share of
// the work shrinks as the grid grows, so the estimate follows ceil(blocks / SMs) / blocks. A grid below
// one wave leaves SMs idle (a GEMM of 1000^3 in 64 tiles of 128 x 128), which is what makes a small
// problem split K where a large one does not. 1 where any of them is unknown (0).
double wave_scale(double from_blocks, int from_sms, double to_blocks, int to_sms);

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
  // Per prior, per candidate: its rank among that prior's candidates, 0 the fastest to 1 the slowest or
  // failed; NaN where that prior has no time for it. Each sweep of this problem (a sibling's, or on another
  // GPU with as many SMs) is a prior of its own, first, as is one whose grids are not known; then the sweeps
  // of other problems, whose times are scaled to this one (wave_scale), as one prior: the mean of the log of
  // their scaled times, each over its own sweep's fastest (partial sweeps stand level). Sizes differ in what
  // is fast (a GEMM of 1000^3 splits K, one of 4096^3 does not); the scaling accounts for the part of that
  // which the grid explains. A single sweep of another problem that ranks fewer than half of the candidates
  // (a main job's partial sweep of the family's first size, before its second) gives no prior, only its
  // fastest in `first`: its order is mostly where its own search went, and by replay of a main job's chain
  // (`gemm_regtile` 1000^3, then 2048^3), the second size came within 1% on 68 of 80 seeds with only those
  // first, on 55 following that order in the start with a column of it.
  std::vector<std::vector<float>> ranks;
  // Per prior, per candidate: the log of its time as this problem would see it (in ms, scaled; the
  // consensus's in units of each sweep's fastest), +inf where it failed, NaN where that prior has none. Only
  // differences between candidates count.
  std::vector<std::vector<float>> log_times;
  // Candidates to measure first: each prior's fastest, in turn, then each scaled sweep's own fastest, in
  // turn.
  std::vector<std::size_t> first;
  std::string line;  // what the sweep says on its first line ("" without prior sweeps)
  // Where the consensus is of several scaled sweeps: its index among the priors, and after it each sweep's
  // own prior (ranks and log times over its own fastest), which guided re-weighs the consensus by as it
  // measures (see GuidedOptions::members). kNoPrior and none otherwise.
  std::size_t consensus = kNoPrior;
  std::vector<std::size_t> members;
};

// `first_per_sweep`: how many of each prior's fastest configurations are measured first. Where none of
// the prior sweeps' configurations is among `candidates`, the transfer is empty (no line). A sweep none of
// whose `first_per_sweep` fastest configurations (by its own times) is a candidate here is left out: its
// problem lies in another regime (`conv1d_register` at mask 5, whose fastest bound the mask by 7 to 31, for
// mask 63); where every sweep is, the transfer is empty and its line says why. `waves`: the
// candidates' grids, to scale the earlier sweeps' times by (empty: their times as they are).
Transfer transfer_from(const std::vector<PriorSweep>& prior, const std::vector<Params>& candidates,
                       std::size_t first_per_sweep = 3, const GridWaves& waves = {});

// Transfer over a space too large to enumerate, whose candidates are drawn as the walk goes (so no rank
// prior): each prior sweep's `first_per_sweep` fastest configurations, in turn, that run on this problem are
// visited in `space` now and go into `guided` to be measured first. Returns the line that says so ("" where
// there are no prior sweeps or none of their fastest runs here).
std::string lazy_transfer(const std::vector<PriorSweep>& prior, LazyCandidates& space, GuidedOptions& guided,
                          std::size_t first_per_sweep = 3);

// Hands `transfer` to guided: its first picks and priors go into `guided`, and each prior that ranks at least
// half the candidates joins each candidate's feature row. A sparser prior is an earlier guided sweep, whose
// rank is known mostly where that search went: as a column, the model learns that more than the times. By
// replay of a main job's chain of `gemm_regtile` sizes (each earlier size searched with guided's 130
// measurements, then 4096^3 with 130 more from the two partial sweeps), 4096^3 came within 1% on 57 of 80
// seeds with these columns left out, 46 with them (57 without transfer); 2048^3 from 1000^3, 55 and 54;
// `gemm_bf16_wgmma` 8192^3 from 4096^3 and back, 1 and 5 evaluations either way.
void use_transfer(Transfer transfer, std::vector<std::vector<float>>& rows, GuidedOptions& guided);

}  // namespace tiletune
