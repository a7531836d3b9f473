// The printing of a sweep, kept apart from its state: the lines that say what will be measured, the progress
// lines (or one live line on a terminal), failures as they come, and why a walk stopped early. It reads
// snapshots; nothing it does changes the sweep.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "tiletune/sweep.hpp"

namespace tiletune::sweep {

// What the progress line shows.
struct Progress {
  std::size_t recorded = 0, total = 0, pruned = 0;
  int failed = 0;
  double best_ms = 0;  // +inf before a best
  std::string best_params;
  double elapsed_s = 0;
  const std::vector<SweepSummary::Gpu>* gpus = nullptr;  // more than one: each GPU's share
};

// What the sweep will walk, for its first line.
struct SpaceLine {
  std::string family, problem, device, strategy;
  std::size_t lanes = 1;
  std::uint64_t configurations = 0;
  std::string shard;         // empty: the whole space
  std::size_t in_shard = 0;  // enumerated
  std::size_t pruned = 0;    // enumerated: before compiling
  std::size_t total = 0;     // to measure (sampled: at most)
};

// "1.5s", "2m05s", "1h02m".
std::string duration_text(double seconds);

class Printer {
 public:
  Printer(std::ostream& out, const SweepOptions& options) : out_(out), options_(options) {}

  // budget: the sweep's (0: none), of which `measured` were spent before.
  void resuming(std::int64_t sweep_id, std::size_t stored, std::size_t measured, std::size_t budget) const;
  void enumerated(const SpaceLine& line, const std::string& why_strategy) const;
  void sampled(const SpaceLine& line) const;
  // The GPUs a sweep measures on (nothing for one).
  void pool(const std::vector<DeviceLimits>& devices, std::size_t walkers, const std::string& strategy) const;
  // After each recorded configuration: the live line, or in plain mode a line for a new best, a failure and
  // every log_every-th.
  void recorded(const Progress& progress, const ResultRecord& record, bool new_best) const;
  void finished(const Progress& progress, const std::string& stop_reason) const;
  // Lines as they are (each ending in a newline).
  void lines(const std::string& text) const { out_ << text; }

 private:
  void progress(const Progress& p, bool final_line) const;

  std::ostream& out_;
  const SweepOptions& options_;
};

}  // namespace tiletune::sweep
