// The recording stage of a sweep: each finished configuration goes to the store at once (so that an
// interrupted sweep resumes), is counted in the summary, and updates what the strategies see and the best so
// far. State only: printing is the printer's.
#pragma once

#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lanes.hpp"
#include "tiletune/store.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune::sweep {

class Recorder {
 public:
  using Clock = std::chrono::steady_clock;
  // candidates: how many there are so far (a sampled space's grow as they are drawn).
  Recorder(Store& store, SweepSummary& summary, Clock::time_point start, std::size_t candidates);

  // times()[i]: candidate i's median; +inf when it failed, or while a lane measures it (so that no strategy
  // gives it again and budgets count it); nullopt before it is dealt.
  std::vector<std::optional<double>>& times() { return times_; }
  // Candidate `pick` is being measured.
  void in_flight(std::size_t pick, std::size_t candidates);

  // A strategy took `seconds` to choose what a lane measures next.
  void chose(double seconds) { summary_.choosing_seconds += seconds; }
  // Stores and counts what lane k finished; true when it is the new best.
  bool record(std::size_t k, const LaneResult& result);

  std::size_t recorded() const { return recorded_; }
  int failed() const { return failed_; }
  double best_ms() const { return best_ms_; }
  const std::string& best_params() const { return best_params_; }  // "(A=1,B=2)", empty before a best

 private:
  Store& store_;
  SweepSummary& summary_;
  Clock::time_point start_;
  std::vector<std::optional<double>> times_;
  double best_ms_ = std::numeric_limits<double>::infinity();
  std::string best_params_;
  int failed_ = 0;
  std::size_t recorded_ = 0;
};

}  // namespace tiletune::sweep
