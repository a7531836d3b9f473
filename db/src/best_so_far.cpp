// The best-so-far curve of a stored sweep, read back from its results in the order they were stored.
#include <cstdio>
#include <ctime>
#include <limits>
#include <optional>

#include "sqlite.hpp"
#include "store_rows.hpp"
#include "tiletune/store.hpp"

namespace tiletune {

namespace {

// Seconds since the epoch of "2026-11-24T10:26:56.830Z" (the store's timestamps); nullopt for other text.
std::optional<double> iso_seconds(const std::string& iso) {
  std::tm t{};
  int ms = 0;
  char z = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour,
                  &t.tm_min, &t.tm_sec, &ms, &z) != 8 ||
      z != 'Z')
    return std::nullopt;
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  return static_cast<double>(timegm(&t)) + ms / 1000.0;
}

}  // namespace

std::vector<BestSoFarPoint> Store::best_so_far(std::int64_t sweep_id) const {
  const auto sweep = this->sweep(sweep_id);
  if (!sweep) throw StoreError("best_so_far: no sweep with id " + std::to_string(sweep_id));
  const std::optional<double> start = iso_seconds(sweep->started_at);
  // Pruned before compiling: pruned and never compiled (no compile time). Those are not measurements.
  // (A database before schema version 2, which a read-only open cannot migrate, has no compile times.)
  const bool has_compile_ms = impl_->db.query_int("PRAGMA user_version") >= 2;
  sql::Stmt select = impl_->db.prepare(
      std::string("SELECT r.outcome, r.median_ms, r.measured_at, c.params_text, r.outcome = 'pruned' AND ") +
      (has_compile_ms ? "r.compile_ms IS NULL" : "1") +
      " AND r.registers IS NULL FROM results r JOIN configurations c ON c.id = r.configuration_id "
      "WHERE r.sweep_id = ?1 ORDER BY r.id");
  select.bind(1, sweep_id);
  std::vector<BestSoFarPoint> curve;
  std::int64_t measurement = 0;
  double best = std::numeric_limits<double>::infinity();
  while (select.step()) {
    if (select.column_int(4) != 0) continue;
    ++measurement;
    const auto median = select.column_optional_double(1);
    if (select.column_text(0) != "ok" || !median || *median >= best) continue;
    best = *median;
    const auto at = iso_seconds(select.column_text(2));
    curve.push_back({measurement, start && at ? std::max(0.0, *at - *start) : 0.0, *median,
                     params_from_text(select.column_text(3))});
  }
  return curve;
}

}  // namespace tiletune
