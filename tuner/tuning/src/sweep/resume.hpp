// The resume stage of a sweep: which unfinished sweep it continues and what that one already stored.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/shard.hpp"
#include "tiletune/store.hpp"

namespace tiletune::sweep {

struct ResumePoint {
  std::optional<SweepInfo> prior;  // the sweep continued
  std::set<std::string> done;      // the params text of every configuration it stored (any outcome)
  std::size_t measured = 0;        // how many of them were measured (not pruned before compiling)
};

// The newest unfinished sweep of the family at this problem, of the same shard, run on one of `devices`
// (with one device: on any, so that another GPU is named in the refusal); or the sweep `id` names. Throws
// SweepError, one line, when there is none, or when it ran on another GPU or with another template or
// parameter list.
ResumePoint find_resume(const Store& store, const KernelFamily& family, const ProblemKey& problem,
                        const std::vector<DeviceLimits>& devices, const Shard& shard, std::int64_t id = 0);

}  // namespace tiletune::sweep
