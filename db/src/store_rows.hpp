// Row-level reads and writes shared by the store (store.cpp) and export/import (export.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sqlite.hpp"
#include "tiletune/store.hpp"

namespace tiletune {

struct Store::Impl {
  sql::Db db;
};

namespace rows {

// An upsert either refreshes what is stored (a new sweep: the device was just measured) or keeps it (import).
enum class OnConflict { update, keep };

// Empty text becomes "{}"; anything else must parse as a JSON object. `what` names it in the message.
std::string checked_json_object(const std::string& text, const std::string& what);
// "A=1,B=2" from a family description's "parameters" (each one's "default", else its first value);
// nullopt when the description does not say.
std::optional<std::string> default_params_text(const std::string& description_json);

// The row of the device by uuid, created if new. A uuid never changes hands: a real GPU's row takes a new
// driver's name and properties (update) but refuses another architecture or SM count; an import (keep)
// also refuses another name. A profile that differs from the stored one of its uuid gets a row of its own
// under "UUID#<hash of its content>". Throws StoreError naming both devices.
std::int64_t upsert_device(const sql::Db& db, const DeviceRecord& device, OnConflict on_conflict);
std::int64_t upsert_family(const sql::Db& db, const std::string& name, const std::string& template_hash,
                           const std::string& description_json, OnConflict on_conflict);
std::int64_t upsert_problem(const sql::Db& db, const ProblemKey& problem);

struct SweepRow {
  std::string uid;
  std::int64_t device_id = 0, family_id = 0, problem_id = 0;
  std::string space_hash, kind, strategy, status, started_at;
  std::optional<std::string> ended_at;
  std::string tiletune_version, git_sha;
};
std::int64_t insert_sweep(const sql::Db& db, const SweepRow& row);
bool sweep_uid_exists(const sql::Db& db, const std::string& uid);
std::string new_uid();

// Writes results of one sweep; prepares its statements once for many records.
class ResultWriter {
 public:
  ResultWriter(const sql::Db& db, std::int64_t family_id);
  void write(std::int64_t sweep_id, const ResultRecord& record, const std::string& measured_at);

 private:
  const sql::Db& db_;
  std::int64_t family_id_;
  sql::Stmt insert_configuration_, select_configuration_, insert_result_;
};

struct SweepFilter {
  std::optional<std::int64_t> id;
  std::string family, device_name, device_uuid, kind;
  std::optional<ProblemKey> problem;
  bool not_done_only = false;
};
// Newest first.
std::vector<SweepInfo> select_sweeps(const sql::Db& db, const SweepFilter& filter);
std::int64_t sweep_family_id(const sql::Db& db, std::int64_t sweep_id);
// Ok results by median time, then the others by outcome.
std::vector<StoredResult> select_results(const sql::Db& db, std::int64_t sweep_id);
std::optional<StoredResult> select_result(const sql::Db& db, std::int64_t result_id);

// The best ok result of each (family, device name, problem), for the header export.
struct BestRow {
  std::string family, device_name, arch, size_text, args_text;
  StoredResult result;
};
std::vector<BestRow> select_best_per_problem(const sql::Db& db, const std::string& family,
                                             const std::string& device_name);

}  // namespace rows
}  // namespace tiletune
