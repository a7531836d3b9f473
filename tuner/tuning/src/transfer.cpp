#include "tiletune/transfer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "tiletune/store.hpp"

namespace tiletune {

namespace {

// The sweep's results; nullopt where none is ok.
std::optional<PriorSweep> prior_of(const Store& store, const SweepInfo& info, std::string label) {
  PriorSweep p;
  p.label = std::move(label);
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
    for (auto& [params, median] : sweep.results) {
      Params p = conformed(params, family);
      const auto [it, fresh] = at.emplace(params_to_text(p), results.size());
      if (fresh)
        results.emplace_back(std::move(p), median);
      else if (better(median, results[it->second].second))
        results[it->second].second = median;
    }
    sweep.results = std::move(results);
  }
  return prior;
}

namespace {

// Each configuration's rank within one sweep: 0 the fastest, 1 the slowest ok one or any failure.
std::map<std::string, double> ranks_of(const PriorSweep& sweep) {
  std::vector<std::pair<double, std::string>> ok;
  std::map<std::string, double> rank;
  for (const auto& [params, median] : sweep.results) {
    if (median)
      ok.emplace_back(*median, params_to_text(params));
    else
      rank[params_to_text(params)] = 1.0;
  }
  std::sort(ok.begin(), ok.end());
  for (std::size_t i = 0; i < ok.size(); ++i)
    rank[ok[i].second] = ok.size() > 1 ? static_cast<double>(i) / static_cast<double>(ok.size() - 1) : 0.0;
  return rank;
}

// "guided: transfer from 2 sweeps of this family (LABEL; LABEL)": the start of the line that says so.
std::string transfer_head(const std::vector<PriorSweep>& prior) {
  const auto siblings =
      std::count_if(prior.begin(), prior.end(), [](const PriorSweep& p) { return p.sibling; });
  const std::string whose = siblings == 0 ? "this family"
                            : siblings == static_cast<std::ptrdiff_t>(prior.size())
                                ? "sibling families"
                                : "this family and siblings";
  std::string line = "guided: transfer from " + std::to_string(prior.size()) + " sweep" +
                     (prior.size() > 1 ? "s" : "") + " of " + whose + " (";
  for (std::size_t s = 0; s < prior.size(); ++s) line += (s ? "; " : "") + prior[s].label;
  return line + ")";
}

}  // namespace

Transfer transfer_from(const std::vector<PriorSweep>& prior, const std::vector<Params>& candidates,
                       std::size_t first_per_sweep) {
  Transfer t;
  if (prior.empty()) return t;
  std::map<std::string, std::size_t> slot;
  for (std::size_t i = 0; i < candidates.size(); ++i) slot[params_to_text(candidates[i])] = i;
  std::vector<std::vector<std::size_t>> fastest(prior.size());
  for (std::size_t s = 0; s < prior.size(); ++s) {
    std::vector<float> rank(candidates.size(), NAN);
    std::vector<std::pair<double, std::size_t>> order;
    for (const auto& [text, r] : ranks_of(prior[s]))
      if (const auto it = slot.find(text); it != slot.end()) {
        rank[it->second] = static_cast<float>(r);
        order.emplace_back(r, it->second);
      }
    std::sort(order.begin(), order.end());
    for (std::size_t j = 0; j < std::min(first_per_sweep, order.size()); ++j)
      fastest[s].push_back(order[j].second);
    t.ranks.push_back(std::move(rank));
  }
  for (std::size_t j = 0; j < first_per_sweep; ++j)  // each sweep's best, then each one's second, ...
    for (const auto& f : fastest)
      if (j < f.size() && std::find(t.first.begin(), t.first.end(), f[j]) == t.first.end())
        t.first.push_back(f[j]);
  if (t.first.empty()) return {};  // none of their configurations is one of these: nothing to say
  t.line = transfer_head(prior) + ": their " + std::to_string(t.first.size()) +
           " fastest first, then the rank order of " +
           (prior.size() > 1 ? "the one that agrees best with what is measured" : "it");
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
  for (const auto& rank : transfer.ranks)
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i].push_back(rank[i]);
  guided.first = std::move(transfer.first);
  guided.priors = std::move(transfer.ranks);
}

}  // namespace tiletune
