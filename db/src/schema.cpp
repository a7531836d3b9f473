#include "schema.hpp"

#include <array>
#include <string>

#include "tiletune/store.hpp"

namespace tiletune::schema {

static_assert(Store::schema_version == current_version);

namespace {

// Version 1: the tables and indexes that db/SCHEMA.md documents, each table with its indexes. SQLite keeps
// every CREATE statement's text in sqlite_master, and existing databases hold this text: do not reformat it.
constexpr const char* create_devices = R"sql(
CREATE TABLE devices (
  id              INTEGER PRIMARY KEY,
  name            TEXT NOT NULL,
  uuid            TEXT NOT NULL UNIQUE,
  arch            TEXT NOT NULL,
  sm_count        INTEGER NOT NULL,
  is_profile      INTEGER NOT NULL CHECK (is_profile IN (0, 1)),
  properties_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX devices_by_name ON devices (name);
CREATE INDEX devices_by_arch ON devices (arch);
)sql";

constexpr const char* create_families = R"sql(
CREATE TABLE families (
  id                  INTEGER PRIMARY KEY,
  name                TEXT NOT NULL,
  template_hash       TEXT NOT NULL,
  description_json    TEXT NOT NULL DEFAULT '{}',
  default_params_text TEXT,
  UNIQUE (name, template_hash)
);
)sql";

constexpr const char* create_problems = R"sql(
CREATE TABLE problems (
  id        INTEGER PRIMARY KEY,
  size_text TEXT NOT NULL,
  args_text TEXT NOT NULL DEFAULT '',
  UNIQUE (size_text, args_text)
);
)sql";

constexpr const char* create_sweeps = R"sql(
CREATE TABLE sweeps (
  id               INTEGER PRIMARY KEY,
  uid              TEXT NOT NULL UNIQUE,
  device_id        INTEGER NOT NULL REFERENCES devices (id),
  family_id        INTEGER NOT NULL REFERENCES families (id),
  problem_id       INTEGER NOT NULL REFERENCES problems (id),
  space_hash       TEXT NOT NULL DEFAULT '',
  kind             TEXT NOT NULL DEFAULT 'sweep',
  strategy         TEXT NOT NULL DEFAULT '',
  status           TEXT NOT NULL DEFAULT 'running',
  started_at       TEXT NOT NULL,
  ended_at         TEXT,
  tiletune_version TEXT NOT NULL DEFAULT '',
  git_sha          TEXT NOT NULL DEFAULT ''
);
CREATE INDEX sweeps_by_key ON sweeps (family_id, device_id, problem_id);
)sql";

constexpr const char* create_configurations = R"sql(
CREATE TABLE configurations (
  id          INTEGER PRIMARY KEY,
  family_id   INTEGER NOT NULL REFERENCES families (id),
  params_text TEXT NOT NULL,
  UNIQUE (family_id, params_text)
);
)sql";

constexpr const char* create_results = R"sql(
CREATE TABLE results (
  id                INTEGER PRIMARY KEY,
  sweep_id          INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  configuration_id  INTEGER NOT NULL REFERENCES configurations (id),
  outcome           TEXT NOT NULL CHECK (outcome IN ('ok', 'pruned', 'compile_failed', 'launch_failed',
                                                     'runtime_failed', 'timeout', 'wrong_result')),
  reason            TEXT NOT NULL DEFAULT '',
  median_ms         REAL,
  min_ms            REAL,
  spread            REAL,
  repetitions       INTEGER NOT NULL DEFAULT 0,
  metric            REAL,
  metric_unit       TEXT NOT NULL DEFAULT '',
  error             REAL,
  registers         INTEGER,
  static_smem       INTEGER,
  dynamic_smem      INTEGER,
  local_bytes       INTEGER,
  spill_bytes       INTEGER,
  threads_per_block INTEGER,
  active_blocks     INTEGER,
  active_warps      INTEGER,
  occupancy_limiter TEXT NOT NULL DEFAULT '',
  occupancy         REAL,
  sm_clock_mhz      REAL,
  measured_at       TEXT NOT NULL,
  UNIQUE (sweep_id, configuration_id)
);
-- The best lookup: per sweep, its fastest ok result is the first entry of this index.
CREATE INDEX results_ok_by_time ON results (sweep_id, median_ms) WHERE outcome = 'ok';
)sql";

// In this order: a table's REFERENCES name tables created before it.
constexpr std::array<const char*, 6> version_1_tables{
    create_devices, create_families, create_problems, create_sweeps, create_configurations, create_results,
};

void create_version_1(const sql::Db& db) {
  for (const char* statements : version_1_tables) db.exec(statements);
}

// Version 2: what a result's times are made of, for exports that carry them (T4, Kernel Tuner): NVRTC's time
// for the CUBIN, the wall time of the measurement, and every timed run. Rows of version 1 keep NULL and '[]'.
void add_version_2(const sql::Db& db) {
  db.exec(R"sql(
ALTER TABLE results ADD COLUMN compile_ms REAL;
ALTER TABLE results ADD COLUMN measure_ms REAL;
ALTER TABLE results ADD COLUMN times_json TEXT NOT NULL DEFAULT '[]';
)sql");
}

// Version 3: when each sweep found its best (the measurement that found it, counted from 1, and the seconds
// since the sweep started), so that strategies can be compared on real sweeps. Older sweeps keep NULL.
void add_version_3(const sql::Db& db) {
  db.exec(R"sql(
ALTER TABLE sweeps ADD COLUMN best_found_count INTEGER;
ALTER TABLE sweeps ADD COLUMN best_found_seconds REAL;
)sql");
}

// Version 4: what a sweep pruned before compiling, as counts per reason rather than a configurations and a
// results row for each (most of a large space, and most of the file). Older sweeps keep their pruned rows.
void add_version_4(const sql::Db& db) {
  db.exec(R"sql(
CREATE TABLE pruned (
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  reason   TEXT NOT NULL,
  count    INTEGER NOT NULL CHECK (count > 0),
  PRIMARY KEY (sweep_id, reason)
) WITHOUT ROWID;
)sql");
}

using MigrationStep = void (*)(const sql::Db&);
// migrations[v] takes a database from schema version v to v + 1; a new version appends one step.
constexpr std::array<MigrationStep, current_version> migrations{&create_version_1, &add_version_2,
                                                                &add_version_3, &add_version_4};

}  // namespace

void migrate(const sql::Db& db) {
  if (check_known(db) == current_version) return;
  sql::Transaction transaction(db);
  // Another process may have migrated between the check and BEGIN IMMEDIATE.
  const int version = check_known(db);
  for (int v = version; v < current_version; ++v) migrations[static_cast<std::size_t>(v)](db);
  // PRAGMA values cannot be bound; these are our own integer constants.
  db.exec(("PRAGMA application_id = " + std::to_string(application_id)).c_str());
  db.exec(("PRAGMA user_version = " + std::to_string(current_version)).c_str());
  transaction.commit();
}

}  // namespace tiletune::schema
