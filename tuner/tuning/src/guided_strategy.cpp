#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <set>

#include "ensemble.hpp"
#include "rank_correlation.hpp"
#include "tiletune/guided.hpp"
#include "tiletune/occupancy.hpp"
#include "weighted_consensus.hpp"
#include "xgboost_model.hpp"

namespace tiletune {

namespace {

// Tile sizes and block shapes act by ratios; a tree model only needs the order, which this keeps.
float parameter_feature(std::int64_t v) {
  return static_cast<float>(v >= 1 ? std::log2(static_cast<double>(v)) : static_cast<double>(v) - 1);
}

}  // namespace

std::vector<std::vector<float>> parameter_features(const KernelFamily& family,
                                                   const std::vector<Params>& candidates) {
  std::vector<std::vector<float>> rows(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i)
    for (const auto& parameter : family.parameters) {
      const auto it = candidates[i].find(parameter.name);
      rows[i].push_back(it == candidates[i].end() ? NAN : parameter_feature(it->second));
    }
  return rows;
}

const std::string& guided_unavailable() { return xgboost_unavailable(); }

std::vector<std::string> plan_feature_names() {
  return {"threads", "log2_blocks", "smem_kib", "blocks_per_sm", "occupancy", "waves", "last_wave_fill"};
}

std::vector<float> plan_features(const PlannedConfig& config, const DeviceLimits& device) {
  const LaunchGeometry& l = config.launch;
  const auto blocks = static_cast<double>(l.blocks());
  const Occupancy occ = occupancy_before_compile(l, device);
  const double per_wave = static_cast<double>(std::max(device.sm_count, 1)) * std::max(occ.active_blocks, 1);
  const double waves = blocks / per_wave;
  return {static_cast<float>(l.threads()),
          static_cast<float>(std::log2(std::max(blocks, 1.0))),
          static_cast<float>(static_cast<double>(l.static_smem_estimate + l.dynamic_smem) / 1024),
          static_cast<float>(occ.active_blocks),
          static_cast<float>(occ.fraction),
          static_cast<float>(waves),
          static_cast<float>(waves / std::ceil(std::max(waves, 1e-9)))};
}

namespace {

using Times = std::vector<std::optional<double>>;

bool measured(const Times& times, std::size_t i) { return i < times.size() && times[i].has_value(); }

// Measured and back: a time, or +inf for a failure. A configuration another GPU is measuring reads NaN: it is
// measured for picking (never asked for twice) but teaches the model nothing yet.
bool timed(const Times& times, std::size_t i) { return measured(times, i) && !std::isnan(*times[i]); }

// The search itself; where the candidates come from (a table, or a space drawn lazily) is the subclass's.
class GuidedStrategy : public Strategy {
 public:
  GuidedStrategy(std::size_t budget, std::size_t space_size, std::uint64_t seed, const GuidedOptions& options)
      : rng_(seed), budget_(budget), options_(options), model_(options.rounds, seed) {
    // A small space cannot spend many measurements on learning: a shorter random start, smaller batches, and
    // below kOnePickBelow candidates one pick per fit, so that each measurement informs the next (fewer
    // evaluations, each after a compile's wait). A start that follows an earlier sweep's order (transfer) is
    // a search of its own, so it may run longer.
    random_start_ = std::clamp<std::size_t>(space_size / 50, 4, 16);
    for (const auto& p : options_.prior_log_times) offsets_.push_back(offsets_of(p));
    if (options_.initial == 0)
      options_.initial = options_.priors.empty()
                             ? random_start_
                             : std::clamp<std::size_t>(space_size / 50, 4, kTransferStartMost);
    full_picks_ = std::max<std::size_t>(options_.batch / 2, 1);
    options_.batch =
        space_size < kOnePickBelow ? 1 : std::clamp<std::size_t>(space_size / 40, 2, options_.batch);
  }

  std::optional<std::size_t> next(const Times& times) override {
    std::size_t done = 0;
    for (const auto& t : times) done += t.has_value();
    if (done >= budget_) return std::nullopt;
    batch_.erase(
        std::remove_if(batch_.begin(), batch_.end(), [&](std::size_t i) { return measured(times, i); }),
        batch_.end());
    if (batch_.empty() || idle(done)) {
      const std::size_t count = std::min(options_.batch, budget_ - done);
      ahead_ =
          std::min(options_.ahead, budget_ - done - count);  // never compile what the budget cannot measure
      std::vector<std::size_t> kept = std::move(batch_);
      propose(times, count, done);
      for (std::size_t i : batch_)
        if (std::find(kept.begin(), kept.end(), i) == kept.end()) kept.push_back(i);
      batch_ = std::move(kept);
      proposed_at_ = done;
    }
    if (batch_.empty()) return std::nullopt;
    auto it = compiled_ ? std::find_if(batch_.begin(), batch_.end(), compiled_) : batch_.end();
    if (it == batch_.end()) it = batch_.begin();
    const std::size_t pick = *it;
    batch_.erase(it);
    return pick;
  }
  void watch_compiles(std::function<bool(std::size_t)> compiled) override { compiled_ = std::move(compiled); }
  // The batch's rest, then what would come after it as things stand, so that compiling runs ahead of the fit.
  std::vector<std::size_t> upcoming() const override {
    std::vector<std::size_t> out = batch_;
    out.insert(out.end(), tail_.begin(), tail_.end());
    return out;
  }
  bool order_is_fixed() const override { return false; }
  std::string remarks() const override { return remark_; }

 protected:
  // The unmeasured candidates worth ranking now, and one candidate's feature row.
  virtual std::vector<std::size_t> open(const Times& times) = 0;
  virtual const std::vector<float>& features(std::size_t slot) const = 0;

  std::mt19937_64 rng_;

 private:
  // Whether the lane asking finds nothing of the batch compiled while the model has learnt something new
  // since the batch was proposed: then the batch is refit (see GuidedOptions::refit_when_idle).
  bool idle(std::size_t done) const {
    if (!compiled_ || !options_.refit_when_idle || done <= proposed_at_) return false;
    if (done < options_.initial || first_pos_ < options_.first.size()) return false;  // not learning yet
    return batch_.size() < 2 * options_.batch && std::none_of(batch_.begin(), batch_.end(), compiled_);
  }

  // The next batch: what transfer puts first, then at random (or by the prior) until the model has enough
  // to learn from, then mostly the model's fastest.
  void propose(const Times& times, std::size_t count, std::size_t done) {
    batch_.clear();
    tail_.clear();
    for (; first_pos_ < options_.first.size() && batch_.size() < count; ++first_pos_)
      if (!measured(times, options_.first[first_pos_])) batch_.push_back(options_.first[first_pos_]);
    if (!batch_.empty()) {
      for (std::size_t j = first_pos_; j < options_.first.size() && tail_.size() < ahead_; ++j)
        if (!measured(times, options_.first[j])) tail_.push_back(options_.first[j]);
      return;
    }
    reweigh(times);
    std::vector<std::size_t> open_now = open(times);
    std::shuffle(open_now.begin(), open_now.end(), rng_);  // ties in a ranking fall at random
    if (done < options_.initial || !fit(times)) {
      Agreement agreement = agreeing_prior(times);
      agreement.misfit = misfit(times, agreement.prior);
      if (!options_.priors.empty() && !misfit_ && agreement.points >= options_.agreement_after &&
          unlike(times, agreement)) {
        turn_to_the_model(done, agreement);
        cover(times, open_now, count, agreement.prior);
        if (!batch_.empty()) return;
      }
      if (done >= options_.initial && fit(times)) {
        choose_by_model(open_now, count);
        return;
      }
      if (options_.priors.empty()) {
        const std::size_t n = std::min(count, open_now.size()), m = std::min(n + ahead_, open_now.size());
        batch_.assign(open_now.begin(), open_now.begin() + static_cast<std::ptrdiff_t>(n));
        tail_.assign(open_now.begin() + static_cast<std::ptrdiff_t>(n),
                     open_now.begin() + static_cast<std::ptrdiff_t>(m));
        return;
      }
      const std::vector<float>& prior = options_.priors[agreement.prior];
      std::vector<float> score;
      for (std::size_t i : open_now) score.push_back(std::isnan(prior[i]) ? 2.0f : prior[i]);
      choose(open_now, score, count);
      return;
    }
    choose_by_model(open_now, count);
  }

  // The model's picks (see choose): its predictions, and its resamples', are of log time less the prior's
  // where one is followed (see offset).
  void choose_by_model(const std::vector<std::size_t>& open_now, std::size_t count) {
    const std::vector<float> x = rows_of(open_now);
    EnsembleInput input;
    input.full = &model_;
    input.full_x = rows_of(fit_rows_);
    input.full_y = fit_y_;
    input.resamples = draw_resamples();
    input.process = process_rows();
    input.rounds = options_.rounds;
    input.width = width_;
    EnsemblePredictions p = predict_ensemble(input, x);
    add_offsets(open_now, p.full);
    for (auto& r : p.resampled) add_offsets(open_now, r);
    choose(open_now, p.full, count, p.resampled, p.improvements);
  }

  // The prior's log time for candidate i (see GuidedOptions::prior_log_times), which the trees take for
  // their mean and learn what this problem adds to: 0 without one, or where the prior times fewer than half
  // of the candidates (a main job's partial sweep, which timed mostly where its own search went).
  float offset(std::size_t i) const {
    return prior_used_ < offsets_.size() && i < offsets_[prior_used_].size() ? offsets_[prior_used_][i]
                                                                             : 0.0f;
  }

  // A prior's offsets: its log times; where it failed, its slowest doubled; where it has none, its median.
  static std::vector<float> offsets_of(const std::vector<float>& log_times) {
    std::vector<float> known;
    for (float v : log_times)
      if (std::isfinite(v)) known.push_back(v);
    if (2 * known.size() < log_times.size()) return std::vector<float>(log_times.size(), 0.0f);
    std::sort(known.begin(), known.end());
    std::vector<float> out;
    for (float v : log_times)
      out.push_back(std::isfinite(v) ? v
                    : std::isnan(v)  ? known[known.size() / 2]
                                     : known.back() + static_cast<float>(std::log(2.0)));
    return out;
  }
  void add_offsets(const std::vector<std::size_t>& which, std::vector<float>& predicted) const {
    for (std::size_t j = 0; j < which.size(); ++j) predicted[j] += offset(which[j]);
  }

  // The prior's most promising open candidates that each bring a value of a parameter that none of the
  // measured ones has (nor an earlier pick), in the prior's order: where the prior's favourites all share
  // what makes them slow here, each of its other choices is measured once, so that the model sees them.
  void cover(const Times& times, const std::vector<std::size_t>& open_now, std::size_t count, std::size_t p) {
    if (open_now.empty()) return;
    const std::size_t columns = options_.plan_count > 0
                                    ? options_.plan_begin
                                    : features(open_now.front()).size() - options_.prior_columns;
    std::set<std::pair<std::size_t, float>> seen;
    for (std::size_t i = 0; i < times.size(); ++i)
      if (measured(times, i))
        for (std::size_t c = 0; c < columns; ++c)
          if (!std::isnan(features(i)[c])) seen.emplace(c, features(i)[c]);
    const std::vector<float>& prior = options_.priors[p];
    const auto score = [&](std::size_t i) { return std::isnan(prior[i]) ? 2.0f : prior[i]; };
    std::vector<std::size_t> order(open_now);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return score(a) < score(b); });
    for (std::size_t i : order) {
      if (batch_.size() >= count) break;
      bool brings = false;
      for (std::size_t c = 0; c < columns; ++c)  // a value it lacks (NaN) brings nothing
        brings = (!std::isnan(features(i)[c]) && seen.emplace(c, features(i)[c]).second) || brings;
      if (brings) batch_.push_back(i);
    }
  }

  // The consensus prior as its members' weighted mean, each weighed by its misfit (see
  // GuidedOptions::members); unchanged while any member has times for fewer than three measured points.
  void reweigh(const Times& times) {
    const std::size_t c = options_.consensus;
    if (c >= options_.priors.size() || options_.members.empty()) return;
    std::vector<double> weights;
    std::vector<const std::vector<float>*> members;
    for (std::size_t m : options_.members) {
      const std::optional<double> sd = misfit(times, m);
      if (!sd) return;
      weights.push_back(member_weight(*sd));
      members.push_back(&options_.prior_log_times[m]);
    }
    options_.prior_log_times[c] = weighted_log_consensus(members, weights);
    options_.priors[c] = unit_ranks(options_.prior_log_times[c]);
    offsets_[c] = offsets_of(options_.prior_log_times[c]);
  }
  bool member(std::size_t p) const {
    return std::count(options_.members.begin(), options_.members.end(), p) > 0;
  }

  struct Agreement {
    std::size_t prior = 0;         // the prior that agrees best
    double rho = INFINITY;         // its rank correlation with what was measured
    std::size_t points = 0;        // measured points with a rank in it
    std::optional<double> misfit;  // of its times to what was measured (see misfit); the start fills it in
  };

  // The prior whose order agrees best with the times measured so far (a failure ranks last); the first
  // while fewer than three measured points have a rank in each.
  Agreement agreeing_prior(const Times& times) const {
    Agreement best;
    for (std::size_t s = 0; s < options_.priors.size(); ++s) {
      if (member(s)) continue;  // it speaks through the consensus
      std::vector<double> measured_ms, prior;
      for (std::size_t i = 0; i < times.size(); ++i)
        if (timed(times, i) && !std::isnan(options_.priors[s][i])) {
          measured_ms.push_back(std::isfinite(*times[i]) ? *times[i] : INFINITY);
          prior.push_back(options_.priors[s][i]);
        }
      if (measured_ms.size() < 3) return {};
      const double rho = spearman(measured_ms, prior);
      if (s == 0 || rho > best.rho) best = {s, rho, measured_ms.size(), std::nullopt};
    }
    return best;
  }

  // Whether the earlier sweeps are unlike this problem (see GuidedOptions::least_agreement): the measured
  // times spread, and the prior that agrees best fits them badly where its times are known, or else orders
  // them unlike it.
  bool unlike(const Times& times, const Agreement& agreement) const {
    if (spread(times) <= options_.least_spread) return false;
    const std::optional<double>& m = agreement.misfit;
    return m ? *m > options_.most_misfit : agreement.rho < options_.least_agreement;
  }

  // The standard deviation of log(measured time) less the log time prior `p` gives, over the measured points
  // where both are finite; nullopt without the prior's times or with fewer than three such points.
  std::optional<double> misfit(const Times& times, std::size_t p) const {
    if (p >= options_.prior_log_times.size()) return std::nullopt;
    const std::vector<float>& prior = options_.prior_log_times[p];
    std::vector<double> r;
    for (std::size_t i = 0; i < times.size() && i < prior.size(); ++i)
      if (timed(times, i) && std::isfinite(*times[i]) && std::isfinite(prior[i]))
        r.push_back(std::log(*times[i]) - prior[i]);
    if (r.size() < 3) return std::nullopt;
    const double mean = std::accumulate(r.begin(), r.end(), 0.0) / static_cast<double>(r.size());
    double squares = 0;
    for (double v : r) squares += (v - mean) * (v - mean);
    return std::sqrt(squares / static_cast<double>(r.size() - 1));
  }

  // The slowest time measured over the fastest (failures left out; 1 with fewer than two).
  static double spread(const Times& times) {
    double lo = INFINITY, hi = 0;
    for (const auto& t : times)
      if (t && std::isfinite(*t)) lo = std::min(lo, *t), hi = std::max(hi, *t);
    return hi > lo ? hi / lo : 1.0;
  }

  // What made the earlier sweeps unlike this problem (see unlike), in words.
  static std::string unlike_because(const Agreement& agreement) {
    char text[96];
    const std::string measured = std::to_string(agreement.points) + " measured configurations";
    if (agreement.misfit) {
      std::snprintf(text, sizeof text, " (misfit %.2f in log time, rank correlation %.2f)", *agreement.misfit,
                    agreement.rho);
      return "time the " + measured + " unlike this problem" + text;
    }
    std::snprintf(text, sizeof text, " (rank correlation %.2f at best)", agreement.rho);
    return "order the " + measured + " unlike this problem" + text;
  }

  // No earlier sweep fits what was measured here (by its times, or where it has none, by its order): the
  // start ends here, and the model, which learns what this problem adds to the prior's times, picks from now
  // on (after one batch by cover).
  void turn_to_the_model(std::size_t done, const Agreement& agreement) {
    remark_ = "guided: the earlier sweeps " + unlike_because(agreement) + ": after " + std::to_string(done) +
              " measurements, their fastest with each parameter value not yet measured, then the model";
    misfit_ = true;
    options_.initial = done;
  }

  // The bootstrap resamples of the last fit's rows, one per model beside the full one, drawn before any is
  // fitted (the features of a space drawn lazily are made as they are first read, never on two threads).
  std::vector<Resample> draw_resamples() {
    std::vector<Resample> out;
    std::uniform_int_distribution<std::size_t> any(0, fit_rows_.size() - 1);
    for (std::size_t k = 0; k < options_.resamples; ++k) {
      std::vector<std::size_t> rows;
      Resample r;
      for (std::size_t j = 0; j < fit_rows_.size(); ++j) {
        const std::size_t pick = any(rng_);
        rows.push_back(fit_rows_[pick]);
        r.y.push_back(fit_y_[pick]);
      }
      r.x = rows_of(rows);
      r.seed = rng_();
      out.push_back(std::move(r));
    }
    return out;
  }

  // What the Gaussian process fits for its expected improvements (none where it picks nothing): the fastest
  // of the last fit's rows and their log times, the offsets the trees' targets leave out put back.
  std::optional<ProcessRows> process_rows() const {
    if (options_.improvement_picks == 0) return std::nullopt;
    std::vector<float> target(fit_y_);
    for (std::size_t j = 0; j < target.size(); ++j) target[j] += offset(fit_rows_[j]);
    std::vector<std::size_t> which(fit_rows_.size());
    std::iota(which.begin(), which.end(), 0);
    std::stable_sort(which.begin(), which.end(),
                     [&](std::size_t a, std::size_t b) { return target[a] < target[b]; });
    which.resize(std::min(which.size(), kProcessRows));
    ProcessRows out;
    std::vector<std::size_t> rows;
    for (std::size_t j : which) rows.push_back(fit_rows_[j]), out.y.push_back(target[j]);
    out.x = rows_of(rows);
    return out;
  }

  // The `count` picks, the most promising first: the highest expected improvements (improvement_picks), the
  // lowest scores (up to half of a full batch), then in turn the lowest not yet chosen of each resample's
  // predictions, but a share drawn at random.
  void choose(const std::vector<std::size_t>& open_now, const std::vector<float>& score, std::size_t count,
              const std::vector<std::vector<float>>& resampled = {}, const std::vector<double>& ei = {}) {
    std::vector<std::size_t> order = ranked(score);
    const auto explore = static_cast<std::size_t>(std::floor(options_.explore * static_cast<double>(count)));
    std::vector<bool> chosen(open_now.size());
    std::vector<std::size_t> picks;
    const auto take = [&](std::size_t j) {
      if (!chosen[j]) chosen[j] = true, picks.push_back(j);
    };
    while (!ei.empty() && picks.size() < std::min({options_.improvement_picks, count, open_now.size()}))
      take(highest(ei, chosen));
    for (std::size_t j = 0, k = 0; picks.size() < order.size() && picks.size() + explore < count; ++k)
      if (picks.size() < full_picks_ || resampled.empty())
        take(order[j++]);
      else
        take(lowest(resampled[k % resampled.size()], chosen));
    for (std::size_t j = 0; j < open_now.size() && picks.size() < count; ++j) take(j);
    for (std::size_t j : picks) batch_.push_back(open_now[j]);
    for (std::size_t j = 0; j < order.size() && tail_.size() < ahead_; ++j)
      if (!chosen[order[j]]) tail_.push_back(open_now[order[j]]);
  }

  static std::vector<std::size_t> ranked(const std::vector<float>& score) {
    std::vector<std::size_t> order(score.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
    return order;
  }

  // The value not yet chosen that `before` puts first (the first on ties, as the shuffle left them); its
  // callers stop before all are chosen.
  template <typename T, typename Before>
  static std::size_t first_unchosen(const std::vector<T>& values, const std::vector<bool>& chosen,
                                    Before before) {
    std::size_t best = values.size();
    for (std::size_t j = 0; j < values.size(); ++j)
      if (!chosen[j] && (best == values.size() || before(values[j], values[best]))) best = j;
    return best;
  }
  static std::size_t highest(const std::vector<double>& values, const std::vector<bool>& chosen) {
    return first_unchosen(values, chosen, std::greater<>());
  }
  static std::size_t lowest(const std::vector<float>& score, const std::vector<bool>& chosen) {
    return first_unchosen(score, chosen, std::less<>());
  }

  // What the model fits (choose_by_model fits it, beside its resamples): log time over what was measured (not
  // what another GPU is measuring); a failure counts as twice the slowest time seen, so that the model steers
  // away from it. False when nothing ran yet.
  bool fit(const Times& times) {
    std::vector<std::size_t> rows;
    double worst = -INFINITY;
    for (std::size_t i = 0; i < times.size(); ++i)
      if (timed(times, i)) {
        rows.push_back(i);
        if (std::isfinite(*times[i])) worst = std::max(worst, std::log(*times[i]));
      }
    if (!std::isfinite(worst)) return false;
    std::vector<float> y;
    for (std::size_t i : rows)
      y.push_back(static_cast<float>(std::isfinite(*times[i]) ? std::log(*times[i]) : worst + std::log(2.0)));
    fit_rows_ = std::move(rows);
    fit_y_ = std::move(y);
    if (!options_.priors.empty()) prior_used_ = agreeing_prior(times).prior;
    for (std::size_t j = 0; j < fit_rows_.size(); ++j) fit_y_[j] -= offset(fit_rows_[j]);
    width_ = features(fit_rows_.front()).size() - (plan_hidden() ? options_.plan_count : 0);
    return true;
  }

  // Whether the model leaves the plan features out: the last fit learnt from fewer than
  // GuidedOptions::plan_after measurements.
  bool plan_hidden() const { return options_.plan_count > 0 && fit_rows_.size() < options_.plan_after; }

  // The rows the model sees, one after the other: each candidate's features, less the plan features while
  // they are hidden.
  std::vector<float> rows_of(const std::vector<std::size_t>& which) const {
    std::vector<float> x;
    x.reserve(which.size() * width_);
    for (std::size_t i : which) {
      const std::vector<float>& f = features(i);
      if (!plan_hidden()) {
        x.insert(x.end(), f.begin(), f.end());
        continue;
      }
      const auto plan = f.begin() + static_cast<std::ptrdiff_t>(options_.plan_begin);
      x.insert(x.end(), f.begin(), plan);
      x.insert(x.end(), plan + static_cast<std::ptrdiff_t>(options_.plan_count), f.end());
    }
    return x;
  }

  // Spaces this small are searched one pick per fit; a main job measures them whole (auto's budget is 130).
  // By replay, batches of a 64th of the space (one to eight) also took fewer evaluations on spaces of 232 to
  // 498 configurations, but cost a main job on one H200 10% more time (the sweeps it changed 40% more).
  static constexpr std::size_t kOnePickBelow = 128;
  std::size_t budget_;
  GuidedOptions options_;
  BoostedTrees model_;
  static constexpr std::size_t kProcessRows = 256;  // the fastest measurements the Gaussian process fits
  std::size_t width_ = 0;
  std::vector<std::size_t> batch_;
  std::vector<std::size_t> tail_;      // the most promising after the batch, as the last fit ranked them
  std::size_t ahead_ = 0;              // the tail's length: options_.ahead, or what the budget leaves
  std::size_t first_pos_ = 0;          // how far options_.first was dealt
  std::vector<std::size_t> fit_rows_;  // what the last fit learnt from, for its resamples and plan_hidden()
  std::vector<float> fit_y_;
  std::size_t random_start_ = 4;             // a start's length without transfer
  bool misfit_ = false;                      // the earlier sweeps were found unlike this problem
  std::string remark_;                       // saying so, once they were
  std::size_t prior_used_ = 0;               // the prior whose times the last fit's offsets are (see offset)
  std::vector<std::vector<float>> offsets_;  // per prior, per candidate (see offset)
  std::size_t full_picks_ = 1;  // a batch's picks by the full model before the resamples take turns
  std::function<bool(std::size_t)> compiled_;  // the sweep's probe: candidate i's CUBIN is ready
  std::size_t proposed_at_ = 0;                // measurements done when the batch was last proposed
};

// Over an enumerated space: every unmeasured candidate is ranked.
class TableGuided : public GuidedStrategy {
 public:
  TableGuided(std::vector<std::vector<float>> rows, std::size_t budget, std::uint64_t seed,
              const GuidedOptions& options)
      : GuidedStrategy(budget ? std::min(budget, rows.size()) : rows.size(), rows.size(), seed, options),
        rows_(std::move(rows)) {}

  std::vector<std::size_t> likely_order() const override {
    std::vector<std::size_t> all(rows_.size());
    std::iota(all.begin(), all.end(), 0);
    return all;
  }

 protected:
  std::vector<std::size_t> open(const Times& times) override {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < rows_.size(); ++i)
      if (!measured(times, i)) out.push_back(i);
    return out;
  }
  const std::vector<float>& features(std::size_t slot) const override { return rows_[slot]; }

 private:
  std::vector<std::vector<float>> rows_;
};

// Over a space too large to enumerate: a pool of runnable points drawn in a seeded shuffled order (pruned as
// they come), topped up as it is measured, is ranked. (Adding the neighbours of the fastest points made it
// a hill climb of one step at a time, slower than ranking fresh draws.)
class LazyGuided : public GuidedStrategy {
 public:
  static constexpr std::size_t kPool = 2048;  // unmeasured drawn points ranked at each fit

  LazyGuided(LazyCandidates& space, std::size_t budget, std::uint64_t seed, const GuidedOptions& options)
      : GuidedStrategy(budget, kPool, seed, options), space_(space), draws_(space.space().size(), seed) {}

  std::vector<std::size_t> likely_order() const override { return {}; }
  std::string stop_reason() const override {
    return gave_up_
               ? "gave up: " + std::to_string(kMaxFruitlessDraws) + " draws in a row found nothing runnable"
               : std::string();
  }

 protected:
  std::vector<std::size_t> open(const Times& times) override {
    std::size_t unmeasured = 0;
    for (std::size_t i = 0; i < space_.candidates().size(); ++i) unmeasured += !measured(times, i);
    while (unmeasured < kPool && draw()) ++unmeasured;
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < space_.candidates().size(); ++i)
      if (!measured(times, i)) out.push_back(i);
    return out;
  }

  const std::vector<float>& features(std::size_t slot) const override {
    while (rows_.size() <= slot) {
      std::vector<float> row;
      for (const auto& [name, v] : space_.candidates()[rows_.size()].params)
        row.push_back(parameter_feature(v));
      rows_.push_back(std::move(row));
    }
    return rows_[slot];
  }

 private:
  // Draws until a runnable point joins; false when the space is spent or the draws gave up.
  bool draw() {
    while (!gave_up_ && pos_ < draws_.size()) {
      const std::uint64_t index = draws_[pos_++];
      const auto v = space_.visit(index, /*remember=*/false);
      if (v.fate == LazyCandidates::Fate::runnable) return fruitless_ = 0, true;
      if (v.fate == LazyCandidates::Fate::pruned && ++fruitless_ >= kMaxFruitlessDraws) gave_up_ = true;
    }
    return false;
  }

  LazyCandidates& space_;
  IndexShuffle draws_;
  std::uint64_t pos_ = 0, fruitless_ = 0;
  bool gave_up_ = false;
  mutable std::vector<std::vector<float>> rows_;  // each slot's features, made when first needed
};

}  // namespace

std::unique_ptr<Strategy> make_guided_strategy(std::vector<std::vector<float>> features, std::size_t budget,
                                               std::uint64_t seed, const GuidedOptions& options) {
  return std::make_unique<TableGuided>(std::move(features), budget, seed, options);
}

std::unique_ptr<Strategy> make_lazy_guided_strategy(LazyCandidates& space, std::size_t budget,
                                                    std::uint64_t seed, const GuidedOptions& options) {
  return std::make_unique<LazyGuided>(space, budget, seed, options);
}

}  // namespace tiletune
