// What a lane does with a configuration: wait for its CUBIN, set its worker up for the problem when needed,
// measure it within its timeout, and turn the worker's reply (or its silence) into a result. The timeout
// policy lives here too.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lanes.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune::sweep {

class ConfigMeasurer {
 public:
  // Builds the problem's set-up request (compiling its reference through the cache).
  ConfigMeasurer(const KernelFamily& family, const ProblemKey& problem, const std::vector<Worker*>& workers,
                 const std::vector<DeviceLimits>& devices, const CompileCache& cache,
                 BackgroundCompiler& compiler, bool wait_for_compilers, const SweepOptions& options);

  LaneResult operator()(std::size_t k, LaneTask& task, bool& ready) const;

 private:
  void set_up(std::size_t k, LaneResult& result) const;
  void measure(std::size_t k, const LaneTask& task, LaneResult& result, bool& ready) const;

  const KernelFamily& family_;
  const ProblemKey& problem_;
  const std::vector<Worker*>& workers_;
  const std::vector<DeviceLimits>& devices_;
  const CompileCache& cache_;
  BackgroundCompiler& compiler_;
  bool wait_for_compilers_;
  const SweepOptions& options_;
  double work_;
  nlohmann::json setup_;
};

// A configuration's timeout: the one asked for, else 50 times the best so far over its repetitions plus 5 s
// (at least 10 s), or 120 s before anything ran.
double config_timeout(const SweepOptions& options, double best_ms);

}  // namespace tiletune::sweep
