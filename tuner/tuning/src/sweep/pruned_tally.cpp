#include "pruned_tally.hpp"

namespace tiletune::sweep {

PrunedTally::PrunedTally(Store& store, SweepSummary& summary) : store_(store), summary_(summary) {}

void PrunedTally::add(const PlannedConfig& config) {
  ++by_reason_[config.reason];
  ++summary_.counts[config.outcome];
}

void PrunedTally::store() {
  if (summary_.sweep_id != 0) store_.record_pruned(summary_.sweep_id, by_reason_);
}

}  // namespace tiletune::sweep
