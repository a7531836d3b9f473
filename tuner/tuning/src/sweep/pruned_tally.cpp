#include "pruned_records.hpp"

namespace tiletune::sweep {

PrunedRecords::PrunedRecords(Store& store, SweepSummary& summary, std::size_t flush_at)
    : store_(store), summary_(summary), flush_at_(flush_at) {}

void PrunedRecords::add(const PlannedConfig& config) {
  pending_.push_back(to_record(config));
  ++summary_.counts[config.outcome];
  ++count_;
  if (flush_at_ && pending_.size() >= flush_at_) flush();
}

void PrunedRecords::flush(std::size_t limit) {
  if (summary_.sweep_id == 0) return;
  const std::size_t end = pending_.size() - stored_ > limit ? stored_ + limit : pending_.size();
  if (end > stored_)
    store_.add_results(summary_.sweep_id, {pending_.begin() + static_cast<std::ptrdiff_t>(stored_),
                                           pending_.begin() + static_cast<std::ptrdiff_t>(end)});
  stored_ = end;
  if (stored_ == pending_.size()) pending_.clear(), stored_ = 0;
}

}  // namespace tiletune::sweep
