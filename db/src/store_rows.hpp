// Row-level reads and writes shared by the store (store.cpp) and export/import (export.cpp: JSON; csv.cpp:
// CSV), and what the two importers share: the values they read, the rules those are held to, the writing.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqlite.hpp"
#include "tiletune/store.hpp"

namespace tiletune {

struct Store::Impl {
  sql::Db db;
  ImportPlanCheck import_check;  // see Store::check_imports_with
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
// Ok results by median time, then the others by outcome; the first `limit` of them (0: all).
// with_pruned = false leaves out what was pruned before compiling.
std::vector<StoredResult> select_results(const sql::Db& db, std::int64_t sweep_id, std::size_t limit = 0,
                                         bool with_pruned = true);
std::optional<StoredResult> select_result(const sql::Db& db, std::int64_t result_id);

// The best ok result of each (family, device name, problem), for the header export.
using BestRow = BestConfig;
std::vector<BestRow> select_best_per_problem(const sql::Db& db, const std::string& family,
                                             const std::string& device_name);

// ---- export and import, shared by export.cpp (JSON) and csv.cpp (CSV) ----

// Shortest text that reads back as the same double ("" when it cannot be written).
std::string number_text(double value);
// Run times as stored in results.times_json and written by the exports: a JSON array of number_text values.
std::string times_json(const std::vector<double>& times);
// Sweeps oldest first, for files that read top to bottom. Empty filters mean any.
std::vector<SweepInfo> sweeps_for_export(const sql::Db& db, const std::string& family,
                                         const std::string& device_name);
// The stored description of a family version, "{}" when there is none.
std::string family_description(const sql::Db& db, const std::string& name, const std::string& template_hash);
// A stored JSON column as compact JSON object text; text that is not an object (or nested too deep to parse
// safely, which only a hand-edited row can be) becomes "{}".
std::string object_text_or_empty(const std::string& text);
// The same as a JSON object.
nlohmann::json object_or_empty(const std::string& text);

// A file's content, read and checked before the database is touched.
struct ImportedResult {
  ResultRecord record;
  std::string measured_at;
};

struct ImportedSweep {
  std::string uid;
  DeviceRecord device;
  std::string family, template_hash, description_json;
  ProblemKey problem;
  std::string space_hash, kind, strategy, status, started_at;
  std::optional<std::string> ended_at;
  std::string tiletune_version, git_sha;
  std::vector<ImportedResult> results;
  PrunedCounts pruned;  // what was pruned before compiling (schema version 4)
};

// Names the place of a value in the file, by its key in the JSON export ("median_ms", "device.sm_count"):
// "sweeps[2].results[0].median_ms", "line 5, field 10 (median_ms)".
using Where = std::function<std::string(const std::string& key)>;
// Throws StoreError "import: WHERE WHY" on one line.
[[noreturn]] void import_fail(const std::string& where, const std::string& why);
// A value from a file as a message quotes it: 'text', its control characters escaped and invalid UTF-8
// replaced (see utf8.hpp), cut after `limit` bytes so that a hostile field cannot make a huge message.
std::string in_quotes(std::string_view text, std::size_t limit = 80);
// The same without the quotes, for a message that another parser wrote about the value.
std::string shown(std::string_view text, std::size_t limit);

// The sweep-level rules: a uid, a device name and uuid, a family name, kind sweep or plan, a known status, a
// start time. The readers check types and sm_count; this holds the values to what a sweep can be.
void check_sweep(const ImportedSweep& sweep, const Where& where);
// The values a measurement produces, held to the same rules on import: times positive and finite, counts and
// ratios non-negative, an ok time from at least one run; a measured sweep's ok results have a time (only ok
// results with a time are ever a best configuration). A plan's ok results have none.
void check_measurement(const ResultRecord& result, bool measured, const Where& where);

// Adds, in one BEGIN IMMEDIATE transaction, every sweep whose uid the database does not have; a failure
// anywhere (a device that would take over a stored one, a full disk) leaves the database as it was. Throws
// StoreError "import: PLACE: WHY", PLACE being where(sweep index, part) with part "device", "family" or "".
// Each ok result is held to `check` (see ImportPlanCheck).
ImportSummary write_imported(const sql::Db& db, const std::vector<ImportedSweep>& sweeps,
                             const std::function<std::string(std::size_t, const std::string&)>& where,
                             const ImportPlanCheck& check);

}  // namespace rows
}  // namespace tiletune
