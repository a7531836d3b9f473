#include "recorder.hpp"

#include "tiletune/strategy.hpp"

namespace tiletune::sweep {

Recorder::Recorder(Store& store, SweepSummary& summary, Clock::time_point start, std::size_t candidates)
    : store_(store), summary_(summary), start_(start), times_(candidates) {}

void Recorder::in_flight(std::size_t pick, std::size_t candidates) {
  times_.resize(candidates);  // a sampled space's table grows as it is drawn
  times_[pick] = kInFlight;
}

bool Recorder::record(std::size_t k, const LaneResult& result) {
  const ResultRecord& rec = result.record;
  auto& gpu = summary_.gpus[k];
  gpu.busy_seconds += result.busy_s;
  summary_.gpu_busy_seconds += result.busy_s;
  summary_.compile_wait_seconds += result.compile_wait_s;
  if (result.measured) ++summary_.measured, ++gpu.measured;
  const bool ok = rec.outcome == Outcome::ok;
  times_[result.pick] = ok ? *rec.median_ms : std::numeric_limits<double>::infinity();
  ++summary_.counts[rec.outcome];
  store_.add_results(summary_.sweep_id, {rec});
  ++recorded_;
  if (!ok) ++failed_;
  if (!ok || *rec.median_ms >= best_ms_) return false;
  summary_.best_found_at = recorded_;
  summary_.best_found_seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  best_ms_ = *rec.median_ms;
  // Appended, not "(" + text + ")": GCC 12 warns falsely (-Wrestrict) on that form here.
  best_params_.assign(1, '(').append(params_to_text(rec.params)).push_back(')');
  return true;
}

}  // namespace tiletune::sweep
