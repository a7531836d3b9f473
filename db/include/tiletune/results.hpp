// The stored forms of a sweep and its results: what the planner and the tuner produce and the store keeps.
// Value types only (no SQLite), so that the model layer names them without linking the store.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/records.hpp"

namespace tiletune {

// What a sweep (or a stored plan) was run against. begin_sweep creates the device, family and problem
// rows as needed.
struct SweepSpec {
  std::string family;         // family name
  std::string template_hash;  // hash of the template source + description
  std::string family_json;    // the family description as loaded (so defaults survive without the files)
  std::string space_hash;     // hash of the parameter names and values: a resume must match it
  DeviceRecord device;
  ProblemKey problem;
  std::string kind = "sweep";  // "sweep" or "plan"
  std::string strategy = "brute_force";
  std::string tiletune_version;
  std::string git_sha;
};

// The stored outcome of one configuration.
struct ResultRecord {
  Params params;
  Outcome outcome = Outcome::ok;
  std::string reason;                               // why it is not ok; for ok, empty or a note
  std::optional<double> median_ms, min_ms, spread;  // spread: (p75 - p25) / median of the timed runs
  int repetitions = 0;
  std::optional<double> metric;  // GFLOP/s or GB/s at the median
  std::string metric_unit;       // "GFLOP/s" or "GB/s"
  std::optional<double> error;   // relative L2 error against the reference
  std::optional<int> registers, static_smem, dynamic_smem, local_bytes, spill_bytes;
  std::optional<int> threads_per_block;
  std::optional<int> active_blocks, active_warps;  // per SM
  std::string occupancy_limiter;                   // "threads", "registers", "shared_memory", "blocks"
  std::optional<double> occupancy;                 // active warps / max warps per SM
  std::optional<double> sm_clock_mhz;
  std::optional<double> compile_ms;  // NVRTC's time for this configuration's CUBIN (when it was compiled)
  std::optional<double> measure_ms;  // wall time of the worker's measurement: set-up, checks and timed runs
  std::vector<double> times_ms;      // every timed run's kernel time, in the order they ran
};

// How many configurations a sweep (or a stored plan) pruned before compiling, by reason: the plan's text,
// "threads: 2048 per block > 1024" or "constraint: ...". Stored as counts (table `pruned`, schema version
// 4), not as a result per configuration; sweeps stored before version 4 hold theirs as pruned results.
using PrunedCounts = std::map<std::string, std::int64_t>;
// Every configuration the counts count.
inline std::int64_t pruned_total(const PrunedCounts& counts) {
  std::int64_t total = 0;
  for (const auto& [reason, n] : counts) total += n;
  return total;
}

struct SweepInfo {
  std::int64_t id = 0;
  std::string uid;  // random hex, stable across export/import
  std::string family, template_hash, space_hash;
  DeviceRecord device;
  ProblemKey problem;
  std::string kind, strategy, status;  // status: "running", "done", "interrupted"
  std::string started_at, ended_at;    // ISO-8601 UTC
  std::string tiletune_version, git_sha;
  std::int64_t result_count = 0;
  // When the sweep found its best: the measurement (counted from 1) and the seconds since it started; unset
  // for a sweep that stored none (before schema version 3, imported, or nothing ran).
  std::optional<std::int64_t> best_found_count;
  std::optional<double> best_found_seconds;
};

// A point where a sweep's best improved: the measurement that found it (counted from 1 in the order the
// results were stored, leaving out what was pruned before compiling), the seconds since the sweep started,
// the new best time and its configuration.
struct BestSoFarPoint {
  std::int64_t measurement = 0;
  double seconds = 0;
  double median_ms = 0;
  Params params;
};

struct StoredResult {
  std::int64_t sweep_id = 0;
  ResultRecord record;
  std::string measured_at;
};

// The fastest ok result of one (family, device name, problem), over every sweep.
struct BestConfig {
  std::string family, device_name, arch, size_text, args_text;
  StoredResult result;
};

// What the family's plan says of a result that an import or a merge brings as ok: "" when the plan for that
// device and problem runs the configuration, else why not, and the result is then stored as pruned with
// that reason. The caller, which knows the families, gives it (tiletune/import_check.hpp); none means every
// result is stored as it came.
using ImportPlanCheck = std::function<std::string(const std::string& family, const DeviceRecord& device,
                                                  const ProblemKey& problem, const Params& params)>;

// `record` as an import stores it: an ok result that `check` refuses becomes pruned with the plan's reason
// and `origin` ("imported as ok"), its measurements dropped; anything else unchanged.
ResultRecord checked_against_plan(const ResultRecord& record, const ImportPlanCheck& check,
                                  const std::string& family, const DeviceRecord& device,
                                  const ProblemKey& problem, const std::string& origin);

}  // namespace tiletune
