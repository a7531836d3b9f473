// What a sweep prunes before compiling, stored as its results. A new enumerated sweep learns its strategy
// from the pruning, so they wait until the sweep's row exists; then they go to the store in blocks (an
// enumerated space's, up to a million, a block at a time while the GPUs measure, rather than ahead of the
// first measurement).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "tiletune/plan.hpp"
#include "tiletune/store.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune::sweep {

class PrunedRecords {
 public:
  // flush_at: store as soon as this many wait (a sampled space prunes as it draws); 0: only when flushed.
  PrunedRecords(Store& store, SweepSummary& summary, std::size_t flush_at);

  // Counts a pruned configuration in the summary and keeps it to store.
  void add(const PlannedConfig& config);
  // Stores at most `limit` of those waiting, once the summary names the sweep.
  void flush(std::size_t limit = std::numeric_limits<std::size_t>::max());
  bool waiting() const { return stored_ < pending_.size(); }
  std::size_t count() const { return count_; }

 private:
  Store& store_;
  SweepSummary& summary_;
  std::size_t flush_at_;
  std::vector<ResultRecord> pending_;  // [stored_, end) wait to be stored
  std::size_t stored_ = 0, count_ = 0;
};

}  // namespace tiletune::sweep
