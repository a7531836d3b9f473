#include "tiletune/transfer.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <set>
#include <utility>

#include "tiletune/store.hpp"
#include "weighted_consensus.hpp"

namespace tiletune {

namespace {

// The sweep's results; nullopt where none is ok.
std::optional<PriorSweep> prior_of(const Store& store, const SweepInfo& info, std::string label) {
  PriorSweep p;
  p.label = std::move(label);
  p.sms = info.device.sm_count;
  p.problem = info.problem;
  bool any_ok = false;
  for (const auto& r : store.measured_results(info.id)) {
    any_ok = any_ok || r.record.outcome == Outcome::ok;
    p.results.emplace_back(r.record.params,
                           r.record.outcome == Outcome::ok ? r.record.median_ms : std::nullopt);
  }
  if (!any_ok) return std::nullopt;
  return p;
}

}  // namespace

std::vector<PriorSweep> prior_sweeps(const Store& store, const std::string& family, std::int64_t exclude,
                                     std::size_t limit) {
  std::vector<PriorSweep> out;
  for (const auto& info : store.sweeps(family)) {
    if (out.size() >= limit) break;
    if (info.id == exclude || info.kind != "sweep") continue;
    if (auto p = prior_of(store, info, info.problem.size_text() + " on " + info.device.name))
      out.push_back(std::move(*p));
  }
  return out;
}

std::vector<PriorSweep> sibling_sweeps(const Store& store, const std::vector<std::string>& siblings,
                                       const ProblemKey& problem, std::size_t limit) {
  std::vector<PriorSweep> out;
  for (const auto& sibling : siblings) {
    if (out.size() >= limit) break;
    for (const auto& info : store.sweeps(sibling, "", problem)) {
      if (info.kind != "sweep") continue;
      auto p = prior_of(store, info, sibling + " at " + info.problem.text() + " on " + info.device.name);
      if (!p) continue;
      p->sibling = true;
      out.push_back(std::move(*p));
      break;  // the newest of each sibling
    }
  }
  return out;
}

namespace {

// One result in the family's terms (see conform).
Params conformed(const Params& params, const KernelFamily& family) {
  Params out = family.default_params();
  for (auto& [name, value] : out)
    if (const auto it = params.find(name); it != params.end()) value = it->second;
  return out;
}

// Whether result `a` stands for a configuration rather than `b`: ok before failed, then the faster.
bool better(const std::optional<double>& a, const std::optional<double>& b) { return a && (!b || *a < *b); }

}  // namespace

std::vector<PriorSweep> conform(std::vector<PriorSweep> prior, const KernelFamily& family) {
  for (auto& sweep : prior) {
    std::map<std::string, std::size_t> at;
    std::vector<std::pair<Params, std::optional<double>>> results;
    std::vector<GridOf> grids;
    for (std::size_t r = 0; r < sweep.results.size(); ++r) {
      auto& [params, median] = sweep.results[r];
      Params p = conformed(params, family);
      const auto [it, fresh] = at.emplace(params_to_text(p), results.size());
      const GridOf grid = r < sweep.grids.size() ? sweep.grids[r] : GridOf{};
      if (fresh) {
        results.emplace_back(std::move(p), median);
        grids.push_back(grid);
      } else if (better(median, results[it->second].second)) {
        results[it->second].second = median;
        grids[it->second] = grid;
      }
    }
    sweep.results = std::move(results);
    if (!sweep.grids.empty()) sweep.grids = std::move(grids);
  }
  return prior;
}

void add_grids(std::vector<PriorSweep>& prior, const KernelFamily& family, const DeviceLimits& device) {
  for (auto& sweep : prior) {
    if (!sweep.problem || sweep.sms <= 0) continue;
    DeviceLimits there = device;
    there.sm_count = sweep.sms;
    sweep.grids.clear();
    for (const auto& [params, median] : sweep.results) {
      GridOf grid;  // unknown: that result's time is not scaled
      try {
        const PlannedConfig c = prune_before_compile(family, there, *sweep.problem, params);
        if (c.outcome == Outcome::ok) grid = planned_grid(c, there);
      } catch (const std::exception&) {  // a problem the family no longer plans (its dims changed)
      }
      sweep.grids.push_back(grid);
    }
  }
}

GridOf planned_grid(const PlannedConfig& c, const DeviceLimits& device) {
  const LaunchGeometry& l = c.launch;
  const auto blocks = static_cast<double>(l.blocks());
  return {blocks, resident_warps(blocks, device.sm_count, static_cast<double>(l.threads()),
                                 occupancy_before_compile(l, device).active_blocks)};
}

double resident_warps(double blocks, int sms, double threads, double per_sm) {
  if (blocks <= 0 || sms <= 0 || threads <= 0 || per_sm <= 0) return 0;
  return std::min(per_sm, std::ceil(blocks / sms - 1e-9)) * std::ceil(threads / 32);
}

double latency_scale(double from_warps, double to_warps) {
  if (from_warps <= 0 || to_warps <= 0) return 1.0;
  return std::max(1.0, std::max(1.0, kLatencyWarps / to_warps) / std::max(1.0, kLatencyWarps / from_warps));
}

double wave_scale(double from_blocks, int from_sms, double to_blocks, int to_sms) {
  if (from_blocks <= 0 || to_blocks <= 0 || from_sms <= 0 || to_sms <= 0) return 1.0;
  const auto per_block = [](double blocks, int sms) { return std::ceil(blocks / sms - 1e-9) / blocks; };
  return per_block(to_blocks, to_sms) / per_block(from_blocks, from_sms);
}

namespace {

// One sweep's time for each candidate as this problem would see it: NaN where it has none, +inf where it
// failed, scaled by wave_scale where both grids are known; and whether any time was scaled (none is where
// the sweep measured this problem, or its grids are not known).
struct TimesHere {
  std::vector<double> times;
  bool scaled = false;
};
TimesHere times_here(const PriorSweep& sweep, const std::map<std::string, std::size_t>& slot,
                     const GridWaves& waves) {
  TimesHere out{std::vector<double>(slot.size(), NAN)};
  for (std::size_t r = 0; r < sweep.results.size(); ++r) {
    const auto it = slot.find(params_to_text(sweep.results[r].first));
    if (it == slot.end()) continue;
    const std::size_t i = it->second;
    const auto& median = sweep.results[r].second;
    if (!median) {
      out.times[i] = INFINITY;
      continue;
    }
    const GridOf from = r < sweep.grids.size() ? sweep.grids[r] : GridOf{};
    const GridOf to = i < waves.grids.size() ? waves.grids[i] : GridOf{};
    // An unknown grid (GridOf{}: no blocks, no warps) leaves its time unscaled.
    const double scale =
        wave_scale(from.blocks, sweep.sms, to.blocks, waves.sms) * latency_scale(from.warps, to.warps);
    out.scaled = out.scaled || scale != 1.0;
    out.times[i] = *median * scale;
  }
  return out;
}

// The sweeps' consensus: per candidate, the geometric mean of the times of the sweeps that have one, each
// sweep's times over its own fastest (+inf where any of them failed; NaN where none has it). Over its
// fastest, because a main job's earlier sweeps are partial (guided: 130 of thousands) and hold mostly
// different candidates, and a smaller problem's times are all shorter: averaged as they are, what only the
// smallest problem's sweep measured would come first. Each partial sweep holds its fastest, so those stand
// level with each other.
// A sweep's times over its own fastest (as they are where none ran: its failures stay +inf).
std::vector<double> over_fastest(std::vector<double> times) {
  double fastest = INFINITY;
  for (double v : times)
    if (std::isfinite(v)) fastest = std::min(fastest, v);
  if (std::isfinite(fastest))
    for (double& v : times) v /= fastest;
  return times;
}

std::vector<double> consensus(const std::vector<std::vector<double>>& times) {
  const std::size_t n = times.front().size();
  std::vector<double> sum(n, 0.0), count(n, 0.0);
  for (const auto& sweep : times) {
    const std::vector<double> t = over_fastest(sweep);
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isnan(t[i])) sum[i] += std::log(t[i]), ++count[i];
  }
  std::vector<double> out(n, NAN);
  for (std::size_t i = 0; i < n; ++i)
    if (count[i] > 0) out[i] = std::exp(sum[i] / count[i]);
  return out;
}

// The `count` candidates with the least finite times, the least first.
std::vector<std::size_t> fastest_of(const std::vector<double>& times, std::size_t count) {
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t i = 0; i < times.size(); ++i)
    if (std::isfinite(times[i])) order.emplace_back(times[i], i);
  std::sort(order.begin(), order.end());
  std::vector<std::size_t> out;
  for (std::size_t j = 0; j < std::min(count, order.size()); ++j) out.push_back(order[j].second);
  return out;
}

// Appends to `first` each list's first, then each one's second, ... up to `count` each, none twice.
void add_in_turn(const std::vector<std::vector<std::size_t>>& lists, std::size_t count,
                 std::vector<std::size_t>& first) {
  for (std::size_t j = 0; j < count; ++j)
    for (const auto& f : lists)
      if (j < f.size() && std::find(first.begin(), first.end(), f[j]) == first.end()) first.push_back(f[j]);
}

// The log of each time (+inf and NaN stay).
std::vector<float> logs_of(const std::vector<double>& times) {
  std::vector<float> out;
  for (double t : times) out.push_back(static_cast<float>(std::isfinite(t) ? std::log(t) : t));
  return out;
}

// "guided: transfer from 2 sweeps of this family (LABEL; LABEL)": the start of the line that says so
// (`verb` "no transfer" where none is followed).
std::string transfer_head(const std::vector<PriorSweep>& prior, const std::string& verb = "transfer") {
  const auto siblings =
      std::count_if(prior.begin(), prior.end(), [](const PriorSweep& p) { return p.sibling; });
  const std::string whose = siblings == 0 ? "this family"
                            : siblings == static_cast<std::ptrdiff_t>(prior.size())
                                ? "sibling families"
                                : "this family and siblings";
  std::string line = "guided: " + verb + " from " + std::to_string(prior.size()) + " sweep" +
                     (prior.size() > 1 ? "s" : "") + " of " + whose + " (";
  for (std::size_t s = 0; s < prior.size(); ++s) line += (s ? "; " : "") + prior[s].label;
  return line + ")";
}

// Whether a sweep's times cover fewer than half of the candidates: a partial sweep (guided's 130 of
// thousands), whose order is known mostly where its own search went.
template <typename T>
bool sparse(const std::vector<T>& times) {
  const auto known = std::count_if(times.begin(), times.end(), [](T v) { return !std::isnan(v); });
  return 2 * static_cast<std::size_t>(known) < times.size();
}

// Each scaled sweep's own prior, after the others, as a member of the consensus (the last prior so far; see
// Transfer::members): its log times over its own fastest, as the consensus weighs them.
void add_members(const std::vector<std::vector<double>>& scaled, Transfer& t) {
  t.consensus = t.ranks.size() - 1;
  for (const auto& one : scaled) {
    t.members.push_back(t.ranks.size());
    t.log_times.push_back(logs_of(over_fastest(one)));
    t.ranks.push_back(unit_ranks(t.log_times.back()));
  }
}

// Whether a result has a time: it ran, and its time is a number (a NaN, which no store or space file
// gives, is no time).
bool has_time(const std::optional<double>& median) { return median && !std::isnan(*median); }

// Whether any of a sweep's `count` fastest configurations (by its own times) is one of the candidates here.
// Where none is, the sweep's problem lies in another regime: `conv1d_register`'s MAX_MASK bounds the mask
// it is compiled for, so the fastest at mask 5 (MAX_MASK 7 to 31) cannot run at mask 63, and what can run
// at both (MAX_MASK 63) is slow at mask 5. Followed, such sweeps ordered the start by the wrong regime: by
// replay of a main job's sweeps, mask 63 took 30 evaluations to within 1% from masks 3, 5 and 31 against 9
// on its own, and `conv2d_tiled` mask 15 from masks 3, 5 and 9 32 against 26. Ties go by the configurations'
// text, so that the answer does not hang on the order of the results.
// Only the results no slower than the `count`-th fastest are put in words.
bool fastest_run_here(const PriorSweep& sweep, const std::map<std::string, std::size_t>& slot,
                      std::size_t count) {
  std::vector<double> times;
  for (const auto& r : sweep.results)
    if (has_time(r.second)) times.push_back(*r.second);
  if (times.empty() || count == 0) return false;
  const std::size_t n = std::min(count, times.size());
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(n - 1), times.end());
  const double cut = times[n - 1];
  std::vector<std::pair<double, std::string>> ok;
  for (const auto& [params, median] : sweep.results)
    if (median && *median <= cut) ok.emplace_back(*median, params_to_text(params));
  std::partial_sort(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(n), ok.end());
  return std::any_of(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(n),
                     [&](const auto& r) { return slot.count(r.second) > 0; });
}

// The sweeps some of whose `count` fastest configurations run here (see fastest_run_here): `all` itself where
// every one does (the common case, copied nowhere), else those copied into `kept`.
const std::vector<PriorSweep>& in_this_regime(const std::vector<PriorSweep>& all,
                                              const std::map<std::string, std::size_t>& slot,
                                              std::size_t count, std::vector<PriorSweep>& kept) {
  std::vector<bool> here;
  for (const auto& sweep : all) here.push_back(fastest_run_here(sweep, slot, count));
  if (std::all_of(here.begin(), here.end(), [](bool h) { return h; })) return all;
  for (std::size_t s = 0; s < all.size(); ++s)
    if (here[s]) kept.push_back(all[s]);
  return kept;
}

// Whether any configuration the sweeps ran (a result with a time) is one of the candidates here.
bool any_runs_here(const std::vector<PriorSweep>& prior, const std::map<std::string, std::size_t>& slot) {
  for (const auto& sweep : prior)
    for (const auto& [params, median] : sweep.results)
      if (has_time(median) && slot.count(params_to_text(params)) > 0) return true;
  return false;
}

// "guided: no transfer from 3 sweeps of this family (LABEL; ...): none of their 3 fastest configurations
// runs on this problem".
std::string no_transfer_line(const std::vector<PriorSweep>& prior, std::size_t count) {
  return transfer_head(prior, "no transfer") + ": none of their " + std::to_string(count) +
         " fastest configurations runs on this problem, so the search starts on its own";
}

// "guided: transfer from ...: their 9 fastest first, then the rank order of it (times scaled ...)": what the
// start follows, given `scaled` sweeps whose times were scaled (`lone_partial`: one, too sparse to order).
std::string follow_line(const std::vector<PriorSweep>& prior, const Transfer& t, std::size_t scaled,
                        bool lone_partial) {
  const std::string scaling = scaled == 0 || lone_partial ? ""  // no scaled order is followed
                              : scaled > 1
                                  ? " (times scaled to this problem's waves of blocks, their consensus)"
                                  : " (times scaled to this problem's waves of blocks)";
  return transfer_head(prior) + ": their " + std::to_string(t.first.size()) + " fastest first, then " +
         (t.ranks.empty()      ? "a search of its own (one partial sweep of another problem orders little "
                                 "beyond its fastest)"
          : t.ranks.size() > 1 ? "the rank order of the one that agrees best with what is measured" + scaling
                               : "the rank order of it" + scaling);
}

}  // namespace

Transfer transfer_from(const std::vector<PriorSweep>& all, const std::vector<Params>& candidates,
                       std::size_t first_per_sweep, const GridWaves& waves) {
  Transfer t;
  if (all.empty()) return t;
  std::map<std::string, std::size_t> slot;
  for (std::size_t i = 0; i < candidates.size(); ++i) slot[params_to_text(candidates[i])] = i;
  std::vector<PriorSweep> kept;
  const std::vector<PriorSweep>& prior = in_this_regime(all, slot, first_per_sweep, kept);
  if (prior.empty()) {  // silent where none of their configurations is one of these
    if (any_runs_here(all, slot)) t.line = no_transfer_line(all, first_per_sweep);
    return t;
  }
  // A sweep of this problem (a sibling's, or on another GPU with as many SMs) speaks for itself, first, as
  // does one whose grids are not known; the sweeps whose times were scaled from other problems speak as one,
  // their consensus, after them.
  std::vector<std::vector<double>> times, scaled;
  for (const auto& sweep : prior) {
    TimesHere here = times_here(sweep, slot, waves);
    (here.scaled ? scaled : times).push_back(std::move(here.times));
  }
  if (!scaled.empty()) times.push_back(scaled.size() > 1 ? consensus(scaled) : scaled.front());
  // A lone partial sweep of another problem gives its first picks only (see Transfer::ranks).
  const bool lone_partial = scaled.size() == 1 && sparse(times.back());
  std::vector<std::vector<std::size_t>> fastest;
  for (std::size_t p = 0; p < times.size(); ++p) {
    fastest.push_back(fastest_of(times[p], first_per_sweep));
    if (lone_partial && p + 1 == times.size()) continue;
    t.log_times.push_back(logs_of(times[p]));
    t.ranks.push_back(unit_ranks(t.log_times.back()));
  }
  if (scaled.size() > 1) add_members(scaled, t);
  add_in_turn(fastest, first_per_sweep, t.first);
  // Then each scaled sweep's own fastest, in turn: a consensus of sizes far apart can bury the best of the
  // nearest (8192^3 from 4096^3, 2000^3 and 1000^3).
  std::vector<std::vector<std::size_t>> own;
  for (const auto& one : scaled)
    if (scaled.size() > 1) own.push_back(fastest_of(one, first_per_sweep));
  add_in_turn(own, first_per_sweep, t.first);
  // A kept sweep's fastest runs here, so `first` holds it; but a sweep not conformed may hold a configuration
  // twice, the later a failure, and then nothing is said.
  if (t.first.empty()) return {};
  t.line = follow_line(prior, t, scaled.size(), lone_partial);
  return t;
}

std::string lazy_transfer(const std::vector<PriorSweep>& prior, LazyCandidates& space, GuidedOptions& guided,
                          std::size_t first_per_sweep) {
  std::vector<Params> measured;
  std::set<std::string> seen;
  for (const auto& p : prior)
    for (const auto& [params, median] : p.results)
      if (seen.insert(params_to_text(params)).second) measured.push_back(params);
  for (std::size_t i : transfer_from(prior, measured, first_per_sweep).first) {
    const auto index = space.space().index_of(measured[i]);
    if (!index) continue;  // a value the family no longer lists
    const LazyCandidates::Visit v = space.visit(*index);
    if (v.fate == LazyCandidates::Fate::runnable) guided.first.push_back(v.slot);
  }
  if (guided.first.empty()) return "";
  return transfer_head(prior) + ": their " + std::to_string(guided.first.size()) +
         " fastest that run here first (a space walked lazily has no rank order to follow)";
}

void use_transfer(Transfer transfer, std::vector<std::vector<float>>& rows, GuidedOptions& guided) {
  guided.prior_columns = 0;
  for (std::size_t p = 0; p < transfer.ranks.size(); ++p) {
    const auto& rank = transfer.ranks[p];
    const bool member = std::count(transfer.members.begin(), transfer.members.end(), p) > 0;
    if (member || sparse(rank)) continue;  // a member speaks through the consensus
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i].push_back(rank[i]);
    ++guided.prior_columns;
  }
  guided.consensus = transfer.consensus;
  guided.members = std::move(transfer.members);
  guided.first = std::move(transfer.first);
  guided.priors = std::move(transfer.ranks);
  guided.prior_log_times = std::move(transfer.log_times);
}

}  // namespace tiletune
