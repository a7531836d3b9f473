// Search strategies: which configuration to measure next. Every strategy measures each candidate at most
// once and stops at its budget.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/family.hpp"
#include "tiletune/plan.hpp"

namespace tiletune {

// The time of a candidate another GPU is measuring (see Strategy::next): taken, so never dealt twice, but
// not yet timed.
inline constexpr double kInFlight = std::numeric_limits<double>::quiet_NaN();

// Strategies speak in candidate slots. Over an enumerated space the candidates are fixed; over a space too
// large to enumerate (see make_lazy_strategy) the strategy finds them as it goes, so the table grows during
// next(): `times` may then be shorter than the table, a missing entry meaning "not measured".
class Strategy {
 public:
  virtual ~Strategy() = default;
  // `times[i]` is the measured median of candidate i, +inf when it failed, NaN while another GPU measures it
  // (it counts as measured, so it is never asked for twice, but has no time yet), nullopt when not yet
  // measured.
  virtual std::optional<std::size_t> next(const std::vector<std::optional<double>>& times) = 0;
  // The order in which candidates are likely to be asked for, so compiling can run ahead.
  virtual std::vector<std::size_t> likely_order() const = 0;
  // Whether likely_order is the true order (compiling ahead then never wastes work).
  virtual bool order_is_fixed() const = 0;
  // For a strategy whose order is not fixed: what it will ask for after the candidate next() just gave, so
  // that they compile together.
  virtual std::vector<std::size_t> upcoming() const { return {}; }
  // Why next() stopped before its budget, when that is worth saying (empty otherwise).
  virtual std::string stop_reason() const { return {}; }
  // What the strategy changed its mind about on the way, worth a line at the end (empty otherwise).
  virtual std::string remarks() const { return {}; }
  // For a strategy whose order is not fixed: a probe the sweep gives it, true where candidate i's CUBIN is
  // ready now, so that next() can deal what is compiled first (and need not wait for the rest).
  virtual void watch_compiles(std::function<bool(std::size_t)> compiled) { (void)compiled; }
};

// The strategies, by name, in one registry: what each can do and how to make it. --help, name checks, the
// sweep and replay all read it, so a new strategy is its file plus one entry (strategy_registry.cpp).
struct StrategyInfo {
  std::string name;
  std::string help;              // one line: what it measures next
  bool samples_lazily = false;   // walks spaces too large to enumerate
  bool walker_per_lane = false;  // one walker per GPU, each on its own seed (else one walker feeds every GPU)
  bool reads_history = false;    // starts from stored sweeps of the family (transfer)
  // Over an enumerated space's candidates; and over a space too large to enumerate (lanes walkers where
  // walker_per_lane, else one), null where samples_lazily is false.
  std::unique_ptr<Strategy> (*make)(const KernelFamily& family, const std::vector<Params>& candidates,
                                    std::size_t budget, std::uint64_t seed) = nullptr;
  std::vector<std::unique_ptr<Strategy>> (*make_lazy)(LazyCandidates& space, std::size_t budget,
                                                      std::uint64_t seed, std::size_t lanes) = nullptr;
};

const std::vector<StrategyInfo>& strategy_registry();
// The registered strategy of that name; throws std::invalid_argument naming the registered ones.
const StrategyInfo& find_strategy(const std::string& name);
// "name: help" of every registered strategy, one per line, for --help.
std::string strategy_help();

std::vector<std::string> strategy_names();  // the registry's names, in its order

// budget: at most this many measurements (0: no limit beyond the candidate count).
// Throws std::invalid_argument on an unknown name.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const KernelFamily& family,
                                        const std::vector<Params>& candidates, std::size_t budget,
                                        std::uint64_t seed);

// What several lanes' walkers will ask for, merged for the compile queue: every lane's first, then every
// lane's second, and so on, so that each lane's next CUBIN comes early (the sweep and replay both queue so).
std::vector<std::size_t> interleave(const std::vector<std::vector<std::size_t>>& lanes);

// A sampling strategy over a space too large to enumerate gives up after this many draws in a row found
// nothing runnable: a space so constrained is better described with fewer values, and the bound keeps a
// sweep of a space without runnable points from drawing (and storing pruned points) forever.
inline constexpr std::uint64_t kMaxFruitlessDraws = 100'000;

// A seeded permutation of [0, n), computed one element at a time: a 4-round Feistel network over the
// smallest power of four >= n, cycle-walked back into range. Reading it in order draws distinct indices
// uniformly without replacement in constant memory, and it is invertible (where an index was drawn).
class IndexShuffle {
 public:
  IndexShuffle(std::uint64_t n, std::uint64_t seed);
  std::uint64_t size() const { return n_; }
  // The index drawn at `position` (< size()).
  std::uint64_t operator[](std::uint64_t position) const;
  // The position at which `index` (< size()) is drawn.
  std::uint64_t position_of(std::uint64_t index) const;

 private:
  std::uint64_t permute(std::uint64_t x) const;
  std::uint64_t unpermute(std::uint64_t x) const;
  std::uint64_t n_;
  unsigned half_bits_;
  std::uint64_t half_mask_;
  std::uint64_t keys_[4];
};

// random or annealing over `space`, a space too large to enumerate, with memory that follows the budget:
// random draws distinct indices through an IndexShuffle and prunes each as it is drawn; annealing computes
// neighbours from indices and restarts at drawn points. Both stop after `budget` measurements, when the
// space is spent, or after kMaxFruitlessDraws draws in a row found nothing runnable. Throws
// std::invalid_argument on brute_force, an unknown name or a budget of 0.
std::unique_ptr<Strategy> make_lazy_strategy(const std::string& name, LazyCandidates& space,
                                             std::size_t budget, std::uint64_t seed);

// The strategies of a sweep that measures on `lanes` GPUs at once; next() of strategy k gives what lane k
// measures next (a single strategy serves every lane). Brute force and random are one walk whose
// configurations the lanes deal out: the same sample as on one GPU. Annealing is one walker per lane,
// seeded apart (walker 0 as on one GPU); they see each other's measurements and, over a space too large
// to enumerate, draw their restarts from one shared order. A strategy sees the configurations in flight
// on other lanes as measured with no time yet (NaN; see run_sweep), so no configuration is measured
// twice and a budget counts them.
std::vector<std::unique_ptr<Strategy>> make_strategies(const std::string& name, const KernelFamily& family,
                                                       const std::vector<Params>& candidates,
                                                       std::size_t budget, std::uint64_t seed,
                                                       std::size_t lanes);
std::vector<std::unique_ptr<Strategy>> make_lazy_strategies(const std::string& name, LazyCandidates& space,
                                                            std::size_t budget, std::uint64_t seed,
                                                            std::size_t lanes);

}  // namespace tiletune
