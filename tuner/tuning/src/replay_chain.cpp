// A main job's chain of sizes, replayed: each space is searched in turn, transferring from what the same
// strategy measured in the spaces before it.
#include <set>
#include <stdexcept>

#include "tiletune/replay.hpp"

namespace tiletune {

void check_one_family(const std::vector<ReplaySpace>& spaces) {
  for (const auto& space : spaces)
    if (space.family != spaces.front().family)
      throw std::invalid_argument("a chain is one family at several problems: " + space.name + " is " +
                                  space.family + ", not " + spaces.front().family);
}

PriorSweep prior_sweep_of(const ReplaySpace& space, const std::vector<std::size_t>& points) {
  const PriorSweep whole = prior_sweep_of(space);
  PriorSweep out = whole;
  out.results.clear();
  out.grids.clear();
  for (std::size_t i : points) {
    out.results.push_back(whole.results.at(i));
    if (!whole.grids.empty()) out.grids.push_back(whole.grids[i]);  // grids known for all or none
  }
  return out;
}

PriorSweep prior_sweep_of(const ReplaySpace& space, const ReplayRun& run) {
  std::vector<std::size_t> points;
  std::set<std::size_t> seen;
  for (const auto& step : run.curve)
    if (seen.insert(step.point).second) points.push_back(step.point);
  return prior_sweep_of(space, points);
}

std::vector<ReplayRun> replay_chain(const std::vector<ReplaySpace>& spaces, const std::string& name,
                                    std::uint64_t seed, const ReplayOptions& options,
                                    const std::vector<std::size_t>& budgets) {
  check_one_family(spaces);
  std::vector<ReplayRun> runs;
  std::vector<PriorSweep> earlier;  // what the chain measured so far, the newest first
  for (std::size_t k = 0; k < spaces.size(); ++k) {
    const ReplaySpace& space = spaces[k];
    ReplayOptions o = options;
    if (k < budgets.size() && budgets[k] > 0) o.budget = budgets[k];
    o.transfer = earlier;
    o.transfer.insert(o.transfer.end(), options.transfer.begin(), options.transfer.end());
    runs.push_back(replay(space, replay_family(space), name, seed, o));
    earlier.insert(earlier.begin(), prior_sweep_of(space, runs.back()));
  }
  return runs;
}

std::vector<std::size_t> family_budgets(const KernelFamily& family, const std::vector<ReplaySpace>& spaces) {
  std::vector<std::size_t> budgets(spaces.size(), 0);
  for (const auto& [size, budget] : family.default_budgets) {
    const ProblemKey problem = default_problem(family, size);
    for (std::size_t k = 0; k < spaces.size(); ++k)
      if (spaces[k].family == family.name && spaces[k].problem == problem) budgets[k] = budget;
  }
  return budgets;
}

}  // namespace tiletune
