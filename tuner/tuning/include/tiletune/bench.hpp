// tiletune bench: the best stored configuration of a family beside its baselines, in one worker process,
// as ratios with their spread.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tiletune/compiler.hpp"
#include "tiletune/family.hpp"
#include "tiletune/store.hpp"
#include "tiletune/sweep.hpp"
#include "tiletune/worker.hpp"

namespace tiletune {

struct Timing {
  double median_ms = 0, p25_ms = 0, p75_ms = 0, spread = 0;
  int reps = 0;
  // MeasureSettings::sustained_ms: the time per back-to-back run at the GPU's steady state and the SM clock
  // then (0: not measured).
  double sustained_ms = 0, sustained_clock_mhz = 0;
};

struct BenchRow {
  std::string family;
  ProblemKey problem;
  Params config;
  std::string config_source;  // "tuned" (best stored), "default" or "given"
  Timing time;
  double metric = 0;
  std::string metric_unit;
  std::string baseline;  // "cublas_sgemm", "d2d_copy", or a family name
  std::string baseline_config;
  Timing baseline_time;
  double ratio = 0;                      // baseline time / our time: above 1 means faster than the baseline
  double ratio_low = 0, ratio_high = 0;  // from the quartiles of both
  double sustained_ratio = 0;            // the same from the back-to-back runs (0: not measured)
  nlohmann::json extra;                  // occupancy, registers, clock
};

// Measures the family's best stored configuration (or its default, saying so), or `config` where one is
// given (config_source "given"), and each baseline. Throws SweepError with one line where ours cannot run.
std::vector<BenchRow> run_bench(const std::vector<KernelFamily>& families, const KernelFamily& family,
                                const ProblemKey& problem, const Store& store, Worker& worker,
                                const CompileCache& cache, const MeasureSettings& settings, std::ostream& log,
                                const std::optional<Params>& config = std::nullopt);

nlohmann::json bench_json(const std::vector<BenchRow>& rows, const DeviceLimits& device);
// Merges rows into an existing bench JSON document: a row with the same family, problem and baseline replaces
// the old one, the best stored configuration's row that of an earlier best; a configuration given to bench
// (config_source "given") replaces only the row of the same configuration.
nlohmann::json merge_bench_json(const nlohmann::json& existing, const nlohmann::json& fresh);

}  // namespace tiletune
