#include "pruned.hpp"

#include <cstdint>
#include <stdexcept>

#include "store_rows.hpp"
#include "tiletune/records.hpp"

namespace tiletune {
namespace rows {

void add_pruned(const sql::Db& db, std::int64_t sweep_id, const PrunedCounts& counts,
                const std::string& what) {
  if (counts.empty()) return;
  sql::Stmt upsert = db.prepare(
      "INSERT INTO pruned (sweep_id, reason, count) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (sweep_id, reason) DO UPDATE SET count = MAX(count, excluded.count)");
  for (const auto& [reason, count] : counts) {
    if (reason.empty()) throw StoreError(what + ": a pruned count without a reason");
    if (count < 1)
      throw StoreError(what + ": the pruned count of '" + reason + "' must be at least 1, got " +
                       std::to_string(count));
    upsert.bind(1, sweep_id).bind(2, reason).bind(3, count).run();
    upsert.reset();
  }
}

PrunedCounts select_pruned(const sql::Db& db, std::int64_t sweep_id) {
  PrunedCounts counts;
  if (db.query_int("PRAGMA user_version") < 4) return counts;
  sql::Stmt select = db.prepare("SELECT reason, count FROM pruned WHERE sweep_id = ?1");
  select.bind(1, sweep_id);
  while (select.step()) counts[select.column_text(0)] = select.column_int64(1);
  return counts;
}

nlohmann::json pruned_json(const PrunedCounts& counts) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [reason, n] : counts) out[reason] = n;
  return out;
}

PrunedCounts pruned_from_json(const nlohmann::json& value) {
  if (!value.is_object()) throw std::invalid_argument("must be an object of reason to count");
  PrunedCounts counts;
  for (const auto& [reason, n] : value.items()) {
    if (reason.empty()) throw std::invalid_argument("has a count without a reason");
    if (!n.is_number_integer() || (n.is_number_unsigned() && n.get<std::uint64_t>() > INT64_MAX) ||
        n.get<std::int64_t>() < 1)
      throw std::invalid_argument("has the count " + n.dump().substr(0, 40) + " for '" +
                                  reason.substr(0, 80) + "' (a count is an integer of at least 1)");
    counts[reason] = n.get<std::int64_t>();
  }
  return counts;
}

}  // namespace rows

void Store::record_pruned(std::int64_t sweep_id, const PrunedCounts& counts) {
  const sql::Db& db = impl_->db;
  sql::Transaction transaction(db);
  sql::Stmt exists = db.prepare("SELECT 1 FROM sweeps WHERE id = ?1");
  exists.bind(1, sweep_id);
  if (!exists.step()) throw StoreError("record_pruned: no sweep with id " + std::to_string(sweep_id));
  rows::add_pruned(db, sweep_id, counts, "record_pruned");
  transaction.commit();
}

PrunedCounts Store::pruned_counts(std::int64_t sweep_id) const {
  return rows::select_pruned(impl_->db, sweep_id);
}

}  // namespace tiletune
