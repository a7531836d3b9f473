#include "simulated_compile_pool.hpp"

#include <algorithm>

namespace tiletune {

SimulatedCompilePool::SimulatedCompilePool(std::vector<double> compile_s, int workers,
                                           const std::vector<std::size_t>& eager_order)
    : compile_s_(std::move(compile_s)),
      free_at_(static_cast<std::size_t>(std::max(workers, 1)), 0.0),
      done_at_(compile_s_.size()),
      start_at_(compile_s_.size()),
      queue_(eager_order.begin(), eager_order.end()) {}

void SimulatedCompilePool::start_next() {
  const std::size_t job = queue_.front();
  queue_.pop_front();
  if (done_at_[job]) return;
  auto w = std::min_element(free_at_.begin(), free_at_.end());
  const double start = std::max(*w, queued_at_);
  *w = start + compile_s_[job];
  done_at_[job] = *w;
  start_at_[job] = start;
}

void SimulatedCompilePool::advance(double until) {
  while (!queue_.empty()) {
    if (done_at_[queue_.front()]) {
      queue_.pop_front();
      continue;
    }
    if (std::max(*std::min_element(free_at_.begin(), free_at_.end()), queued_at_) > until) return;
    start_next();
  }
}

void SimulatedCompilePool::prefetch(double t, const std::vector<std::size_t>& jobs) {
  advance(t);
  queue_.clear();
  for (std::size_t j : jobs)
    if (!done_at_[j]) queue_.push_back(j);
  queued_at_ = t;
}

double SimulatedCompilePool::ready_at(std::size_t job, double t, bool wait_for_pool) {
  advance(t);
  if (done_at_[job]) return std::max(*done_at_[job], t);
  const bool queued = std::find(queue_.begin(), queue_.end(), job) != queue_.end();
  if (wait_for_pool && queued) {
    while (!done_at_[job]) start_next();  // the eager order is fixed: later asks cannot change it
    return std::max(*done_at_[job], t);
  }
  done_at_[job] = t + compile_s_[job];  // compiled by the asker, outside the pool
  start_at_[job] = t;
  return *done_at_[job];
}

bool SimulatedCompilePool::compiled(std::size_t job, double t) {
  advance(t);
  return done_at_[job] && *done_at_[job] <= t;
}

SimulatedCompilePool::Usage SimulatedCompilePool::usage(double end, const std::vector<bool>& asked) const {
  Usage u;
  for (std::size_t j = 0; j < done_at_.size(); ++j) {
    if (!done_at_[j] || start_at_[j] >= end) continue;
    ++u.started;
    u.unused += j >= asked.size() || !asked[j];
    u.busy_s += std::min(*done_at_[j], end) - start_at_[j];
  }
  return u;
}

}  // namespace tiletune
