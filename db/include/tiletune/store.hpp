// The SQLite store that owns every tuning outcome. Read-write; the tuner and the CLI use it.
// Applications read through client.hpp instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/records.hpp"
#include "tiletune/results.hpp"

namespace tiletune {

struct ImportSummary {
  int sweeps_added = 0, sweeps_skipped = 0, results_added = 0;
};

// What one CSV import holds at most, so that a hostile file fails cleanly instead of exhausting memory (what
// it holds grows with the rows and the sweeps, each a few hundred bytes to a few kilobytes, whatever their
// text). The defaults take an export of a million results; tests lower them.
struct CsvImportLimits {
  std::size_t max_bytes = std::size_t{512} << 20;      // the whole text
  std::size_t max_field_bytes = std::size_t{1} << 20;  // one field: a compile log, a family description
  std::size_t max_rows = 1'000'000;                    // rows after the header
  std::size_t max_sweeps = 100'000;                    // different sweep uids
};

class Store {
 public:
  enum class Mode { read_only, read_write };

  // Opens (and for read_write creates and migrates) the database; read_only opens as Client::open does
  // (immutable where the directory is read-only). Throws StoreError with a one-line message that names the
  // path: no usable path, not a database, newer schema than this build knows, unwritable directory, ...
  static Store open(const std::filesystem::path& path, Mode mode = Mode::read_write);

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  static constexpr int schema_version = 4;

  // A new sweep with status "running", to which add_results adds as measuring goes (a sweep that stops
  // half-way can be resumed). Throws StoreError when the spec is incomplete, or when its device would take
  // over the uuid of a stored device that differs (see db/SCHEMA.md, devices).
  std::int64_t begin_sweep(const SweepSpec& spec);
  // A complete sweep (a stored plan) in one BEGIN IMMEDIATE transaction: its rows, every record, what it
  // pruned before compiling (as record_pruned stores it) and its final status, or nothing at all when any
  // part fails.
  std::int64_t add_sweep(const SweepSpec& spec, const std::vector<ResultRecord>& records,
                         const std::string& status = "done", const PrunedCounts& pruned = {});
  // All records in one BEGIN IMMEDIATE transaction; a configuration already stored for this sweep is
  // replaced.
  void add_results(std::int64_t sweep_id, const std::vector<ResultRecord>& records);
  // What the sweep pruned before compiling, as counts per reason (no configuration or result rows), in one
  // transaction. A run that resumes the sweep prunes again what the runs before it pruned, so each reason's
  // count becomes the larger of the stored and the given one: storing the same counts twice changes nothing.
  // Throws StoreError for an unknown sweep, a count below 1 or an empty reason.
  void record_pruned(std::int64_t sweep_id, const PrunedCounts& counts);
  void finish_sweep(std::int64_t sweep_id, const std::string& status);
  // Records when the sweep found its best (see SweepInfo). Throws StoreError for an unknown sweep.
  void set_best_found(std::int64_t sweep_id, std::int64_t measurement, double seconds);

  std::optional<SweepInfo> sweep(std::int64_t sweep_id) const;
  // Newest first. Empty strings / nullopt mean "any".
  std::vector<SweepInfo> sweeps(const std::string& family = "", const std::string& device_name = "",
                                const std::optional<ProblemKey>& problem = std::nullopt) const;
  // The newest sweep of kind "sweep" for (family, device uuid, problem) that is not "done".
  std::optional<SweepInfo> resumable_sweep(const std::string& family, const std::string& device_uuid,
                                           const ProblemKey& problem) const;
  // The params text of every configuration stored for the sweep (any outcome).
  std::vector<std::string> stored_param_keys(std::int64_t sweep_id) const;
  // Results of one sweep: ok results by median time first, then the others by outcome; the first `limit`
  // of them (0: all).
  std::vector<StoredResult> results(std::int64_t sweep_id, std::size_t limit = 0) const;
  // The same without what was pruned before compiling: what the sweep measured (or tried to). Far fewer rows
  // where the plan prunes most of a space.
  std::vector<StoredResult> measured_results(std::int64_t sweep_id) const;
  // The counts record_pruned stored for the sweep, by reason; empty for a sweep stored before schema version
  // 4 (and for a file of an older version opened read-only), whose pruned configurations are results with
  // outcome pruned instead. A sweep resumed across the versions has both, never for one configuration.
  PrunedCounts pruned_counts(std::int64_t sweep_id) const;
  // The sweep's best-so-far curve: every point where its best ok time improved, in the order it measured.
  std::vector<BestSoFarPoint> best_so_far(std::int64_t sweep_id) const;
  // The best ok result over every sweep for (family, device name, problem), if any.
  std::optional<StoredResult> best(const std::string& family, const std::string& device_name,
                                   const ProblemKey& problem) const;

  // The best ok result of every (family, device name, problem), ordered by those; empty filters mean any.
  std::vector<BestConfig> best_per_problem(const std::string& family = "",
                                           const std::string& device_name = "") const;

  // The description (JSON text) stored with a family's template hash; "{}" when there is none.
  std::string family_description(const std::string& family, const std::string& template_hash) const;

  bool integrity_ok() const;  // PRAGMA integrity_check says "ok"

  // Export / import. JSON carries {"format": "tiletune-export", "schema_version", "tiletune": {version,
  // git_sha}, "exported_at", "sweeps": [...]}. Filters: empty means any.
  std::string export_json(const std::string& family = "", const std::string& device_name = "") const;
  // Validates the whole document before writing anything; one transaction; sweeps already present (same uid)
  // are skipped. Throws StoreError on malformed input, leaving the database unchanged.
  ImportSummary import_json(const std::string& text);
  // Holds every ok result that import_json and import_csv bring to its family's plan (see ImportPlanCheck):
  // what the plan refuses is stored as pruned with its reason and "(imported as ok)", never as ok.
  void check_imports_with(ImportPlanCheck check);
  // One RFC 4180 row per result (CRLF, a header row), with every column the JSON export has: the result's,
  // and its sweep's repeated on each row; a sweep without results is one row with empty result columns
  // (db/SCHEMA.md lists the columns).
  void export_csv(std::ostream& out, const std::string& family = "",
                  const std::string& device_name = "") const;
  // Reads what export_csv writes, as import_json does: the whole text is checked before anything is written,
  // in one transaction; sweeps already present (same uid) are skipped. Takes LF or CRLF and a UTF-8 BOM;
  // invalid UTF-8 in a field is replaced by U+FFFD. Throws StoreError with one line naming the line and the
  // field ("import: line 5, field 10 (median_ms) must be a positive, finite time in ms, got -1"), leaving the
  // database unchanged.
  ImportSummary import_csv(const std::string& text, const CsvImportLimits& limits = {});
  // T4, the auto-tuning community's results format (schema version 1.0.0): every result of the chosen sweeps
  // (all that match the filters, or only `sweep_ids`) with its configuration, compile time, timed runs,
  // measurements with units and its outcome as T4's invalidity; and metadata: the devices with their
  // properties, driver and runtime versions, and each sweep's provenance and pruned counts (what was pruned
  // before compiling has no result). Throws StoreError for a sweep id
  // that does not exist or does not match the filters.
  void export_t4(std::ostream& out, const std::string& family = "", const std::string& device_name = "",
                 const std::vector<std::int64_t>& sweep_ids = {}) const;
  // A C++17 header with the best ok configuration of each (family, device, problem).
  void export_header(std::ostream& out, const std::string& family = "",
                     const std::string& device_name = "") const;

  // Merge (db/src/merge.cpp): every sweep of every input database into `output` (created if missing), in one
  // transaction on the output; inputs are only read. A sweep's pruned counts go with it (and with a more
  // complete copy, as record_pruned adds them). A sweep (by uid) already there with the same results
  // (params, outcome, median) is skipped. Copies that differ are a conflict: when one holds every result of
  // the other and more (a snapshot of a running sweep), the more complete one is kept (the stored copy gains
  // the missing results and the later status); otherwise the copy stored first is kept. A sweep whose device
  // the output refuses (db/SCHEMA.md, "Device identity") is skipped. Each conflict is one line on `report`.
  // Throws StoreError (one line, naming the file) before writing anything when the output is an input (also
  // through a link, or its -wal, -shm or -journal file) or an input is missing, not a tiletune database,
  // corrupt or newer; any later failure leaves the output as it was.
  struct MergeCounts {
    std::string input;  // the path as given; "total" in MergeSummary::total
    int sweeps_added = 0, sweeps_skipped = 0, sweeps_conflicting = 0;
    std::int64_t results_added = 0;
  };
  struct MergeSummary {
    std::vector<MergeCounts> inputs;
    MergeCounts total;
    int shard_groups = 0;  // (family, device, problem) groups of the output measured in more than one sweep
  };
  // `check` holds each incoming ok result to its family's plan (see ImportPlanCheck); what it refuses is
  // stored as pruned ("... (merged as ok)").
  static MergeSummary merge(const std::vector<std::filesystem::path>& inputs,
                            const std::filesystem::path& output, std::ostream& report,
                            const ImportPlanCheck& check = {});

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tiletune
