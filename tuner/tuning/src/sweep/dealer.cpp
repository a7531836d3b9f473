#include "dealer.hpp"

#include <chrono>

#include "measure.hpp"

namespace tiletune::sweep {

Dealer::Dealer(Search& search, Candidates& candidates, Lanes& lanes, Recorder& recorder,
               const SweepOptions& options)
    : search_(search),
      candidates_(candidates),
      lanes_(lanes),
      recorder_(recorder),
      options_(options),
      ahead_(lanes.size()) {
  search_.watch_compiles();
}

void Dealer::run(const std::function<bool()>& keep_dealing,
                 const std::function<void(const LaneResult&, bool)>& recorded) {
  std::exception_ptr error;
  bool dealing = true;
  for (;;) {
    if (error || !keep_dealing()) dealing = false;
    for (std::size_t k = 0; k < lanes_.size() && dealing; ++k)
      if (lanes_.idle(k)) deal(k);
    search_.compiler().poll();  // the compilers go on while the lanes measure
    // Waits in short steps, so that an interrupt or the time limit stops the dealing promptly.
    auto collected = lanes_.collect(std::chrono::milliseconds(100));
    if (!collected) break;  // nothing in flight and nothing more to deal
    if (collected->error && !error) error = collected->error;
    for (auto& [k, result] : collected->finished) recorded(result, recorder_.record(k, result));
  }
  if (error) std::rethrow_exception(error);
}

void Dealer::deal(std::size_t k) {
  Strategy& walker = search_.walker(k);
  const auto t0 = std::chrono::steady_clock::now();
  const auto pick = walker.next(recorder_.times());
  recorder_.chose(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!pick) {
    if (search_.walker_count() == 1)
      for (std::size_t l = 0; l < lanes_.size(); ++l) lanes_.drain(l);
    else
      lanes_.drain(k);
    return;
  }
  std::vector<PlannedConfig>& list = candidates_.list();
  recorder_.in_flight(*pick, list.size());
  LaneTask task;
  task.pick = *pick;
  task.job = search_.job_for(*pick, list);
  task.config = list[*pick];
  task.timeout_s = config_timeout(options_, recorder_.best_ms());
  if (!search_.order_is_fixed()) prefetch(k, task.job, walker);
  lanes_.give(k, std::move(task));
}

void Dealer::prefetch(std::size_t k, std::size_t job, Strategy& walker) {
  ahead_[k] = {job};
  for (std::size_t i : walker.upcoming()) ahead_[k].push_back(search_.job_for(i, candidates_.list()));
  search_.compiler().prefetch(interleave(ahead_));
}

}  // namespace tiletune::sweep
