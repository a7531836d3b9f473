// The candidates stage of a sweep: the runnable configurations of the family at the problem, pruned before
// anything compiles. An enumerated space is pruned whole, as `tiletune plan` prunes it (prune_each); a space
// too large to enumerate is pruned point by point as the strategy draws (LazyCandidates). Either way the
// strategies see one table of candidates, indexed the same.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pruned_tally.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune::sweep {

struct Candidates {
  SpaceWalk walk = SpaceWalk::enumerated;
  std::uint64_t space_size = 0;          // configurations in the family's space
  std::size_t in_shard = 0;              // enumerated: the space's configurations in this shard
  int resumed_skipped = 0;               // stored before a resume, passed over
  std::vector<PlannedConfig> table;      // enumerated: every runnable candidate
  std::unique_ptr<LazyCandidates> lazy;  // sampled: the candidates found so far

  std::vector<PlannedConfig>& list() { return lazy ? lazy->candidates() : table; }
};

// Every configuration of the shard not in `done`, pruned: the runnable ones in the table, the others to
// `pruned`.
Candidates enumerated_candidates(const KernelFamily& family, const DeviceLimits& device,
                                 const ProblemKey& problem, const Shard& shard,
                                 const std::set<std::string>& done, PrunedTally& pruned);

// A space read lazily: drawn points of other shards, or in `done`, are passed over; the others are pruned as
// they come. The references are kept: they must outlive the candidates.
Candidates lazy_candidates(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
                           const Shard& shard, const std::set<std::string>& done, PrunedTally& pruned);

}  // namespace tiletune::sweep
