// The lanes of a sweep: one thread per GPU measures what the sweep's thread deals it, one configuration at
// a time. Only the dealing thread draws from the strategies and writes to the store; a lane only measures.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "tiletune/plan.hpp"
#include "tiletune/results.hpp"

namespace tiletune::sweep {

// A configuration dealt to a lane.
struct LaneTask {
  std::size_t pick = 0;  // its candidate slot
  std::size_t job = 0;   // its compile job
  PlannedConfig config;  // a copy: a sampled space's table grows meanwhile
  double timeout_s = 0;
};

// What a lane made of it.
struct LaneResult {
  std::size_t pick = 0;
  ResultRecord record;
  double busy_s = 0, compile_wait_s = 0;
  bool measured = false;  // it reached the GPU
};

class Lanes {
 public:
  // Measures a task on lane k; `ready` says whether the lane's worker holds the problem's set-up (the lane
  // keeps it between tasks, the measure sets it).
  using Measure = std::function<LaneResult(std::size_t k, LaneTask& task, bool& ready)>;

  Lanes(std::size_t count, Measure measure);
  // Whatever ends the sweep (an exception included), the lanes finish what they hold and end.
  ~Lanes();
  Lanes(const Lanes&) = delete;
  Lanes& operator=(const Lanes&) = delete;

  std::size_t size() const { return lanes_.size(); }
  // Neither measuring nor drained: it wants a task.
  bool idle(std::size_t k);
  void give(std::size_t k, LaneTask task);
  // Lane k gets nothing more (its walker is spent).
  void drain(std::size_t k);

  struct Collected {
    std::vector<std::pair<std::size_t, LaneResult>> finished;  // (lane, result)
    std::exception_ptr error;                                  // the first a lane threw
  };
  // Waits up to `wait` for a lane to finish (with nothing measuring and nothing finished: nullopt, the end),
  // then takes what every lane finished.
  std::optional<Collected> collect(std::chrono::milliseconds wait);

 private:
  struct Lane {
    std::optional<LaneTask> task;
    std::optional<LaneResult> done;
    std::exception_ptr error;
    bool busy = false, drained = false;
  };
  void run(std::size_t k);
  void stop();  // asks every lane to end and joins it

  Measure measure_;
  std::vector<Lane> lanes_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool quit_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tiletune::sweep
