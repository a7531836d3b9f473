#include "lanes.hpp"

#include <algorithm>

namespace tiletune::sweep {

Lanes::Lanes(std::size_t count, Measure measure) : measure_(std::move(measure)), lanes_(count) {
  try {
    for (std::size_t k = 0; k < count; ++k) threads_.emplace_back([this, k] { run(k); });
  } catch (...) {
    stop();  // the threads that started end before the exception leaves
    throw;
  }
}

Lanes::~Lanes() { stop(); }

void Lanes::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  changed_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void Lanes::run(std::size_t k) {
  bool ready = false;  // the worker holds this problem's set-up
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return lanes_[k].task || quit_; });
    if (quit_ || !lanes_[k].task) return;  // ending (an error on the dealing thread): drop what was dealt
    LaneTask task = std::move(*lanes_[k].task);
    lanes_[k].task.reset();
    lock.unlock();
    std::optional<LaneResult> result;
    std::exception_ptr error;
    try {
      result = measure_(k, task, ready);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    lanes_[k].done = std::move(result);
    lanes_[k].error = error;
    changed_.notify_all();
  }
}

bool Lanes::idle(std::size_t k) {
  std::lock_guard<std::mutex> lock(mutex_);
  return !lanes_[k].busy && !lanes_[k].drained;
}

void Lanes::give(std::size_t k, LaneTask task) {
  std::lock_guard<std::mutex> lock(mutex_);
  lanes_[k].task = std::move(task);
  lanes_[k].busy = true;
  changed_.notify_all();
}

void Lanes::drain(std::size_t k) {
  std::lock_guard<std::mutex> lock(mutex_);
  lanes_[k].drained = true;
}

std::optional<Lanes::Collected> Lanes::collect(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto any_done = [&] {
    return std::any_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return l.done || l.error; });
  };
  if (!any_done() && std::none_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return l.busy; }))
    return std::nullopt;  // nothing in flight and nothing more to take
  if (wait.count() > 0) changed_.wait_for(lock, wait, any_done);
  Collected c;
  for (std::size_t k = 0; k < lanes_.size(); ++k) {
    Lane& l = lanes_[k];
    if (l.error && !c.error) c.error = l.error;
    if (l.done) c.finished.emplace_back(k, std::move(*l.done));
    if (l.done || l.error) l.busy = false;
    l.done.reset();
    l.error = nullptr;
  }
  return c;
}

}  // namespace tiletune::sweep
