// The model-guided strategy: gradient-boosted trees (XGBoost) learn a configuration's time from what is
// known before measuring it, and each batch measures what the model predicts fastest, with a share drawn at
// random so that the model sees the whole space.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/strategy.hpp"

namespace tiletune {

// One row per candidate: each parameter's value, on a log2 scale where all of its values are positive
// (tile sizes and block shapes act by ratios).
std::vector<std::vector<float>> parameter_features(const KernelFamily& family,
                                                   const std::vector<Params>& candidates);

// What the plan knows of a runnable configuration before compiling it, for the model: threads per block,
// blocks in the grid (log2), shared memory per block (KiB), blocks and warp occupancy per SM as the limits
// allow before registers are known, waves of blocks over the SMs, and the last wave's fill. Registers are
// left out: a configuration is chosen before it is compiled.
std::vector<std::string> plan_feature_names();
std::vector<float> plan_features(const PlannedConfig& config, const DeviceLimits& device);

// Why guided cannot run here (XGBoost cannot be opened), in one line; empty when it can.
const std::string& guided_unavailable();

// No prior (see GuidedOptions::consensus).
constexpr std::size_t kNoPrior = static_cast<std::size_t>(-1);

// The longest start that follows earlier sweeps (transfer; GuidedOptions::initial left at 0): a fiftieth of
// the space, at least 4. It ends sooner where the measured times say the earlier sweeps are unlike this
// problem (see agreement_after), so it runs long only while they fit. It was 24 until replay showed a main
// job's partial sweeps of gemm_regtile 4096^3 and 1000^3 that held 2000^3's best only as their 28th to 31st
// fastest leaving 2000^3 a median of 166 and 176 evaluations to within 1% (seeds 1 and 101; 82 to 124 with no
// transfer), 31 with 40; see docs/search.md for what else it moved, both ways.
constexpr std::size_t kTransferStartMost = 40;

struct GuidedOptions {
  std::size_t batch = 8;    // measurements proposed per fit: enough to keep compilers and GPUs busy
  std::size_t initial = 0;  // random measurements before the first fit (0: chosen from the space's size)
  double explore = 0.125;   // share of each batch drawn at random
  // Candidates beyond the batch, as the last fit ranks them, that the sweep compiles while the batch is
  // measured: the next batch is mostly among them, so compiling need not wait for the fit.
  std::size_t ahead = 16;
  // Where the sweep says what is compiled (Strategy::watch_compiles), a lane is dealt the batch's first
  // compiled pick; one that finds none compiled, once the model has learnt something since the batch was
  // proposed, refits and adds the new fit's picks behind the batch (up to twice a batch in all), so the GPU
  // measures what the compilers have finished instead of waiting for a batch's slowest compile. False: each
  // batch is measured whole, in order, before the next fit.
  bool refit_when_idle = true;
  int rounds = 60;  // trees per fit
  // The columns of each feature row that hold the plan features (plan_features()), if any: the fits leave
  // them out until `plan_after` measurements are in. With a few dozen measurements, seven more columns that
  // follow the parameters give the trees more ways to fit noise; later they help (by replay of the reference
  // spaces over held-out seeds, 16% fewer evaluations to within 1% in all than with them from the start).
  std::size_t plan_begin = 0, plan_count = 0;
  std::size_t plan_after = 48;
  // Models fit on bootstrap resamples of the measurements, beside the one fit on all of them: a full batch's
  // picks up to its half are the Gaussian process's (improvement_picks) and then the full model's best, the
  // rest the best of each resample's model in turn (batch Thompson sampling), so that a batch also spreads
  // over what the data leaves uncertain instead of crowding one predicted optimum. 0: every pick by the full
  // model.
  std::size_t resamples = 3;
  // Picks of each batch, put first, that a Gaussian process (Matern 5/2 over the feature columns scaled to
  // [0, 1], fitted on the fastest 256 measurements) expects to improve most on the best so far: where the
  // trees only rank, it weighs a prediction against how sure it is. By replay of the reference spaces, the
  // sum of the medians to within 1% over six sets of 20 seeds fell from 3,378 with none to 3,041 with 2; on
  // the first two sets 1, 3 and 4 summed 1,074, 1,020 and 1,046 against 949 for 2 and 1,043 for none.
  // 0: every pick by the trees.
  std::size_t improvement_picks = 2;
  // Transfer (see transfer.hpp): candidates measured first, in order, and per earlier sweep a prior per
  // candidate (lower is more promising, NaN unknown). The start, in place of random draws, follows the prior
  // whose order agrees best (Spearman) with the times measured so far, so that a sweep of a size unlike
  // this one is passed over once the measurements say so.
  std::vector<std::size_t> first;
  std::vector<std::vector<float>> priors;
  // How many of the priors are also columns of the feature rows (the last `prior_columns` of each row, where
  // use_transfer puts them): only those known on at least half the candidates (see use_transfer).
  std::size_t prior_columns = 0;
  // Once `agreement_after` measured points have a rank in the priors, the earlier sweeps may be taken to be
  // unlike this one: the start ends, one batch measures the prior's fastest open candidates that each bring a
  // parameter value none of the measured ones has (where its favourites share what is slow here, as 1000^3's
  // stream-K ones from 2048^3 and 4096^3 do, its other choices are tried once), and the model picks from then
  // on. Only where the slowest measured time is over `least_spread` times the fastest: where the earlier
  // sweeps' picks are all about as fast (sizes whose best configurations agree), they say nothing against
  // them. Then, where the prior that agrees best has times (prior_log_times), they decide: the standard
  // deviation of log(measured / prior's time) over the measured points is over `most_misfit`; where it has
  // none, its order does: its rank correlation with the measured times is under `least_agreement`. A prior's
  // fastest picks are near-equal, so their rank correlation is mostly noise, and it may even agree where all
  // of them are slow: on an H200, `gemm_regtile` 1000^3 from 2000^3 and 4096^3 (stream-K favourites, 1.7
  // times the best there) ordered the first 15 with a rank correlation of 0.48 while their times misfit by
  // 0.12; while the order had to disagree too, the start followed them for 23 measurements and took 38 to
  // within 1% (median of 20 seeds), 18 on the misfit alone. By replay, `gemm_regtile` 3000x2000x1000 from
  // 2048^3 and 4096^3 (misfit 0.04 to 0.06 over the first 9 to 16 in its order) follows its transfer and is
  // within 1% after 21 measurements, while H100 1000^3 from the same sweeps (0.14 to 0.17) turns to the model
  // after 8 and is within 1% after 20 (82 when the transfer was dropped here and the start turned random).
  std::size_t agreement_after = 6;
  double least_agreement = 0.4;
  double least_spread = 1.1;
  // Per prior (or none), per candidate: the log of the time it gives it (NaN unknown, +inf failed; only
  // differences between candidates count). Where a prior followed has times for at least half of the
  // candidates, the model's trees fit the measured log times less the prior's (its failures count as its
  // slowest doubled, what it lacks as its median) and its predictions add them back: the trees learn what
  // this problem changes of the prior rather than the whole. By replay of 20 seeds, `gemm_regtile`
  // 3000x2000x1000 from 4096^3 alone took 62 evaluations to within 1% against 89 with the trees on the
  // times themselves. The Gaussian process's picks fit the log times themselves.
  std::vector<std::vector<float>> prior_log_times;
  double most_misfit = 0.1;
  // Where one prior is the consensus of several sweeps of other problems (see Transfer::consensus): its
  // index, and the indices of the members' own priors. Once each member has times for three measured
  // points, the consensus is their weighted mean of log times, each weighed by how well it fits what was
  // measured (member_weight of its misfit), and followed as the consensus was; the members are neither
  // followed on their own nor feature columns. Two sizes equally far from this one need not predict it
  // equally: on an H200, `gemm_regtile` 1000^3's tiles run under one wave of blocks and split K, and by its
  // times the best at 2000^3 are 2.7 times its best, by 4096^3's 1.06; with equal weights 2000^3 took 223
  // evaluations to within 1% (median of 20 seeds), 24 with these.
  std::size_t consensus = kNoPrior;
  std::vector<std::size_t> members;
};

// Guided search over candidates described by `features` (one row each, all of one width). Throws
// std::runtime_error with one line when XGBoost cannot be opened.
std::unique_ptr<Strategy> make_guided_strategy(std::vector<std::vector<float>> features, std::size_t budget,
                                               std::uint64_t seed, const GuidedOptions& options = {});

// Guided search over a space too large to enumerate: it ranks a pool of 2048 unmeasured runnable points drawn
// lazily in a seeded shuffled order (each pruned as it is drawn), topped up as they are measured; memory
// follows the pool and the budget. Stops after `budget` measurements, when the space is spent, or after
// kMaxFruitlessDraws draws in a row found nothing runnable.
std::unique_ptr<Strategy> make_lazy_guided_strategy(LazyCandidates& space, std::size_t budget,
                                                    std::uint64_t seed, const GuidedOptions& options = {});

}  // namespace tiletune
