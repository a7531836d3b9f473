#include "candidates.hpp"

namespace tiletune::sweep {

Candidates enumerated_candidates(const KernelFamily& family, const DeviceLimits& device,
                                 const ProblemKey& problem, const Shard& shard,
                                 const std::set<std::string>& done, PrunedTally& pruned) {
  Candidates c;
  c.walk = SpaceWalk::enumerated;
  const SpaceIndex space = enumerable_space(family);
  c.space_size = space.size();
  std::vector<std::uint64_t> todo;  // the space's indices in this shard and not stored before a resume
  for (std::uint64_t i = 0; i < space.size(); ++i) {
    if (!shard.contains(i)) continue;
    if (!done.empty() && done.count(params_to_text(space.at(i)))) {
      ++c.resumed_skipped;
      continue;
    }
    todo.push_back(i);
  }
  c.in_shard = todo.size() + static_cast<std::size_t>(c.resumed_skipped);
  const auto configuration_at = [&space](std::uint64_t i) { return space.at(i); };
  prune_each(family, device, problem, configuration_at, todo, [&](PlannedConfig&& config) {
    if (config.outcome == Outcome::ok)
      c.table.push_back(std::move(config));
    else
      pruned.add(config);
  });
  return c;
}

Candidates lazy_candidates(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
                           const Shard& shard, const std::set<std::string>& done, PrunedTally& pruned) {
  Candidates c;
  c.walk = SpaceWalk::sampled;
  c.resumed_skipped = static_cast<int>(done.size());
  // The skip test outlives this function (the strategy draws through it): it owns the shard's space index.
  std::shared_ptr<const SpaceIndex> shard_space;
  if (!shard.whole()) shard_space = std::make_shared<const SpaceIndex>(family);
  c.lazy = std::make_unique<LazyCandidates>(
      family,
      [&family, &device, &problem](const Params& p) {
        return prune_before_compile(family, device, problem, p);
      },
      [&pruned](PlannedConfig&& config) { pruned.add(config); },
      [shard, shard_space, &done](const Params& p) {
        if (shard_space) {
          const auto index = shard_space->index_of(p);
          if (!index || !shard.contains(*index)) return true;
        }
        return done.count(params_to_text(p)) > 0;
      });
  c.space_size = c.lazy->space().size();
  return c;
}

}  // namespace tiletune::sweep
