#include "tiletune/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "strategies.hpp"
#include "tiletune/guided.hpp"

namespace tiletune {

namespace {

std::size_t count_measured(const std::vector<std::optional<double>>& times) {
  return static_cast<std::size_t>(
      std::count_if(times.begin(), times.end(), [](const auto& t) { return t.has_value(); }));
}

// Walks the candidates in space order (brute force).
class OrderedStrategy : public Strategy {
 public:
  OrderedStrategy(std::size_t count, std::size_t budget) : count_(count), budget_(budget) {}
  std::optional<std::size_t> next(const std::vector<std::optional<double>>& times) override {
    if (budget_ && count_measured(times) >= budget_) return std::nullopt;
    while (pos_ < count_) {
      const std::size_t i = pos_++;
      if (!times[i]) return i;
    }
    return std::nullopt;
  }
  std::vector<std::size_t> likely_order() const override {
    std::vector<std::size_t> order(budget_ ? std::min(budget_, count_) : count_);
    std::iota(order.begin(), order.end(), 0);
    return order;
  }
  bool order_is_fixed() const override { return true; }

 private:
  std::size_t count_, budget_;
  std::size_t pos_ = 0;
};

using Times = std::vector<std::optional<double>>;

// Whether candidate i was measured (a table that grows during next() may be longer than `times`).
bool measured(const Times& times, std::size_t i) { return i < times.size() && times[i].has_value(); }

// Simulated annealing over the parameter grid, a neighbourhood at a time: a neighbour changes one parameter
// to the adjacent value in its list. From the current point every unmeasured neighbour is measured (they
// compile together, in parallel: see upcoming()); then the walk moves to the best of them if it is faster, or
// else with probability exp(-relative slowdown / temperature), the temperature falling as the budget is
// spent. When every neighbour of the current point is measured it restarts at a random unmeasured point.
// Where the candidates come from (a table, or a space visited lazily) is the subclass's.
class AnnealingStrategy : public Strategy {
 public:
  AnnealingStrategy(std::size_t budget, std::uint64_t seed) : rng_(seed), budget_(budget) {}

  std::optional<std::size_t> next(const Times& times) override {
    const std::size_t done = count_measured(times);
    if (done >= budget_ || exhausted(done)) return std::nullopt;
    // Drop what was measured meanwhile (never ask twice).
    batch_.erase(
        std::remove_if(batch_.begin(), batch_.end(), [&](std::size_t i) { return measured(times, i); }),
        batch_.end());
    if (batch_.empty()) {
      settle(times, done);
      if (!open_neighbourhood(times, done)) return start_anew(times);
    }
    last_ = batch_.back();
    batch_.pop_back();
    speculate(times);
    measured_batch_.push_back(*last_);
    return last_;
  }

  // This neighbourhood's rest first, then the likely next one's.
  std::vector<std::size_t> upcoming() const override {
    std::vector<std::size_t> out = batch_;
    out.insert(out.end(), speculative_.begin(), speculative_.end());
    return out;
  }
  bool order_is_fixed() const override { return false; }

 protected:
  // The runnable candidates one step from candidate `i`, parameter by parameter, the previous value first.
  virtual std::vector<std::size_t> neighbours(std::size_t i) = 0;
  // A random unmeasured candidate to start from; nullopt when there is none.
  virtual std::optional<std::size_t> restart(const Times& times) = 0;
  // Whether every candidate is measured.
  virtual bool exhausted(std::size_t done) const = 0;

  std::mt19937_64 rng_;

 private:
  // Where the walk stands once a neighbourhood is measured: the first point (or the one after a restart) once
  // it ran; else the best neighbour if it is faster, or with probability exp(-relative slowdown /
  // temperature).
  void settle(const Times& times, std::size_t done) {
    if (!current_) {
      if (last_ && measured(times, *last_) && std::isfinite(*times[*last_]))
        current_ = *last_, current_time_ = *times[*last_];
      return;
    }
    if (measured_batch_.empty()) return;
    const auto best = fastest(measured_batch_, times);
    if (!best) return;
    const double t = *times[*best];
    const double temperature = 0.3 * (1.0 - static_cast<double>(done) / static_cast<double>(budget_)) + 1e-3;
    const double slowdown = (t - current_time_) / current_time_;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (slowdown <= 0 || u(rng_) < std::exp(-slowdown / temperature)) current_ = *best, current_time_ = t;
  }

  // The current point's unmeasured neighbours, in random order, at most the budget left; false when there are
  // none (the walk starts, or met a dead end).
  bool open_neighbourhood(const Times& times, std::size_t done) {
    measured_batch_.clear();
    if (current_)
      for (std::size_t n : neighbours(*current_))
        if (!measured(times, n)) batch_.push_back(n);
    if (batch_.empty()) return false;
    std::shuffle(batch_.begin(), batch_.end(), rng_);
    if (batch_.size() > budget_ - done) batch_.resize(budget_ - done);
    return true;
  }

  // A random unmeasured point to walk from.
  std::optional<std::size_t> start_anew(const Times& times) {
    current_.reset();
    speculative_.clear();
    const auto start = restart(times);
    if (!start) return std::nullopt;
    last_ = start;
    return last_;
  }

  // Where the walk will likely go next: the best neighbour measured so far, if it beats the current point.
  // Its own neighbours are worth compiling while the rest of this neighbourhood is measured.
  void speculate(const Times& times) {
    speculative_.clear();
    const auto lead = fastest(measured_batch_, times);
    if (!lead || *times[*lead] >= current_time_) return;
    for (std::size_t n : neighbours(*lead))
      if (!measured(times, n) && n != *last_ && std::find(batch_.begin(), batch_.end(), n) == batch_.end())
        speculative_.push_back(n);
  }

  // The fastest of `among` that ran (a finite measured time), if any did.
  static std::optional<std::size_t> fastest(const std::vector<std::size_t>& among, const Times& times) {
    std::optional<std::size_t> best;
    for (std::size_t i : among)
      if (measured(times, i) && std::isfinite(*times[i]) && (!best || *times[i] < *times[*best])) best = i;
    return best;
  }

  std::size_t budget_;
  std::optional<std::size_t> current_, last_;
  double current_time_ = std::numeric_limits<double>::infinity();
  std::vector<std::size_t> batch_, measured_batch_, speculative_;
};

// Annealing over an enumerated space's runnable candidates; neighbours come from the space's index
// arithmetic, as for a space too large to enumerate, and only runnable ones (candidates) count.
class TableAnnealing : public AnnealingStrategy {
 public:
  TableAnnealing(const KernelFamily& family, const std::vector<Params>& candidates, std::size_t budget,
                 std::uint64_t seed)
      : AnnealingStrategy(budget ? budget : candidates.size(), seed),
        space_(family),
        count_(candidates.size()) {
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      index_.push_back(space_.index_of(candidates[i]));  // nullopt: outside the space, without neighbours
      if (index_.back()) slot_[*index_.back()] = i;
    }
  }

  std::vector<std::size_t> likely_order() const override {
    std::vector<std::size_t> all(count_);
    std::iota(all.begin(), all.end(), 0);
    return all;
  }

 protected:
  std::vector<std::size_t> neighbours(std::size_t i) override {
    std::vector<std::size_t> out;
    if (!index_[i]) return out;
    for (std::uint64_t n : space_.neighbours(*index_[i]))
      if (const auto it = slot_.find(n); it != slot_.end()) out.push_back(it->second);
    return out;
  }

  std::optional<std::size_t> restart(const Times& times) override {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < times.size(); ++i)
      if (!times[i]) open.push_back(i);
    if (open.empty()) return std::nullopt;
    return open[std::uniform_int_distribution<std::size_t>(0, open.size() - 1)(rng_)];
  }

  bool exhausted(std::size_t done) const override { return done >= count_; }

 private:
  SpaceIndex space_;
  std::size_t count_;
  std::vector<std::optional<std::uint64_t>> index_;      // each candidate's index in the space
  std::unordered_map<std::uint64_t, std::size_t> slot_;  // and back
};

std::string gave_up_text() {
  return "gave up: " + std::to_string(kMaxFruitlessDraws) + " draws in a row found nothing runnable";
}

// Random sampling, one walk for every space size: distinct indices drawn in a seeded shuffled order
// (IndexShuffle), with a few runnable ones drawn ahead so that they compile while the current one is
// measured. Over an enumerated space every index is a runnable candidate, its own slot, and the order is
// known up front; over a space too large to enumerate each index is pruned as it is drawn.
class RandomStrategy : public Strategy {
 public:
  // Enough to keep a machine's compiler processes busy; never more than the budget left.
  static constexpr std::size_t kLookahead = 16;

  // space: null for an enumerated space of `count` candidates. budget 0: every candidate.
  RandomStrategy(LazyCandidates* space, std::uint64_t count, std::size_t budget, std::uint64_t seed)
      : space_(space), draws_(count, seed), budget_(budget ? budget : count) {}

  std::optional<std::size_t> next(const Times& times) override {
    const std::size_t done = count_measured(times);
    if (done >= budget_) return std::nullopt;
    while (!ahead_.empty() && measured(times, ahead_.front())) ahead_.pop_front();
    while (ahead_.size() < std::min(kLookahead + 1, budget_ - done) && draw(times)) {
    }
    if (ahead_.empty()) return std::nullopt;
    const std::size_t pick = ahead_.front();
    ahead_.pop_front();
    return pick;
  }
  std::vector<std::size_t> upcoming() const override { return {ahead_.begin(), ahead_.end()}; }
  // Over an enumerated space, the first budget's worth of draws.
  std::vector<std::size_t> likely_order() const override {
    std::vector<std::size_t> order;
    if (space_) return order;
    for (std::uint64_t k = 0; k < std::min<std::uint64_t>(budget_, draws_.size()); ++k)
      order.push_back(static_cast<std::size_t>(draws_[k]));
    return order;
  }
  bool order_is_fixed() const override { return space_ == nullptr; }
  std::string stop_reason() const override { return gave_up_ ? gave_up_text() : std::string(); }

 private:
  // Draws until a runnable unmeasured point joins the look-ahead; false when the space is spent or the draws
  // gave up.
  bool draw(const Times& times) {
    while (!gave_up_ && pos_ < draws_.size()) {
      const auto v = visit(draws_[pos_++]);
      if (v.fate == LazyCandidates::Fate::runnable) {
        fruitless_ = 0;
        if (measured(times, v.slot)) continue;
        ahead_.push_back(v.slot);
        return true;
      }
      if (v.fate == LazyCandidates::Fate::pruned && ++fruitless_ >= kMaxFruitlessDraws) gave_up_ = true;
    }
    return false;
  }

  // Never drawn again: pruned points need not be remembered.
  LazyCandidates::Visit visit(std::uint64_t index) {
    if (space_) return space_->visit(index, /*remember=*/false);
    return {LazyCandidates::Fate::runnable, static_cast<std::size_t>(index)};
  }

  LazyCandidates* space_;
  IndexShuffle draws_;
  std::size_t budget_;
  std::uint64_t pos_ = 0, fruitless_ = 0;
  bool gave_up_ = false;
  std::deque<std::size_t> ahead_;
};

// Where restarts over a space too large to enumerate draw from: a seeded shuffled order, one cursor shared
// by every walker of a sweep, so that no two walkers visit the same drawn point (a pruned one would be
// reported twice).
struct RestartDraws {
  RestartDraws(std::uint64_t n, std::uint64_t seed) : order(n, seed) {}
  IndexShuffle order;
  std::uint64_t pos = 0, fruitless = 0;
  bool gave_up = false;
};

// Annealing over a space too large to enumerate: neighbours come from index arithmetic and are pruned as
// they are first visited; restarts take the next runnable unmeasured point of the shared draw order.
class LazyAnnealing : public AnnealingStrategy {
 public:
  LazyAnnealing(LazyCandidates& space, std::size_t budget, std::uint64_t seed,
                std::shared_ptr<RestartDraws> draws)
      : AnnealingStrategy(budget, seed), space_(space), draws_(std::move(draws)) {}

  std::vector<std::size_t> likely_order() const override { return {}; }
  std::string stop_reason() const override { return draws_->gave_up ? gave_up_text() : std::string(); }

 protected:
  std::vector<std::size_t> neighbours(std::size_t i) override {
    std::vector<std::size_t> out;
    for (std::uint64_t n : space_.space().neighbours(space_.index_of(i))) {
      // A point a restart drew and found pruned (or stored before a resume) was not remembered, as draws
      // can be many; its place in the draw order tells that it was seen, and a second visit would report
      // it twice.
      if (!space_.known(n) && draws_->order.position_of(n) < draws_->pos) continue;
      const auto v = space_.visit(n);
      if (v.fate == LazyCandidates::Fate::runnable) out.push_back(v.slot);
    }
    return out;
  }

  std::optional<std::size_t> restart(const Times& times) override {
    RestartDraws& d = *draws_;
    while (!d.gave_up && d.pos < d.order.size()) {
      const std::uint64_t index = d.order[d.pos++];
      // A point visited before as a neighbour is known; any other is new, as the draws never repeat.
      const auto k = space_.known(index);
      const auto v = k ? *k : space_.visit(index, /*remember=*/false);
      if (v.fate == LazyCandidates::Fate::runnable && !measured(times, v.slot)) {
        d.fruitless = 0;
        return v.slot;
      }
      if (!k && v.fate == LazyCandidates::Fate::pruned && ++d.fruitless >= kMaxFruitlessDraws)
        d.gave_up = true;
    }
    return std::nullopt;
  }

  bool exhausted(std::size_t) const override { return draws_->gave_up; }

 private:
  LazyCandidates& space_;
  std::shared_ptr<RestartDraws> draws_;
};

// splitmix64's finaliser: a well-mixed 64-bit hash.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

// The built-in strategies' factories (strategies.hpp), which the registry names.
std::unique_ptr<Strategy> make_brute_force(const KernelFamily&, const std::vector<Params>& candidates,
                                           std::size_t budget, std::uint64_t) {
  return std::make_unique<OrderedStrategy>(candidates.size(), budget);
}

std::unique_ptr<Strategy> make_random(const KernelFamily&, const std::vector<Params>& candidates,
                                      std::size_t budget, std::uint64_t seed) {
  return std::make_unique<RandomStrategy>(nullptr, candidates.size(), budget, seed);
}

std::unique_ptr<Strategy> make_annealing(const KernelFamily& family, const std::vector<Params>& candidates,
                                         std::size_t budget, std::uint64_t seed) {
  return std::make_unique<TableAnnealing>(family, candidates, budget, seed);
}

std::unique_ptr<Strategy> make_table_guided(const KernelFamily& family, const std::vector<Params>& candidates,
                                            std::size_t budget, std::uint64_t seed) {
  return make_guided_strategy(parameter_features(family, candidates), budget, seed);
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const KernelFamily& family,
                                        const std::vector<Params>& candidates, std::size_t budget,
                                        std::uint64_t seed) {
  return find_strategy(name).make(family, candidates, budget, seed);
}

IndexShuffle::IndexShuffle(std::uint64_t n, std::uint64_t seed) : n_(n) {
  // The smallest even bit count whose range holds n, so that both halves are alike: the range is less than
  // 4n, and cycle-walking takes fewer than four steps on average.
  unsigned bits = 2;
  while (bits < 64 && (std::uint64_t{1} << bits) < n) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
  for (std::uint64_t r = 0; r < 4; ++r) keys_[r] = mix(seed + 0x9e3779b97f4a7c15ULL * (r + 1));
}

std::uint64_t IndexShuffle::permute(std::uint64_t x) const {
  std::uint64_t l = x >> half_bits_, r = x & half_mask_;
  for (std::uint64_t key : keys_) {
    const std::uint64_t f = mix(r ^ key) & half_mask_;
    std::uint64_t next_r = l ^ f;
    l = r;
    r = next_r;
  }
  return (l << half_bits_) | r;
}

std::uint64_t IndexShuffle::unpermute(std::uint64_t x) const {
  std::uint64_t l = x >> half_bits_, r = x & half_mask_;
  for (int k = 3; k >= 0; --k) {
    const std::uint64_t prev_l = r ^ (mix(l ^ keys_[k]) & half_mask_);
    r = l;
    l = prev_l;
  }
  return (l << half_bits_) | r;
}

// Cycle-walking: a permutation of the power-of-four range, applied again while it lands outside [0, n),
// is a permutation of [0, n); walking back with the inverse finds where an index was drawn.
std::uint64_t IndexShuffle::operator[](std::uint64_t position) const {
  std::uint64_t x = permute(position);
  while (x >= n_) x = permute(x);
  return x;
}

std::uint64_t IndexShuffle::position_of(std::uint64_t index) const {
  std::uint64_t x = unpermute(index);
  while (x >= n_) x = unpermute(x);
  return x;
}

std::unique_ptr<Strategy> make_lazy_strategy(const std::string& name, LazyCandidates& space,
                                             std::size_t budget, std::uint64_t seed) {
  return std::move(make_lazy_strategies(name, space, budget, seed, 1).front());
}

namespace {

// Walker 0 keeps the sweep's seed, so that one lane walks as a sweep on one GPU does.
std::uint64_t walker_seed(std::uint64_t seed, std::size_t walker) {
  return walker == 0 ? seed : mix(seed + 0x9e3779b97f4a7c15ULL * walker);
}

}  // namespace

std::vector<std::unique_ptr<Strategy>> make_strategies(const std::string& name, const KernelFamily& family,
                                                       const std::vector<Params>& candidates,
                                                       std::size_t budget, std::uint64_t seed,
                                                       std::size_t lanes) {
  const StrategyInfo& info = find_strategy(name);
  std::vector<std::unique_ptr<Strategy>> out;
  out.push_back(info.make(family, candidates, budget, seed));
  if (info.walker_per_lane)
    for (std::size_t k = 1; k < lanes; ++k)
      out.push_back(info.make(family, candidates, budget, walker_seed(seed, k)));
  return out;
}

std::vector<std::unique_ptr<Strategy>> make_lazy_random(LazyCandidates& space, std::size_t budget,
                                                        std::uint64_t seed, std::size_t) {
  std::vector<std::unique_ptr<Strategy>> out;
  out.push_back(std::make_unique<RandomStrategy>(&space, space.space().size(), budget, seed));
  return out;
}

std::vector<std::unique_ptr<Strategy>> make_lazy_annealing(LazyCandidates& space, std::size_t budget,
                                                           std::uint64_t seed, std::size_t lanes) {
  const auto draws = std::make_shared<RestartDraws>(space.space().size(), seed);
  std::vector<std::unique_ptr<Strategy>> out;
  for (std::size_t k = 0; k < std::max<std::size_t>(lanes, 1); ++k)
    out.push_back(std::make_unique<LazyAnnealing>(space, budget, walker_seed(seed, k), draws));
  return out;
}

std::vector<std::unique_ptr<Strategy>> make_lazy_guided(LazyCandidates& space, std::size_t budget,
                                                        std::uint64_t seed, std::size_t) {
  std::vector<std::unique_ptr<Strategy>> out;
  out.push_back(make_lazy_guided_strategy(space, budget, seed));
  return out;
}

std::vector<std::unique_ptr<Strategy>> make_lazy_strategies(const std::string& name, LazyCandidates& space,
                                                            std::size_t budget, std::uint64_t seed,
                                                            std::size_t lanes) {
  const StrategyInfo& info = find_strategy(name);
  const std::string size = std::to_string(space.space().size()) + " configurations";
  if (!info.make_lazy)
    throw std::invalid_argument(name + " cannot measure " + size + "; sample them with " +
                                lazy_strategy_list());
  if (budget == 0) throw std::invalid_argument(name + " over " + size + " needs a budget");
  return info.make_lazy(space, budget, seed, lanes);
}

std::vector<std::size_t> interleave(const std::vector<std::vector<std::size_t>>& lanes) {
  std::vector<std::size_t> all;
  for (std::size_t j = 0;; ++j) {
    bool any = false;
    for (const auto& ahead : lanes)
      if (j < ahead.size()) all.push_back(ahead[j]), any = true;
    if (!any) return all;
  }
}

}  // namespace tiletune
