// The search stage of a sweep: the strategy's walkers over the candidates and the compile jobs they ask
// for. Where the walkers' order is fixed, every candidate of an enumerated space has its job from the start,
// in that order, and compiles ahead; otherwise (guided, annealing, a lazily read space) a candidate gets its
// job when first named, and the walkers can see which candidates are compiled.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "candidates.hpp"
#include "tiletune/strategy.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune::sweep {

class Search {
 public:
  // Over the enumerated candidates. A strategy that reads history (guided) also sees what the plan knows of
  // each candidate and starts from the store's sweeps of the family on other problems or devices and of its
  // siblings on `problem`, saying so on `out`.
  static Search enumerated(const std::string& strategy, const KernelFamily& family,
                           const DeviceLimits& device, const ProblemKey& problem,
                           const std::vector<PlannedConfig>& table, const Store& store, std::int64_t sweep_id,
                           const SweepOptions& options, std::size_t lanes, const CompileCache& cache,
                           std::ostream& out);
  // Over a space read lazily. A strategy that reads history (guided) first measures the fastest
  // configurations of the earlier sweeps that `enumerated` would start from, saying so on `out`.
  static Search lazy(const std::string& strategy, const KernelFamily& family, const DeviceLimits& device,
                     const ProblemKey& problem, LazyCandidates& candidates, const Store& store,
                     std::int64_t sweep_id, const SweepOptions& options, std::size_t lanes,
                     const CompileCache& cache, std::ostream& out);

  // The walker that deals lane `lane`'s next configuration (one walker may serve every lane).
  Strategy& walker(std::size_t lane) { return *walkers_[walkers_.size() == 1 ? 0 : lane]; }
  std::size_t walker_count() const { return walkers_.size(); }
  bool order_is_fixed() const { return walkers_.front()->order_is_fixed(); }
  // The first reason a walker gives for stopping early (empty: none).
  std::string stop_reason() const;
  // The walkers' remarks, a line each (empty: none).
  std::string remarks() const;

  // Candidate `index`'s compile job, made when first named.
  std::size_t job_for(std::size_t index, const std::vector<PlannedConfig>& candidates);
  BackgroundCompiler& compiler() { return *compiler_; }
  // Whether candidate `index`'s CUBIN is ready now (false while it has no job).
  bool compiled(std::size_t index) const;
  // Lets walkers whose order is not fixed see what is compiled (where a cache holds what compiles). Call it
  // once this Search is where it stays: the walkers' probes hold its address.
  void watch_compiles();

 private:
  Search(const KernelFamily& family, const DeviceLimits& device) : family_(&family), device_(&device) {}

  const KernelFamily* family_;
  const DeviceLimits* device_;
  std::vector<std::unique_ptr<Strategy>> walkers_;
  std::unique_ptr<BackgroundCompiler> compiler_;
  std::vector<std::size_t> job_of_;  // each candidate's compile job (kNoJob: none yet)
};

}  // namespace tiletune::sweep
