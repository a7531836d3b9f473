// What the replay tests share: the committed gemm_regtile reference spaces, and the evaluations a strategy
// needs over seeds.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../test_paths.hpp"
#include "tiletune/replay.hpp"

namespace tiletune::test {

// A `gemm_regtile` reference space at `size` ("1000", "2048", ...): the H100's (bench/spaces), or the H200's
// (bench/spaces/devices).
inline ReplaySpace regtile_space(const std::string& size, const std::string& gpu = "h100") {
  const auto dir = gpu == "h100" ? spaces_dir() : spaces_dir() / "devices";
  return read_replay_space(dir / ("gemm_regtile-" + size + "-" + gpu + ".csv"));
}

// Evaluations until within `fraction` of the best, for each of seeds 1 to `seeds` (+inf where never).
inline std::vector<double> evaluations_to(const ReplaySpace& s, const std::string& name, double fraction,
                                          int seeds, const ReplayOptions& o = {}) {
  const KernelFamily f = replay_family(s);
  std::vector<double> out;
  for (int seed = 1; seed <= seeds; ++seed) {
    const auto step = replay(s, f, name, static_cast<std::uint64_t>(seed), o).reached(*s.best_ms(), fraction);
    out.push_back(step ? static_cast<double>(step->evaluations) : INFINITY);
  }
  return out;
}

}  // namespace tiletune::test
