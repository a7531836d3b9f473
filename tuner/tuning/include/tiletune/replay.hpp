// Replay: a strategy run against a complete sweep measured before, without a GPU. Each configuration costs
// its stored compile time (in a simulated pool of compiler processes that behaves as the sweep's does) and
// its stored measuring wall time; its outcome comes from the stored sweep. This is how strategies compare.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/records.hpp"
#include "tiletune/transfer.hpp"

namespace tiletune {

class Store;

// One runnable configuration of a measured space (pruned ones never reach a strategy).
struct ReplayPoint {
  Params params;
  std::optional<double> median_ms;  // nullopt: it failed (compile, launch, runtime, wrong result, timeout)
  bool compiled = true;             // false: it failed to compile, so it never reached the GPU
  double compile_ms = 0;            // NVRTC's time for its CUBIN
  double measure_ms = 0;            // the worker's wall time for it: set-up, checks and timed runs
  std::vector<float> plan;          // plan_features() (empty: not known)
};

struct ReplaySpace {
  std::string name;  // what the tables call it, e.g. "gemm_bf16_wgmma 4096x4096x4096 H100"
  std::string family;
  std::optional<ProblemKey> problem;    // what it measured: the sweep's, or what a space file's name holds
  std::vector<ReplayPoint> points;      // in the space's order (brute force walks it so)
  std::vector<std::string> plan_names;  // the plan features each point holds (plan_feature_names() or none)

  // The fastest ok median; nullopt when nothing ran.
  std::optional<double> best_ms() const;
};

// The space of a stored sweep: its results less the pruned ones, in the space's order. A missing compile or
// measure time (a CUBIN from the cache, an import without them) takes the median of the others. Throws
// std::invalid_argument, one line naming the sweep, when it does not exist, is not done, was a sample rather
// than every configuration, or has no ok result.
ReplaySpace replay_space_from_store(const Store& store, std::int64_t sweep_id);

// Orders the points as the space enumerates them (brute force's order), by replay_family's index.
void sort_in_space_order(ReplaySpace& space);

// A family whose parameters hold the values the space's points take, sorted: what a strategy needs to walk
// it (annealing's neighbours), with nothing a GPU would need.
KernelFamily replay_family(const ReplaySpace& space);

// Adds the plan features to every point: the family's configurations planned for `device` at `problem`.
// Throws std::invalid_argument, one line, when a point does not plan as runnable (the family changed since).
void add_plan_features(ReplaySpace& space, const KernelFamily& family, const DeviceLimits& device,
                       const ProblemKey& problem);

// A space as a small CSV file (what bench/spaces holds): a comment line with the space's name, one with its
// family, a header (the parameters, outcome, median_ms, compile_ms, measure_ms, then plan features), one row
// per runnable configuration. read_replay_space throws std::invalid_argument, one line naming the file, the
// line and the field, on anything malformed.
void write_replay_space(const ReplaySpace& space, std::ostream& out);
ReplaySpace read_replay_space(const std::filesystem::path& path);

// The grid of each point and the GPU's SMs, from the space's plan features (log2_blocks, and the SMs that
// waves = blocks / (SMs x blocks_per_sm) implies); empty where the space has none.
GridWaves grid_waves_of(const ReplaySpace& space);

// A space as an earlier sweep that guided transfers from, with its grids where the plan features hold them.
PriorSweep prior_sweep_of(const ReplaySpace& space);

struct ReplayOptions {
  std::vector<PriorSweep> transfer;  // guided: earlier sweeps of the family to start from (see transfer.hpp)
  bool plan_features = true;         // guided: give the model the points' plan features (off for an ablation)
  bool refit_when_idle = true;       // guided: see GuidedOptions::refit_when_idle (off for an ablation)
  bool gaussian_process = true;      // guided: see GuidedOptions::improvement_picks (off for an ablation)
  int compile_jobs = 1;              // compiler processes, as a sweep's -j
  std::size_t lanes = 1;             // GPUs measuring at once
  std::size_t budget = 0;            // the strategy's budget (0: none)
  double stop_within = 0.01;  // stop once the best is within this fraction of the space's best (<0: never)
};

// The best-so-far after each measurement.
struct ReplayStep {
  std::size_t evaluations = 0;  // measurements done (failures count)
  double seconds = 0;           // simulated time since the sweep started
  double best_ms = 0;           // +inf while nothing ran
  std::size_t point = 0;        // the point this measurement was of (its index in the space)
};

struct ReplayRun {
  std::vector<ReplayStep> curve;
  // The compilers until the last measurement ended: compiles started, those of them never measured (what
  // a refit passed over), their busy seconds (over all processes), and the seconds the GPUs waited for a
  // CUBIN.
  std::size_t compiles = 0, unused_compiles = 0;
  double compile_busy_s = 0, compile_wait_s = 0;
  // The first step within `fraction` of `best` (e.g. 0.01: within 1%); nullopt when none is.
  std::optional<ReplayStep> reached(double best, double fraction) const;
};

// Median and range over seeds of one quantity (evaluations or seconds to a target); a seed that never
// reached the target counts as +inf.
struct ReplayStat {
  double median = 0, low = 0, high = 0;
  std::size_t reached = 0, runs = 0;
};
ReplayStat replay_stat(std::vector<double> values);

// Runs strategy `name` (see strategy_names) with `seed` over the space; the same seed gives the same run.
// Throws std::invalid_argument on an unknown strategy.
ReplayRun replay(const ReplaySpace& space, const KernelFamily& family, const std::string& name,
                 std::uint64_t seed, const ReplayOptions& options);

// A main job's chain of problems (one family at several sizes, or on several devices), replayed with one
// seed: each space in turn, transferring from what strategy `name` measured in those before it (the newest
// first) and then from options.transfer, as a main job's sweeps transfer from the partial sweeps before them.
// Give options.stop_within < 0 for a main job's whole budget; `budgets`, where given, holds one budget per
// space (0: options.budget), as a family's default_budgets set a main job's. One run per space, in order.
// Throws std::invalid_argument when the spaces are of different families, or on an unknown strategy.
std::vector<ReplayRun> replay_chain(const std::vector<ReplaySpace>& spaces, const std::string& name,
                                    std::uint64_t seed, const ReplayOptions& options,
                                    const std::vector<std::size_t>& budgets = {});
// The budgets a main job gives `family` at each space (for replay_chain): what the family's default_budgets
// ask at the space's problem, 0 (the main job's budget) elsewhere and at a space of another family. Throws
// as default_problem does where a size in default_budgets is not one of the family's (a family that
// load_families gave has none such).
std::vector<std::size_t> family_budgets(const KernelFamily& family, const std::vector<ReplaySpace>& spaces);

// Throws std::invalid_argument, one line naming the odd one, unless every space is of one family.
void check_one_family(const std::vector<ReplaySpace>& spaces);

// The earlier sweep of `space` that measured only `points` (indices in it, in that order), with their grids.
// Throws std::out_of_range on an index past the space.
PriorSweep prior_sweep_of(const ReplaySpace& space, const std::vector<std::size_t>& points);
// The earlier sweep that `run` of `space` made: only the points it measured, with their grids.
PriorSweep prior_sweep_of(const ReplaySpace& space, const ReplayRun& run);

}  // namespace tiletune
