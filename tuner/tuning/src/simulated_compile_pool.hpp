// A pool of compiler processes in simulated time, behaving as BackgroundCompiler does: eager (a fixed order
// compiled ahead, in order) or fed by prefetch (the queue replaced each time), and a job no process has
// taken compiled at once by the one that asks for it.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <vector>

namespace tiletune {

class SimulatedCompilePool {
 public:
  // compile_s[i]: job i's compile time in seconds; `eager_order`: the jobs compiled ahead from time 0 (empty
  // for a pool fed by prefetch).
  SimulatedCompilePool(std::vector<double> compile_s, int workers,
                       const std::vector<std::size_t>& eager_order);

  // At time t, the jobs to compile next replace the queue (those started or done are passed over).
  void prefetch(double t, const std::vector<std::size_t>& jobs);
  // When job i's CUBIN is ready for one who asks at time t. With wait_for_pool, a queued job waits for a
  // process of the pool; otherwise one not yet started is compiled at once by the asker.
  double ready_at(std::size_t job, double t, bool wait_for_pool);
  // Whether job i's CUBIN is ready at time t.
  bool compiled(std::size_t job, double t);

  // What the compilers did by time `end`: jobs started, those of them never asked for (work a changed queue
  // left unused), and the seconds spent compiling, all counted up to `end`.
  struct Usage {
    std::size_t started = 0, unused = 0;
    double busy_s = 0;
  };
  Usage usage(double end, const std::vector<bool>& asked) const;

 private:
  // Starts queued jobs whose process is free by time `until`.
  void advance(double until);
  void start_next();

  std::vector<double> compile_s_;
  std::vector<double> free_at_;                 // each process's next free time
  std::vector<std::optional<double>> done_at_;  // set when a job starts
  std::vector<double> start_at_;                // when each started job started
  std::deque<std::size_t> queue_;
  double queued_at_ = 0;  // when the queue was last set: nothing in it starts earlier
};

}  // namespace tiletune
