// The measuring worker: a child process that owns the CUDA context. A configuration that breaks the
// context (an illegal address) or never ends takes down only the worker; the sweep starts a fresh one.
// Parent and worker speak one JSON object per line over pipes.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tiletune {

// Runs the worker loop on stdin/stdout-like descriptors until "quit" or end of input. Returns an exit code.
int worker_main(int gpu, int in_fd, int out_fd);

// tiletune's helper processes (the measuring worker, the compiler processes) are this same executable started
// again with a private first argument. Every program that uses the tuner library calls this first in main():
// it returns the child's exit status when the process is such a helper, and -1 otherwise.
int run_child_if_requested(int argc, char** argv);

class WorkerProcess {
 public:
  explicit WorkerProcess(int gpu);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  struct Reply {
    enum class Status { ok, timeout, died } status = Status::ok;
    nlohmann::json body;  // when ok
    std::string detail;   // when died: how the worker ended
  };

  // Sends one request and waits up to timeout_s for its reply. On timeout the worker is killed; on death
  // the reply says how it ended. Either way the next request starts a fresh worker.
  Reply request(const nlohmann::json& message, double timeout_s);
  void stop();
  int restarts() const { return restarts_; }

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
