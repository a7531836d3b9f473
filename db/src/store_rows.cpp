#include "store_rows.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "pruned.hpp"
#include "tiletune/json_depth.hpp"
#include "tiletune/result_fields.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune::rows {

namespace {

using nlohmann::json;

// The columns every result read selects, in the order read_result expects them: the result's own, its value
// fields (result_fields(); NULL where the database's schema predates one: a read-only open cannot migrate),
// then where it was measured and its timed runs.
std::string result_columns_of(const sql::Db& db) {
  const int version = db.query_int("PRAGMA user_version");
  std::string columns = "c.params_text, r.outcome, r.reason, r.repetitions, ";
  for (const ResultField& f : result_fields())
    columns += (version >= f.since_schema ? "r." + std::string(f.name) : std::string("NULL")) + ", ";
  return columns + "r.measured_at, r.sweep_id, " + (version >= 2 ? "r.times_json" : "'[]'");
}

// A stored times_json: the timed runs as a JSON array of numbers. Anything else (a hand-edited row) reads as
// no runs rather than failing the whole read.
std::vector<double> times_from_json(const std::string& text) {
  std::vector<double> times;
  if (text.empty() || text == "[]") return times;
  const json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_array()) return times;
  for (const json& t : parsed) {
    if (!t.is_number()) return {};
    times.push_back(t.get<double>());
  }
  return times;
}

void read_column(const sql::Stmt& stmt, int c, std::optional<int>& value) {
  value = stmt.column_optional_int(c);
}
void read_column(const sql::Stmt& stmt, int c, std::optional<double>& value) {
  value = stmt.column_optional_double(c);
}
void read_column(const sql::Stmt& stmt, int c, std::string& value) { value = stmt.column_text(c); }

StoredResult read_result(const sql::Stmt& stmt, int c) {
  StoredResult stored;
  ResultRecord& r = stored.record;
  r.params = params_from_text(stmt.column_text(c++));
  const std::string outcome = stmt.column_text(c++);
  // The CHECK constraint keeps other names out; a hand-edited row still must not pass as ok.
  r.outcome = outcome_from_string(outcome).value_or(Outcome::runtime_failed);
  r.reason = stmt.column_text(c++);
  r.repetitions = stmt.column_int(c++);
  for (const ResultField& f : result_fields())
    visit_field(f, r, [&](auto& value) { read_column(stmt, c++, value); });
  stored.measured_at = stmt.column_text(c++);
  stored.sweep_id = stmt.column_int64(c++);
  r.times_ms = times_from_json(stmt.column_text(c));
  return stored;
}

std::int64_t select_id(sql::Stmt& stmt) {
  if (!stmt.step()) throw StoreError("internal: a row just written is missing");
  const std::int64_t id = stmt.column_int64(0);
  stmt.reset();
  return id;
}

struct StoredDevice {
  std::int64_t id = 0;
  DeviceRecord record;
};

std::optional<StoredDevice> find_device(const sql::Db& db, const std::string& uuid) {
  sql::Stmt select = db.prepare(
      "SELECT id, name, uuid, arch, sm_count, is_profile, properties_json FROM devices WHERE uuid = ?1");
  select.bind(1, uuid);
  if (!select.step()) return std::nullopt;
  StoredDevice stored;
  stored.id = select.column_int64(0);
  stored.record = {select.column_text(1), select.column_text(2),     select.column_text(3),
                   select.column_int(4),  select.column_int(5) != 0, select.column_text(6)};
  return stored;
}

std::int64_t insert_device(const sql::Db& db, const std::string& uuid, const DeviceRecord& device) {
  sql::Stmt insert = db.prepare(
      "INSERT INTO devices (name, uuid, arch, sm_count, is_profile, properties_json) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  insert.bind(1, device.name).bind(2, uuid).bind(3, device.arch).bind(4, device.sm_count);
  insert.bind(5, device.is_profile ? 1 : 0).bind(6, device.properties_json).run();
  return db.last_insert_rowid();
}

bool is_profile(const DeviceRecord& device) {
  return device.is_profile || device.uuid.rfind("profile:", 0) == 0;
}

// The same JSON object whatever the order of its keys or its spacing (nlohmann's objects sort their keys).
std::string canonical_json(const std::string& text) {
  if (json_depth(text) > kMaxJsonDepth) return text;  // a hand-edited row; never parsed, compared as text
  const json parsed = json::parse(text, nullptr, false);
  return parsed.is_discarded() ? text : parsed.dump();
}

bool same_content(const DeviceRecord& a, const DeviceRecord& b) {
  return a.name == b.name && a.arch == b.arch && a.sm_count == b.sm_count && is_profile(a) == is_profile(b) &&
         canonical_json(a.properties_json) == canonical_json(b.properties_json);
}

std::string describe(const DeviceRecord& device) {
  return "'" + device.name + "' (" + device.arch + ", " + std::to_string(device.sm_count) + " SMs)";
}

// FNV-1a (64 bits) of everything a profile states, as 16 hex digits.
std::string content_hash(const DeviceRecord& device) {
  const std::string content = device.name + '\0' + device.arch + '\0' + std::to_string(device.sm_count) +
                              '\0' + canonical_json(device.properties_json);
  std::uint64_t hash = 14695981039346656037ull;
  for (const char c : content) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  std::array<char, 17> hex{};
  std::snprintf(hex.data(), hex.size(), "%016llx", static_cast<unsigned long long>(hash));
  return hex.data();
}

// "profile:h100#<hash>"; a uuid that already ends in a hash (exported from another database) is re-based.
std::string content_uuid(const DeviceRecord& device) {
  std::string base = device.uuid;
  const std::size_t mark = base.rfind('#');
  if (mark != std::string::npos && base.size() - mark == 17 &&
      base.find_first_not_of("0123456789abcdef", mark + 1) == std::string::npos)
    base.resize(mark);
  return base + "#" + content_hash(device);
}

}  // namespace

std::string checked_json_object(const std::string& text, const std::string& what) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return "{}";
  if (json_depth(text) > kMaxJsonDepth)
    throw StoreError(what + " is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::exception& e) {
    throw StoreError(sql::one_line(what + " is not valid JSON: " + e.what()));
  }
  if (!parsed.is_object()) throw StoreError(what + " must be a JSON object");
  return text;
}

namespace {

// A parameter's default: its "default", else the first of its "values".
std::optional<std::int64_t> parameter_default(const json& spec) {
  if (!spec.is_object()) return std::nullopt;
  if (spec.contains("default") && spec["default"].is_number_integer())
    return spec["default"].get<std::int64_t>();
  if (spec.contains("values") && spec["values"].is_array() && !spec["values"].empty() &&
      spec["values"].front().is_number_integer())
    return spec["values"].front().get<std::int64_t>();
  return std::nullopt;
}

// Every parameter at its default, the parameters an object of NAME: spec or a list of specs with a "name";
// nullopt when one has no default.
std::optional<Params> default_params(const json& parameters) {
  Params params;
  if (parameters.is_object()) {
    for (const auto& [name, spec] : parameters.items()) {
      const auto value = parameter_default(spec);
      if (!value) return std::nullopt;
      params[name] = *value;
    }
  } else if (parameters.is_array()) {
    for (const json& spec : parameters) {
      const auto value = parameter_default(spec);
      if (!value || !spec.contains("name") || !spec["name"].is_string()) return std::nullopt;
      params[spec["name"].get<std::string>()] = *value;
    }
  } else {
    return std::nullopt;
  }
  return params;
}

}  // namespace

std::optional<std::string> default_params_text(const std::string& description_json) {
  if (json_depth(description_json) > kMaxJsonDepth) return std::nullopt;
  const json doc = json::parse(description_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("parameters")) return std::nullopt;
  const std::optional<Params> params = default_params(doc["parameters"]);
  if (!params || params->empty()) return std::nullopt;
  try {
    return params_to_text(*params);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::int64_t upsert_device(const sql::Db& db, const DeviceRecord& device, OnConflict on_conflict) {
  DeviceRecord incoming = device;
  incoming.properties_json = checked_json_object(device.properties_json, "device properties");
  const auto stored = find_device(db, incoming.uuid);
  if (!stored) return insert_device(db, incoming.uuid, incoming);
  if (same_content(stored->record, incoming)) return stored->id;
  const auto refuse = [&](const std::string& stored_as) -> StoreError {
    return StoreError(sql::one_line(
        "device " + incoming.uuid + " is stored as " + stored_as + " " + describe(stored->record) + "; " +
        describe(incoming) +
        " cannot take over its uuid (the sweeps stored on it would then belong to another device)"));
  };
  if (!is_profile(incoming) && !is_profile(stored->record)) {
    // A GPU's uuid is its hardware's: a new sweep may bring a new driver's name string and properties, but
    // never another chip. An import keeps what is stored.
    if (stored->record.arch != incoming.arch || stored->record.sm_count != incoming.sm_count ||
        (on_conflict == OnConflict::keep && stored->record.name != incoming.name))
      throw refuse("the GPU");
    if (on_conflict == OnConflict::keep) return stored->id;
    sql::Stmt update = db.prepare("UPDATE devices SET name = ?1, properties_json = ?2 WHERE id = ?3");
    update.bind(1, incoming.name).bind(2, incoming.properties_json).bind(3, stored->id).run();
    return stored->id;
  }
  if (!is_profile(incoming)) throw refuse("the profile");
  // A profile is what it says, not what it is called: one that differs from the stored profile of the
  // same name (a custom h100.json) is stored under a uuid of its own, derived from its content.
  const std::string uuid = content_uuid(incoming);
  const auto twin = find_device(db, uuid);
  if (!twin) return insert_device(db, uuid, incoming);
  if (same_content(twin->record, incoming)) return twin->id;
  throw StoreError(sql::one_line("device " + uuid + " is stored with other properties than " +
                                 describe(incoming) + " (a hash collision); refusing to change it"));
}

std::int64_t upsert_family(const sql::Db& db, const std::string& name, const std::string& template_hash,
                           const std::string& description_json, OnConflict on_conflict) {
  const std::string description =
      checked_json_object(description_json, "the description of family '" + name + "'");
  const char* sql =
      on_conflict == OnConflict::update
          ? "INSERT INTO families (name, template_hash, description_json, default_params_text) "
            "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name, template_hash) DO UPDATE SET "
            "description_json = excluded.description_json, "
            "default_params_text = excluded.default_params_text WHERE excluded.description_json <> '{}'"
          : "INSERT INTO families (name, template_hash, description_json, default_params_text) "
            "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name, template_hash) DO NOTHING";
  sql::Stmt upsert = db.prepare(sql);
  upsert.bind(1, name).bind(2, template_hash).bind(3, description).bind(4, default_params_text(description));
  upsert.run();
  sql::Stmt select = db.prepare("SELECT id FROM families WHERE name = ?1 AND template_hash = ?2");
  select.bind(1, name).bind(2, template_hash);
  return select_id(select);
}

std::int64_t upsert_problem(const sql::Db& db, const ProblemKey& problem) {
  const std::string size = problem.size_text();
  const std::string args = problem.args_text();
  sql::Stmt insert = db.prepare("INSERT OR IGNORE INTO problems (size_text, args_text) VALUES (?1, ?2)");
  insert.bind(1, size).bind(2, args).run();
  sql::Stmt select = db.prepare("SELECT id FROM problems WHERE size_text = ?1 AND args_text = ?2");
  select.bind(1, size).bind(2, args);
  return select_id(select);
}

std::int64_t insert_sweep(const sql::Db& db, const SweepRow& row) {
  sql::Stmt insert = db.prepare(
      "INSERT INTO sweeps (uid, device_id, family_id, problem_id, space_hash, kind, strategy, status, "
      "started_at, "
      "ended_at, tiletune_version, git_sha) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  insert.bind(1, row.uid).bind(2, row.device_id).bind(3, row.family_id).bind(4, row.problem_id);
  insert.bind(5, row.space_hash).bind(6, row.kind).bind(7, row.strategy).bind(8, row.status);
  insert.bind(9, row.started_at).bind(10, row.ended_at).bind(11, row.tiletune_version).bind(12, row.git_sha);
  insert.run();
  return db.last_insert_rowid();
}

bool sweep_uid_exists(const sql::Db& db, const std::string& uid) {
  sql::Stmt select = db.prepare("SELECT 1 FROM sweeps WHERE uid = ?1");
  select.bind(1, uid);
  return select.step();
}

std::string new_uid() {
  std::random_device entropy;
  std::string uid;
  for (int i = 0; i < 4; ++i) {
    std::array<char, 9> hex{};
    std::snprintf(hex.data(), hex.size(), "%08x", static_cast<unsigned>(entropy()));
    uid += hex.data();
  }
  return uid;
}

namespace {

// INSERT OR REPLACE of one result: its own columns, its value fields (result_fields()), when it was measured
// and its timed runs.
std::string insert_result_sql() {
  std::string columns = "sweep_id, configuration_id, outcome, reason, repetitions";
  for (const ResultField& f : result_fields()) columns += std::string(", ") + f.name;
  columns += ", measured_at, times_json";
  const std::size_t count = 7 + result_fields().size();
  std::string values;
  for (std::size_t i = 1; i <= count; ++i) values += (i > 1 ? ", ?" : "?") + std::to_string(i);
  return "INSERT OR REPLACE INTO results (" + columns + ") VALUES (" + values + ")";
}

}  // namespace

ResultWriter::ResultWriter(const sql::Db& db, std::int64_t family_id)
    : db_(db),
      family_id_(family_id),
      insert_configuration_(
          db.prepare("INSERT OR IGNORE INTO configurations (family_id, params_text) VALUES (?1, ?2)")),
      select_configuration_(
          db.prepare("SELECT id FROM configurations WHERE family_id = ?1 AND params_text = ?2")),
      insert_result_(db.prepare(insert_result_sql())) {}

void ResultWriter::write(std::int64_t sweep_id, const ResultRecord& r, const std::string& measured_at) {
  std::string params;
  try {
    params = params_to_text(r.params);
  } catch (const std::invalid_argument& e) {
    throw StoreError(e.what());
  }
  insert_configuration_.bind(1, family_id_).bind(2, params).run();
  insert_configuration_.reset();
  select_configuration_.bind(1, family_id_).bind(2, params);
  const std::int64_t configuration_id = select_id(select_configuration_);

  sql::Stmt& s = insert_result_;
  s.bind(1, sweep_id).bind(2, configuration_id).bind(3, to_string(r.outcome)).bind(4, r.reason);
  s.bind(5, r.repetitions);
  int i = 6;
  for (const ResultField& f : result_fields())
    visit_field(f, r, [&](const auto& value) { s.bind(i++, value); });
  s.bind(i, measured_at);
  s.bind(i + 1, times_json(r.times_ms));
  s.run();
  s.reset();
}

std::vector<SweepInfo> select_sweeps(const sql::Db& db, const SweepFilter& filter) {
  sql::Stmt select = db.prepare(
      "SELECT s.id, s.uid, f.name, f.template_hash, s.space_hash, d.name, d.uuid, d.arch, d.sm_count, "
      "d.is_profile, d.properties_json, p.size_text, p.args_text, s.kind, s.strategy, s.status, "
      "s.started_at, "
      "s.ended_at, s.tiletune_version, s.git_sha, (SELECT COUNT(*) FROM results r WHERE r.sweep_id = "
      "s.id), " +
      // A read-only open of a file before version 3 cannot migrate it: it has no best_found columns.
      std::string(db.query_int("PRAGMA user_version") >= 3 ? "s.best_found_count, s.best_found_seconds "
                                                           : "NULL, NULL ") +
      "FROM sweeps s JOIN families f ON f.id = s.family_id JOIN devices d ON d.id = s.device_id "
      "JOIN problems p ON p.id = s.problem_id "
      "WHERE (?1 IS NULL OR s.id = ?1) AND (?2 = '' OR f.name = ?2) AND (?3 = '' OR d.name = ?3) "
      "AND (?4 = '' OR d.uuid = ?4) AND (?5 = '' OR s.kind = ?5) "
      "AND (?6 IS NULL OR (p.size_text = ?6 AND p.args_text = ?7)) AND (?8 = 0 OR s.status <> 'done') "
      "ORDER BY s.started_at DESC, s.id DESC");
  select.bind(1, filter.id).bind(2, filter.family).bind(3, filter.device_name).bind(4, filter.device_uuid);
  select.bind(5, filter.kind);
  if (filter.problem) {
    select.bind(6, filter.problem->size_text()).bind(7, filter.problem->args_text());
  } else {
    select.bind(6, std::nullopt).bind(7, "");
  }
  select.bind(8, filter.not_done_only ? 1 : 0);
  std::vector<SweepInfo> sweeps;
  while (select.step()) {
    SweepInfo s;
    s.id = select.column_int64(0);
    s.uid = select.column_text(1);
    s.family = select.column_text(2);
    s.template_hash = select.column_text(3);
    s.space_hash = select.column_text(4);
    s.device.name = select.column_text(5);
    s.device.uuid = select.column_text(6);
    s.device.arch = select.column_text(7);
    s.device.sm_count = select.column_int(8);
    s.device.is_profile = select.column_int(9) != 0;
    s.device.properties_json = select.column_text(10);
    s.problem.dims = parse_size_text(select.column_text(11));
    s.problem.args = parse_args_text(select.column_text(12));
    s.kind = select.column_text(13);
    s.strategy = select.column_text(14);
    s.status = select.column_text(15);
    s.started_at = select.column_text(16);
    s.ended_at = select.column_text(17);
    s.tiletune_version = select.column_text(18);
    s.git_sha = select.column_text(19);
    s.result_count = select.column_int64(20);
    if (const auto n = select.column_optional_double(21)) s.best_found_count = static_cast<std::int64_t>(*n);
    s.best_found_seconds = select.column_optional_double(22);
    sweeps.push_back(std::move(s));
  }
  return sweeps;
}

std::int64_t sweep_family_id(const sql::Db& db, std::int64_t sweep_id) {
  sql::Stmt select = db.prepare("SELECT family_id FROM sweeps WHERE id = ?1");
  select.bind(1, sweep_id);
  if (!select.step()) throw StoreError("no sweep with id " + std::to_string(sweep_id));
  return select.column_int64(0);
}

std::vector<StoredResult> select_results(const sql::Db& db, std::int64_t sweep_id, std::size_t limit,
                                         bool with_pruned) {
  sql::Stmt select =
      db.prepare("SELECT " + result_columns_of(db) +
                 " FROM results r JOIN configurations c ON c.id = r.configuration_id "
                 "WHERE r.sweep_id = ?1" +
                 (with_pruned ? "" : " AND r.outcome <> 'pruned'") +
                 " ORDER BY CASE r.outcome WHEN 'ok' THEN 0 WHEN 'pruned' THEN 1 "
                 "WHEN 'compile_failed' THEN 2 WHEN 'launch_failed' THEN 3 WHEN 'runtime_failed' THEN 4 "
                 "WHEN 'timeout' THEN 5 WHEN 'wrong_result' THEN 6 ELSE 7 END, "
                 "r.median_ms IS NULL, r.median_ms, c.params_text LIMIT ?2");
  select.bind(1, sweep_id).bind(2, limit ? static_cast<std::int64_t>(limit) : std::int64_t{-1});
  std::vector<StoredResult> results;
  while (select.step()) results.push_back(read_result(select, 0));
  return results;
}

std::optional<StoredResult> select_result(const sql::Db& db, std::int64_t result_id) {
  sql::Stmt select =
      db.prepare("SELECT " + result_columns_of(db) +
                 " FROM results r JOIN configurations c ON c.id = r.configuration_id WHERE r.id = ?1");
  select.bind(1, result_id);
  if (!select.step()) return std::nullopt;
  return read_result(select, 0);
}

std::vector<BestRow> select_best_per_problem(const sql::Db& db, const std::string& family,
                                             const std::string& device_name) {
  sql::Stmt select = db.prepare(
      std::string("SELECT f.name, d.name, d.arch, p.size_text, p.args_text, ") + result_columns_of(db) +
      " FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY f.name, d.name, s.problem_id "
      "                                      ORDER BY r.median_ms, r.id) AS rank "
      "       FROM results r JOIN sweeps s ON s.id = r.sweep_id JOIN families f ON f.id = s.family_id "
      "       JOIN devices d ON d.id = s.device_id "
      "       WHERE r.outcome = 'ok' AND r.median_ms IS NOT NULL AND (?1 = '' OR f.name = ?1) "
      "       AND (?2 = '' OR d.name = ?2)) r "
      "JOIN configurations c ON c.id = r.configuration_id JOIN sweeps s ON s.id = r.sweep_id "
      "JOIN families f ON f.id = s.family_id JOIN devices d ON d.id = s.device_id "
      "JOIN problems p ON p.id = s.problem_id "
      "WHERE r.rank = 1 ORDER BY f.name, d.name, p.size_text, p.args_text");
  select.bind(1, family).bind(2, device_name);
  std::vector<BestRow> rows;
  while (select.step()) {
    BestRow row;
    row.family = select.column_text(0);
    row.device_name = select.column_text(1);
    row.arch = select.column_text(2);
    row.size_text = select.column_text(3);
    row.args_text = select.column_text(4);
    row.result = read_result(select, 5);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string number_text(double value) {
  std::array<char, 32> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return ec == std::errc() ? std::string(buffer.data(), end) : std::string();
}

std::string times_json(const std::vector<double>& times) {
  std::string text = "[";
  for (std::size_t i = 0; i < times.size(); ++i) text.append(i ? "," : "").append(number_text(times[i]));
  return text + "]";
}

std::vector<SweepInfo> sweeps_for_export(const sql::Db& db, const std::string& family,
                                         const std::string& device_name) {
  SweepFilter filter;
  filter.family = family;
  filter.device_name = device_name;
  auto sweeps = select_sweeps(db, filter);
  std::reverse(sweeps.begin(), sweeps.end());
  return sweeps;
}

std::string family_description(const sql::Db& db, const std::string& name, const std::string& template_hash) {
  sql::Stmt select =
      db.prepare("SELECT description_json FROM families WHERE name = ?1 AND template_hash = ?2");
  select.bind(1, name).bind(2, template_hash);
  return select.step() ? select.column_text(0) : "{}";
}

json object_or_empty(const std::string& text) {
  if (json_depth(text) > kMaxJsonDepth) return json::object();
  json parsed = json::parse(text, nullptr, false);
  return parsed.is_object() ? parsed : json::object();
}

std::string object_text_or_empty(const std::string& text) { return object_or_empty(text).dump(); }

void import_fail(const std::string& where, const std::string& why) {
  throw StoreError(sql::one_line("import: " + where + " " + why));
}

std::string shown(std::string_view text, std::size_t limit) {
  std::string_view part = text;
  if (part.size() > limit) {
    // Cut at the start of a UTF-8 sequence, never inside one.
    std::size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    part = text.substr(0, cut);
  }
  return sql::one_line(printable(part)) + (part.size() < text.size() ? "..." : "");
}

std::string in_quotes(std::string_view text, std::size_t limit) {
  return std::string("'").append(shown(text, limit)).append("'");
}

void check_sweep(const ImportedSweep& s, const Where& where) {
  if (s.uid.empty()) import_fail(where("uid"), "is empty");
  if (s.device.name.empty() || s.device.uuid.empty()) import_fail(where("device"), "needs a name and a uuid");
  if (s.family.empty()) import_fail(where("family.name"), "is empty");
  if (s.kind != "sweep" && s.kind != "plan")
    import_fail(where("kind"), in_quotes(s.kind) + " is not sweep or plan");
  if (s.status != "running" && s.status != "done" && s.status != "interrupted")
    import_fail(where("status"), in_quotes(s.status) + " is not running, done or interrupted");
  if (s.started_at.empty()) import_fail(where("started_at"), "is empty");
}

namespace {

void check_value(const Where& where, const std::string& key, const std::optional<double>& value,
                 bool positive, const char* what) {
  if (value && (!std::isfinite(*value) || *value < 0 || (positive && *value == 0)))
    import_fail(where(key), std::string("must be ") + what + ", got " + number_text(*value));
}

// Times, ratios and rates: finite, within their bounds, and the fastest run no slower than the median.
void check_values(const ResultRecord& r, const Where& where) {
  check_value(where, "median_ms", r.median_ms, true, "a positive, finite time in ms");
  check_value(where, "min_ms", r.min_ms, true, "a positive, finite time in ms");
  check_value(where, "spread", r.spread, false, "non-negative and finite");
  check_value(where, "metric", r.metric, false, "non-negative and finite");
  check_value(where, "error", r.error, false, "non-negative and finite");
  check_value(where, "sm_clock_mhz", r.sm_clock_mhz, true, "positive and finite");
  check_value(where, "compile_ms", r.compile_ms, false, "a non-negative, finite time in ms");
  check_value(where, "measure_ms", r.measure_ms, false, "a non-negative, finite time in ms");
  for (std::size_t i = 0; i < r.times_ms.size(); ++i)
    check_value(where, "times_ms[" + std::to_string(i) + "]", r.times_ms[i], true,
                "a positive, finite time in ms");
  check_value(where, "occupancy", r.occupancy, false, "between 0 and 1");
  if (r.occupancy && *r.occupancy > 1)
    import_fail(where("occupancy"), "must be between 0 and 1, got " + number_text(*r.occupancy));
  if (r.median_ms && r.min_ms && *r.min_ms > *r.median_ms)
    import_fail(where("min_ms"), "is larger than median_ms (" + number_text(*r.min_ms) + " > " +
                                     number_text(*r.median_ms) + ")");
}

}  // namespace

void check_measurement(const ResultRecord& r, bool measured, const Where& where) {
  check_values(r, where);
  for (const ResultField& f : result_fields())
    if (f.type == ResultField::Type::integer && r.*f.integer && *(r.*f.integer) < 0)
      import_fail(where(f.name), "must not be negative, got " + std::to_string(*(r.*f.integer)));
  if (r.repetitions < 0) import_fail(where("repetitions"), "is out of range");
  if (r.outcome != Outcome::ok) return;
  if (r.median_ms && r.repetitions < 1)
    import_fail(where("repetitions"),
                "must be at least 1 for an ok result with a time, got " + std::to_string(r.repetitions));
  if (measured && !r.median_ms)
    import_fail(where("median_ms"), "is missing: an ok result of a measured sweep has a time");
}

ImportSummary write_imported(const sql::Db& db, const std::vector<ImportedSweep>& sweeps,
                             const std::function<std::string(std::size_t, const std::string&)>& where,
                             const ImportPlanCheck& check) {
  ImportSummary summary;
  // One transaction for the whole file: a failure anywhere leaves the database as it was.
  sql::Transaction transaction(db);
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    const ImportedSweep& s = sweeps[i];
    if (sweep_uid_exists(db, s.uid)) {
      ++summary.sweeps_skipped;
      continue;
    }
    const auto fail = [&](const std::string& part, const StoreError& e) -> StoreError {
      return StoreError(sql::one_line("import: " + where(i, part) + ": " + e.what()));
    };
    SweepRow row;
    row.uid = s.uid;
    try {
      row.device_id = upsert_device(db, s.device, OnConflict::keep);
    } catch (const StoreError& e) {
      throw fail("device", e);
    }
    try {
      row.family_id = upsert_family(db, s.family, s.template_hash, s.description_json, OnConflict::keep);
    } catch (const StoreError& e) {
      throw fail("family", e);
    }
    row.problem_id = upsert_problem(db, s.problem);
    row.space_hash = s.space_hash;
    row.kind = s.kind;
    row.strategy = s.strategy;
    row.status = s.status;
    row.started_at = s.started_at;
    row.ended_at = s.ended_at;
    row.tiletune_version = s.tiletune_version;
    row.git_sha = s.git_sha;
    try {
      const std::int64_t sweep_id = insert_sweep(db, row);
      ResultWriter writer(db, row.family_id);
      for (const ImportedResult& r : s.results)
        writer.write(sweep_id,
                     checked_against_plan(r.record, check, s.family, s.device, s.problem, "imported as ok"),
                     r.measured_at);
      add_pruned(db, sweep_id, s.pruned, "pruned");
    } catch (const StoreError& e) {
      throw fail("", e);
    }
    ++summary.sweeps_added;
    summary.results_added += static_cast<int>(s.results.size());
  }
  transaction.commit();
  return summary;
}

}  // namespace tiletune::rows
