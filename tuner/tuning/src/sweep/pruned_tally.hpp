// What a sweep prunes before compiling, counted by reason and stored as counts (Store::record_pruned), never
// as a result per configuration: an enumerated space's once the sweep's row exists (its strategy comes from
// the pruning), a sampled space's (pruned as the strategy draws) when the sweep ends.
#pragma once

#include <cstddef>

#include "tiletune/plan.hpp"
#include "tiletune/store.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune::sweep {

class PrunedTally {
 public:
  PrunedTally(Store& store, SweepSummary& summary);

  // Counts a pruned configuration in the summary and under its reason.
  void add(const PlannedConfig& config);
  // Stores the counts so far, once the summary names the sweep; storing them again changes nothing unless
  // they grew.
  void store();
  std::size_t count() const { return static_cast<std::size_t>(pruned_total(by_reason_)); }

 private:
  Store& store_;
  SweepSummary& summary_;
  PrunedCounts by_reason_;
};

}  // namespace tiletune::sweep
