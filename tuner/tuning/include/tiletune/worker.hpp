// The measuring worker: a child process that owns the CUDA context. A configuration that breaks the
// context (an illegal address) or never ends takes down only the worker; the sweep starts a fresh one.
// Parent and worker speak one JSON object per line over pipes.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tiletune/worker_main.hpp"

namespace tiletune {

// tiletune's helper processes (the measuring worker, the compiler processes) are this same executable started
// again with a private first argument. Every program that uses the tuner library calls this first in main():
// it returns the child's exit status when the process is such a helper, and -1 otherwise.
int run_child_if_requested(int argc, char** argv);

// What the sweep and bench loops measure through: one request at a time, answered within a timeout. The
// worker process below is the real one; the CPU tests drive the loops with a fake (tests/tuner), so that
// dealing, retries, timeouts and resume are tested without a GPU.
class Worker {
 public:
  virtual ~Worker() = default;

  struct Reply {
    enum class Status { ok, timeout, died } status = Status::ok;
    nlohmann::json body;  // when ok
    std::string detail;   // when died: how the worker ended
  };

  // Sends one request (worker_protocol.hpp) and waits up to timeout_s for its reply. On timeout the worker
  // is stopped; on death the reply says how it ended. Either way the next request starts a fresh worker.
  virtual Reply request(const nlohmann::json& message, double timeout_s) = 0;
  // Fresh workers started after the first.
  virtual int restarts() const = 0;
  // The CUDA device index it measures on (as the parent names it), -1 if it has none.
  virtual int gpu() const { return -1; }
};

class WorkerProcess final : public Worker {
 public:
  explicit WorkerProcess(int gpu);
  ~WorkerProcess() override;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  Reply request(const nlohmann::json& message, double timeout_s) override;
  void stop();
  int restarts() const override { return restarts_; }
  int gpu() const override { return gpu_; }
  // The worker's process id while one runs (started by the first request), else -1.
  pid_t pid() const { return pid_; }

 private:
  void start();
  std::string reap();

  int gpu_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string buffer_;
  int restarts_ = -1;
};

}  // namespace tiletune
