#include <algorithm>
#include <iostream>

#include "cli.hpp"
#include "tiletune/store.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune::cli {

namespace {

// "best so far: #1 0.9 ms (0.2 s) -> #7 0.5 ms (1.4 s) -> ...": the first points and the last, at most 12.
void print_best_so_far(const std::vector<BestSoFarPoint>& curve) {
  if (curve.empty()) return;
  constexpr std::size_t kShown = 12;
  std::cout << "best so far:";
  for (std::size_t i = 0; i < curve.size(); ++i) {
    if (curve.size() > kShown && i == kShown / 2) {
      std::cout << " -> ... (" << curve.size() - kShown << " more)";
      i = curve.size() - kShown / 2;
    }
    const BestSoFarPoint& p = curve[i];
    std::cout << (i ? " -> #" : " #") << p.measurement << " " << fmt(p.median_ms, 4) << " ms ("
              << fmt(p.seconds, 1) << " s)";
  }
  std::cout << "\n";
}

void add_show_options(po::options_description& desc, std::int64_t& sweep_id, std::string& device,
                      int& limit) {
  desc.add_options()("sweep", po::value(&sweep_id),
                     "sweep id (default: the newest matching --family/--size/--device)")(
      "device", po::value(&device), "device name filter")("limit,n", po::value(&limit)->default_value(limit),
                                                          "rows to show (0: all)")(
      "list", "list the stored sweeps instead");
}

void print_sweep_list(const std::vector<SweepInfo>& sweeps) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : sweeps)
    rows.push_back({std::to_string(s.id), s.kind, s.family, s.problem.text(), s.device.name, s.status,
                    std::to_string(s.result_count), s.started_at});
  print_table(std::cout, {"id", "kind", "family", "problem", "device", "status", "results", "started"}, rows);
}

// --sweep ID, else the newest sweep the filters select; neither is an error naming the database.
SweepInfo sweep_to_show(const Store& store, const Common& c, const std::string& device,
                        const std::optional<ProblemKey>& problem, std::int64_t sweep_id) {
  std::optional<SweepInfo> sweep;
  if (sweep_id)
    sweep = store.sweep(sweep_id);
  else {
    auto all = store.sweeps(c.family, device, problem);
    if (!all.empty()) sweep = all.front();
  }
  if (!sweep)
    throw std::runtime_error("no matching sweep in " + c.db +
                             (sweep_id ? " (id " + std::to_string(sweep_id) + ")" : ""));
  return *sweep;
}

void print_sweep_head(const SweepInfo& sweep) {
  std::cout << "sweep " << sweep.id << " (" << sweep.kind << ", " << sweep.status << "): " << sweep.family
            << " at " << sweep.problem.text() << " on " << sweep.device.name << ", started "
            << sweep.started_at << (sweep.ended_at.empty() ? "" : ", ended " + sweep.ended_at) << "\n";
  if (sweep.best_found_count)
    std::cout << "best found at measurement " << *sweep.best_found_count << ", after "
              << fmt(sweep.best_found_seconds.value_or(0), 1) << " s (" << sweep.strategy << ")\n";
}

std::vector<std::string> result_row(int n, const ResultRecord& x) {
  return {std::to_string(n),
          params_to_text(x.params),
          std::string(to_string(x.outcome)),
          fmt(x.median_ms, 4),
          x.spread ? fmt(100 * *x.spread, 1) + "%" : "-",
          x.metric ? fmt(*x.metric, 1) + " " + x.metric_unit : "-",
          x.registers ? std::to_string(*x.registers) : "-",
          x.occupancy ? fmt(100 * *x.occupancy, 0) + "% " + x.occupancy_limiter : "-",
          x.outcome == Outcome::ok ? "" : x.reason.substr(0, x.reason.find('\n')).substr(0, 60)};
}

// The results, fastest first, at most `limit` rows (0: all); with a limit, a failure is listed only where no
// result ran. Then how many of each outcome, every result counted and the pruned counts with them.
void print_results(const std::vector<StoredResult>& results, const PrunedCounts& pruned, int limit) {
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, std::int64_t> counts;
  if (!pruned.empty()) counts["pruned"] = pruned_total(pruned);
  int shown = 0;
  for (const auto& r : results) {
    const auto& x = r.record;
    ++counts[std::string(to_string(x.outcome))];
    if (limit && shown >= limit) continue;
    if (x.outcome != Outcome::ok && shown > 0 && limit) continue;  // failures are counted below
    rows.push_back(result_row(++shown, x));
  }
  print_table(std::cout,
              {"#", "config", "outcome", "median ms", "spread", "metric", "regs", "occupancy", "reason"},
              rows);
  std::cout << "\n";
  for (const auto& [k, n] : counts) std::cout << k << ": " << n << "  ";
  std::cout << "\n";
}

// What was pruned before compiling (counted, not stored one by one), the most frequent reasons first.
void print_pruned(const PrunedCounts& pruned, int limit) {
  if (pruned.empty()) return;
  std::vector<std::pair<std::int64_t, std::string>> by_count;
  for (const auto& [reason, n] : pruned) by_count.emplace_back(n, reason);
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::cout << "pruned before compiling: " << pruned_total(pruned) << "\n";
  const std::size_t shown =
      limit ? std::min(by_count.size(), static_cast<std::size_t>(limit)) : by_count.size();
  for (std::size_t i = 0; i < shown; ++i)
    std::cout << "  " << by_count[i].first << " x " << printable_line(by_count[i].second.substr(0, 120))
              << "\n";
  if (shown < by_count.size()) std::cout << "  and " << by_count.size() - shown << " other reasons\n";
}

}  // namespace

int cmd_show(const std::vector<std::string>& argv) {
  Common c;
  std::int64_t sweep_id = 0;
  int limit = 20;
  std::string device;
  po::options_description desc("options");
  add_common(desc, c, false, false);
  add_show_options(desc, sweep_id, device, limit);
  if (!parse("show",
             "Shows a sweep's results, fastest first, then the configurations that did not run and why.",
             desc, argv))
    return 0;
  po::variables_map vm;
  po::store(po::command_line_parser(argv).options(desc).run(), vm);
  Store store = Store::open(c.db, Store::Mode::read_only);
  std::optional<ProblemKey> problem;
  if (!c.size.empty()) problem = ProblemKey{parse_size(c.size), parse_args(c.args)};
  if (vm.count("list")) {
    print_sweep_list(store.sweeps(c.family, device, problem));
    return 0;
  }
  const SweepInfo sweep = sweep_to_show(store, c, device, problem, sweep_id);
  print_sweep_head(sweep);
  print_best_so_far(store.best_so_far(sweep.id));
  std::cout << "\n";
  const PrunedCounts pruned = store.pruned_counts(sweep.id);
  print_results(store.results(sweep.id), pruned, limit);
  print_pruned(pruned, limit);
  return 0;
}

}  // namespace tiletune::cli
