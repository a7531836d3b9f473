// A main job's chain of sizes, replayed: each space is searched in turn, transferring from what the same
// strategy measured in the spaces before it.
#include <set>
#include <stdexcept>

#include "tiletune/replay.hpp"

namespace tiletune {

PriorSweep prior_sweep_of(const ReplaySpace& space, const ReplayRun& run) {
  const PriorSweep whole = prior_sweep_of(space);
  PriorSweep out = whole;
  out.results.clear();
  out.blocks.clear();
  std::set<std::size_t> seen;
  for (const auto& step : run.curve) {
    if (step.point >= whole.results.size() || !seen.insert(step.point).second) continue;
    out.results.push_back(whole.results[step.point]);
    if (step.point < whole.blocks.size()) out.blocks.push_back(whole.blocks[step.point]);
  }
  if (out.blocks.size() != out.results.size()) out.blocks.clear();  // grids known for all or none
  return out;
}

std::vector<ReplayRun> replay_chain(const std::vector<ReplaySpace>& spaces, const std::string& name,
                                    std::uint64_t seed, const ReplayOptions& options) {
  for (const auto& space : spaces)
    if (space.family != spaces.front().family)
      throw std::invalid_argument("a chain is one family at several problems: " + space.name + " is " +
                                  space.family + ", not " + spaces.front().family);
  std::vector<ReplayRun> runs;
  std::vector<PriorSweep> earlier;  // what the chain measured so far, the newest first
  for (const auto& space : spaces) {
    ReplayOptions o = options;
    o.transfer = earlier;
    o.transfer.insert(o.transfer.end(), options.transfer.begin(), options.transfer.end());
    runs.push_back(replay(space, replay_family(space), name, seed, o));
    earlier.insert(earlier.begin(), prior_sweep_of(space, runs.back()));
  }
  return runs;
}

}  // namespace tiletune
