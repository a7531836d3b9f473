// A sweep: plan a family for one problem on the GPU in hand, measure what can run in the worker process,
// and store every outcome as it happens (so an interrupted sweep can resume).
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/compiler.hpp"
#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/shard.hpp"
#include "tiletune/store.hpp"
#include "tiletune/worker.hpp"

namespace tiletune {

class SweepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The main job (a sweep of every built-in family at its default sizes) measures at most this many
// configurations of each problem unless told otherwise: brute force below it, guided search above (replayed
// on the reference spaces, 130 measurements with refits while compiles run take less time than 100 without).
inline constexpr std::size_t kMainJobBudget = 130;

struct MeasureSettings {
  int min_reps = 5;
  int max_reps = 50;
  double budget_ms = 300;       // per configuration, for the timed repetitions
  double target_spread = 0.02;  // stop repeating once (p75 - p25) / median is below this
  // bench: after the timed runs, back-to-back runs for this long, so that the GPU settles at the clock its
  // power limit allows, as under an application's steady load (0: none). Sweeps leave it at 0.
  double sustained_ms = 0;
  std::uint64_t seed = 20261122;
};

struct SweepOptions {
  // Continue the newest unfinished sweep of the problem (or the one resume_sweep names): what it stored is
  // passed over, and what it measured counts against the budget.
  bool resume = false;
  std::int64_t resume_sweep = 0;
  // brute_force, random, annealing, guided, or auto: brute force where the runnable configurations number at
  // most the budget (or there is none), guided search with the budget otherwise (a random sample where
  // XGBoost cannot be opened; see resolve_strategy).
  std::string strategy = "brute_force";
  std::size_t budget = 0;   // configurations to measure; 0: all
  double time_limit_s = 0;  // 0: none
  double timeout_s = 0;     // per configuration; 0: derived from the best time so far
  int compile_jobs = 1;
  MeasureSettings measure;
  bool progress_line = false;  // a live line (terminal) instead of plain lines
  int log_every = 0;           // plain mode: a line every N configurations (0: only failures and new bests)
  Shard shard;                 // measure only this part of the space (its own sweep; merge the databases)
  // The family's siblings (see sibling_families): guided starts from their sweeps of the same problem as well
  // as from the family's own sweeps of other problems. The command line fills it from the families loaded.
  std::vector<std::string> siblings;
};

struct SweepSummary {
  // One GPU's share of a sweep.
  struct Gpu {
    int ordinal = 0;
    std::string uuid;
    int measured = 0;
    double busy_seconds = 0;  // its worker's time measuring (and setting up)
    int worker_restarts = 0;
  };

  std::int64_t sweep_id = 0;
  std::string strategy;  // as run: auto resolved
  int walkers = 1;       // annealing over several GPUs: one per GPU
  std::map<Outcome, int> counts;
  std::optional<StoredResult> best;
  double seconds = 0;
  std::vector<Gpu> gpus;            // in the order of the workers
  double gpu_busy_seconds = 0;      // time the workers spent measuring, summed
  double compile_wait_seconds = 0;  // time the sweep waited on NVRTC
  // Time its strategies took to choose what to measure next, a lane waiting (guided's fits and predictions;
  // over a space drawn lazily, the drawing and pruning too).
  double choosing_seconds = 0;
  int measured = 0, resumed_skipped = 0, worker_restarts = 0;
  bool interrupted = false;
  // When this run found its best: the measurement (from 1; 0: nothing ran) and the seconds since it began.
  std::size_t best_found_at = 0;
  double best_found_seconds = 0;
};

// How a sweep walks the family's space: enumerated (at most kMaxSpaceSize configurations, every strategy),
// or sampled lazily (random or annealing with a budget over a larger space, with memory that follows the
// budget). Throws SweepError, one line naming the space's size, for a space no sweep can walk: larger than
// kMaxSpaceSize with brute force or without a budget, or larger than a 64-bit index holds. Needs no GPU, so
// that the command refuses before it starts the worker.
enum class SpaceWalk { enumerated, sampled };
SpaceWalk sweep_space_walk(const KernelFamily& family, const SweepOptions& options);

// Asks the worker for its device; throws SweepError "no CUDA GPU: ..." when there is none.
DeviceLimits worker_device(Worker& worker);

// What "auto" runs for a space of `runnable` configurations; other names are returned as they are. `why`, if
// given, gets the line that says so (empty for other names).
std::string resolve_strategy(const std::string& strategy, std::size_t runnable, std::size_t budget,
                             std::string* why = nullptr);

// The newest sweep of the problem on one of these GPUs (by uuid), of this shard, with the family's template
// and parameter list as they are now: the one a resume continues, or that already swept the problem.
std::optional<SweepInfo> newest_matching_sweep(const Store& store, const KernelFamily& family,
                                               const ProblemKey& problem,
                                               const std::vector<std::string>& uuids, const Shard& shard);

// Sweeps one problem, measuring on every worker at once: one thread per worker takes the configurations the
// calling thread deals out (see make_strategies), and the calling thread alone writes to the store. The
// workers' GPUs must be one model (SweepError otherwise); the sweep is stored under the first, and its
// strategy says how many GPUs measured. A worker that times out or dies costs only its own configuration.
SweepSummary run_sweep(const KernelFamily& family, const ProblemKey& problem, Store& store,
                       const std::vector<Worker*>& workers, const CompileCache& cache,
                       const SweepOptions& options, std::ostream& out,
                       const std::atomic<bool>* stop_requested = nullptr);
SweepSummary run_sweep(const KernelFamily& family, const ProblemKey& problem, Store& store, Worker& worker,
                       const CompileCache& cache, const SweepOptions& options, std::ostream& out,
                       const std::atomic<bool>* stop_requested = nullptr);

}  // namespace tiletune
