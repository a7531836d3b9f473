#include "tiletune/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

namespace tiletune {

namespace {

std::size_t count_measured(const std::vector<std::optional<double>>& times) {
  return static_cast<std::size_t>(std::count_if(times.begin(), times.end(), [](const auto& t) { return t.has_value(); }));
}

// Walks a fixed order: in space order (brute force) or shuffled (random sampling).
class OrderedStrategy : public Strategy {
 public:
  OrderedStrategy(std::vector<std::size_t> order, std::size_t budget) : order_(std::move(order)), budget_(budget) {}
  std::optional<std::size_t> next(const std::vector<std::optional<double>>& times) override {
    if (budget_ && count_measured(times) >= budget_) return std::nullopt;
    while (pos_ < order_.size()) {
      const std::size_t i = order_[pos_++];
      if (!times[i]) return i;
    }
    return std::nullopt;
  }
  std::vector<std::size_t> likely_order() const override {
    return budget_ && budget_ < order_.size() ? std::vector<std::size_t>(order_.begin(), order_.begin() + budget_) : order_;
  }
  bool order_is_fixed() const override { return true; }

 private:
  std::vector<std::size_t> order_;
  std::size_t budget_;
  std::size_t pos_ = 0;
};

// Simulated annealing over the parameter grid, a neighbourhood at a time: a neighbour changes one parameter
// to the adjacent value in its list. From the current point every unmeasured neighbour is measured (they
// compile together, in parallel: see upcoming()); then the walk moves to the best of them if it is faster, or
// else with probability exp(-relative slowdown / temperature), the temperature falling as the budget is spent.
// When every neighbour of the current point is measured it restarts at a random unmeasured point.
class AnnealingStrategy : public Strategy {
 public:
  AnnealingStrategy(const KernelFamily& family, const std::vector<Params>& candidates, std::size_t budget, std::uint64_t seed)
      : candidates_(candidates), budget_(budget ? budget : candidates.size()), rng_(seed) {
    for (const auto& p : family.parameters) {
      values_.push_back(p.values);
      names_.push_back(p.name);
    }
    for (std::size_t i = 0; i < candidates_.size(); ++i) index_[key(candidates_[i])] = i;
  }

  std::optional<std::size_t> next(const std::vector<std::optional<double>>& times) override {
    const std::size_t done = count_measured(times);
    if (done >= budget_ || done >= candidates_.size()) return std::nullopt;
    // Drop what was measured meanwhile (never ask twice).
    batch_.erase(std::remove_if(batch_.begin(), batch_.end(), [&](std::size_t i) { return times[i].has_value(); }), batch_.end());
    if (batch_.empty()) {
      if (!current_) {  // the first point, or the one after a restart
        if (last_ && times[*last_] && std::isfinite(*times[*last_])) current_ = *last_, current_time_ = *times[*last_];
      } else if (!measured_batch_.empty()) {  // the neighbourhood is measured: move
        if (const auto best = fastest(measured_batch_, times)) {
          const double t = *times[*best];
          const double temperature = 0.3 * (1.0 - static_cast<double>(done) / static_cast<double>(budget_)) + 1e-3;
          const double slowdown = (t - current_time_) / current_time_;
          std::uniform_real_distribution<double> u(0.0, 1.0);
          if (slowdown <= 0 || u(rng_) < std::exp(-slowdown / temperature)) current_ = *best, current_time_ = t;
        }
      }
      measured_batch_.clear();
      if (current_)
        for (std::size_t n : neighbours(*current_))
          if (!times[n]) batch_.push_back(n);
      if (batch_.empty()) {  // start, or a dead end: a random unmeasured point
        current_.reset();
        speculative_.clear();
        std::vector<std::size_t> open;
        for (std::size_t i = 0; i < times.size(); ++i)
          if (!times[i]) open.push_back(i);
        if (open.empty()) return std::nullopt;
        last_ = open[std::uniform_int_distribution<std::size_t>(0, open.size() - 1)(rng_)];
        return last_;
      }
      std::shuffle(batch_.begin(), batch_.end(), rng_);
      if (batch_.size() > budget_ - done) batch_.resize(budget_ - done);
    }
    last_ = batch_.back();
    batch_.pop_back();
    // Where the walk will likely go next: the best neighbour measured so far, if it beats the current point.
    // Its own neighbours are worth compiling while the rest of this neighbourhood is measured.
    speculative_.clear();
    const auto lead = fastest(measured_batch_, times);
    if (lead && *times[*lead] < current_time_)
      for (std::size_t n : neighbours(*lead))
        if (!times[n] && n != *last_ && std::find(batch_.begin(), batch_.end(), n) == batch_.end()) speculative_.push_back(n);
    measured_batch_.push_back(*last_);
    return last_;
  }

  // This neighbourhood's rest first, then the likely next one's.
  std::vector<std::size_t> upcoming() const override {
    std::vector<std::size_t> out = batch_;
    out.insert(out.end(), speculative_.begin(), speculative_.end());
    return out;
  }

  std::vector<std::size_t> likely_order() const override {
    std::vector<std::size_t> all(candidates_.size());
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  bool order_is_fixed() const override { return false; }

 private:
  std::string key(const Params& p) const { return params_to_text(p); }

  // The fastest of `among` that ran (a finite measured time), if any did.
  static std::optional<std::size_t> fastest(const std::vector<std::size_t>& among,
                                            const std::vector<std::optional<double>>& times) {
    std::optional<std::size_t> best;
    for (std::size_t i : among)
      if (times[i] && std::isfinite(*times[i]) && (!best || *times[i] < *times[*best])) best = i;
    return best;
  }

  std::vector<std::size_t> neighbours(std::size_t i) const {
    std::vector<std::size_t> out;
    const Params& base = candidates_[i];
    for (std::size_t k = 0; k < names_.size(); ++k) {
      const auto& vals = values_[k];
      const auto pos = std::find(vals.begin(), vals.end(), base.at(names_[k])) - vals.begin();
      for (long step : {-1L, 1L}) {
        const long j = static_cast<long>(pos) + step;
        if (j < 0 || j >= static_cast<long>(vals.size())) continue;
        Params p = base;
        p[names_[k]] = vals[static_cast<std::size_t>(j)];
        if (auto it = index_.find(key(p)); it != index_.end()) out.push_back(it->second);
      }
    }
    return out;
  }

  std::vector<Params> candidates_;
  std::vector<std::string> names_;
  std::vector<std::vector<std::int64_t>> values_;
  std::map<std::string, std::size_t> index_;
  std::size_t budget_;
  std::mt19937_64 rng_;
  std::optional<std::size_t> current_, last_;
  double current_time_ = std::numeric_limits<double>::infinity();
  std::vector<std::size_t> batch_, measured_batch_, speculative_;
};

}  // namespace

std::vector<std::string> strategy_names() { return {"brute_force", "random", "annealing"}; }

std::unique_ptr<Strategy> make_strategy(const std::string& name, const KernelFamily& family,
                                        const std::vector<Params>& candidates, std::size_t budget, std::uint64_t seed) {
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  if (name == "brute_force") return std::make_unique<OrderedStrategy>(order, budget);
  if (name == "random") {
    std::mt19937_64 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    return std::make_unique<OrderedStrategy>(order, budget);
  }
  if (name == "annealing") return std::make_unique<AnnealingStrategy>(family, candidates, budget, seed);
  throw std::invalid_argument("unknown strategy '" + name + "' (brute_force, random, annealing)");
}

}  // namespace tiletune
