#include "printer.hpp"

#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "tiletune/strategy.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune::sweep {

std::string duration_text(double s) {
  std::ostringstream out;
  if (s < 60)
    out << std::fixed << std::setprecision(1) << s << "s";
  else if (s < 3600)
    out << static_cast<int>(s) / 60 << "m" << std::setw(2) << std::setfill('0') << static_cast<int>(s) % 60
        << "s";
  else
    out << static_cast<int>(s) / 3600 << "h" << std::setw(2) << std::setfill('0')
        << (static_cast<int>(s) % 3600) / 60 << "m";
  return out.str();
}

namespace {

std::string head(const SpaceLine& l) {
  return l.family + " " + l.problem + " on " + l.device +
         (l.lanes > 1 ? " x" + std::to_string(l.lanes) : "") + ": " + std::to_string(l.configurations) +
         " configurations";
}

}  // namespace

void Printer::resuming(std::int64_t sweep_id, std::size_t stored, std::size_t measured,
                       std::size_t budget) const {
  out_ << "resuming sweep " << sweep_id << ": " << stored << " configurations already stored";
  if (budget)
    out_ << ", " << measured << " of them measured, " << (measured < budget ? budget - measured : 0)
         << " left of the budget of " << budget;
  out_ << "\n";
}

void Printer::enumerated(const SpaceLine& l, const std::string& why_strategy) const {
  out_ << head(l) << (l.shard.empty() ? "" : ", " + std::to_string(l.in_shard) + " in shard " + l.shard)
       << ", " << l.pruned << " pruned before compiling, " << l.total << " to measure"
       << (l.strategy != "brute_force" ? " (" + l.strategy + ")" : "") << "\n";
  if (!why_strategy.empty()) out_ << why_strategy << "\n";
}

void Printer::sampled(const SpaceLine& l) const {
  out_ << head(l) << (l.shard.empty() ? "" : " (shard " + l.shard + ")") << ", sampled lazily (" << l.strategy
       << "): up to " << l.total
       << " to measure, each drawn point pruned as it comes; the draws give up after " << kMaxFruitlessDraws
       << " in a row find nothing runnable\n";
}

void Printer::pool(const std::vector<DeviceLimits>& devices, std::size_t walkers,
                   const std::string& strategy) const {
  if (devices.size() > 1) {
    out_ << "measuring on " << devices.size() << " GPUs:";
    for (const auto& d : devices) out_ << " " << d.ordinal;
    out_ << (walkers > 1 ? " (one annealing walker per GPU)" : " (dealing out one " + strategy + " order)")
         << "\n";
  }
  out_.flush();
}

void Printer::progress(const Progress& p, bool final_line) const {
  const double left = p.recorded ? p.elapsed_s / static_cast<double>(p.recorded) *
                                       static_cast<double>(p.total - std::min(p.recorded, p.total))
                                 : 0;
  std::ostringstream line;
  line << "[" << p.recorded << "/" << p.total << "] pruned " << p.pruned << ", failed " << p.failed
       << ", best "
       << (std::isfinite(p.best_ms) ? std::to_string(p.best_ms).substr(0, 7) + " ms " + p.best_params : "-")
       << ", elapsed " << duration_text(p.elapsed_s)
       << (final_line ? "" : ", ~" + duration_text(left) + " left");
  if (p.gpus && p.gpus->size() > 1) {
    line << " |";
    for (const auto& g : *p.gpus)
      line << " GPU" << g.ordinal << " " << g.measured << " ("
           << static_cast<int>(p.elapsed_s > 0 ? 100 * g.busy_seconds / p.elapsed_s : 0) << "% busy)";
  }
  if (options_.progress_line)
    out_ << "\r\033[K" << line.str() << (final_line ? "\n" : "") << std::flush;
  else
    out_ << line.str() << "\n" << std::flush;
}

void Printer::recorded(const Progress& p, const ResultRecord& rec, bool new_best) const {
  const bool ok = rec.outcome == Outcome::ok;
  if (options_.progress_line) return progress(p, false);
  if (!new_best && ok &&
      !(options_.log_every && p.recorded % static_cast<std::size_t>(options_.log_every) == 0))
    return;
  if (!ok && rec.outcome != Outcome::pruned)
    out_ << "  " << params_to_text(rec.params) << ": " << to_string(rec.outcome) << ": "
         << printable(rec.reason.substr(0, rec.reason.find('\n'))) << "\n";
  progress(p, false);
}

void Printer::finished(const Progress& p, const std::string& stop_reason) const {
  progress(p, true);
  if (!stop_reason.empty()) out_ << stop_reason << "\n";
}

}  // namespace tiletune::sweep
