#include "tiletune/store.hpp"

#include "best_query.hpp"
#include "pruned.hpp"
#include "schema.hpp"
#include "store_rows.hpp"
#include "tiletune/build_info.hpp"

namespace tiletune {

namespace {

// Malformed text read back from a row (hand-edited database) still surfaces as a StoreError.
template <typename F>
auto as_store_error(const char* what, F&& body) {
  try {
    return body();
  } catch (const std::invalid_argument& e) {
    throw StoreError(std::string(what) + ": " + e.what());
  }
}

void check_problem(const ProblemKey& problem, const std::string& what) {
  if (problem.dims.empty()) throw StoreError(what + ": the problem has no dimensions");
  for (const auto dim : problem.dims)
    if (dim <= 0)
      throw StoreError(what + ": size must be positive integers separated by 'x', got '" +
                       problem.size_text() + "'");
  try {
    (void)problem.args_text();
  } catch (const std::invalid_argument& e) {
    throw StoreError(what + ": " + e.what());
  }
}

void check_spec(const SweepSpec& spec, const std::string& what) {
  if (spec.family.empty()) throw StoreError(what + ": the family name is empty");
  if (spec.device.uuid.empty()) throw StoreError(what + ": the device uuid is empty");
  if (spec.device.name.empty()) throw StoreError(what + ": the device name is empty");
  check_problem(spec.problem, what);
}

// The device, family, problem and sweep rows of a new sweep, inside the caller's transaction.
std::int64_t create_sweep_rows(const sql::Db& db, const SweepSpec& spec, const std::string& what) {
  rows::SweepRow row;
  try {
    row.device_id = rows::upsert_device(db, spec.device, rows::OnConflict::update);
  } catch (const StoreError& e) {
    throw StoreError(what + ": " + e.what());
  }
  row.family_id =
      rows::upsert_family(db, spec.family, spec.template_hash, spec.family_json, rows::OnConflict::update);
  row.problem_id = rows::upsert_problem(db, spec.problem);
  row.uid = rows::new_uid();
  row.space_hash = spec.space_hash;
  row.kind = spec.kind;
  row.strategy = spec.strategy;
  row.status = "running";
  row.started_at = sql::utc_now_iso8601();
  row.tiletune_version = spec.tiletune_version.empty() ? TILETUNE_VERSION : spec.tiletune_version;
  row.git_sha = spec.git_sha.empty() ? TILETUNE_GIT_SHA : spec.git_sha;
  return rows::insert_sweep(db, row);
}

void set_status(const sql::Db& db, std::int64_t sweep_id, const std::string& status) {
  sql::Stmt update = db.prepare("UPDATE sweeps SET status = ?1, ended_at = ?2 WHERE id = ?3");
  update.bind(1, status).bind(2, sql::utc_now_iso8601()).bind(3, sweep_id).run();
  if (db.changes() == 0) throw StoreError("finish_sweep: no sweep with id " + std::to_string(sweep_id));
}

}  // namespace

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Store Store::open(const std::filesystem::path& path, Mode mode) {
  const bool writable = mode == Mode::read_write;
  const auto access = writable ? sql::Db::Access::read_write_create : sql::Db::Access::read_only;
  sql::Db::check_path(path, access);
  try {
    schema::check_file_header(path);
  } catch (const StoreError& e) {
    throw StoreError("cannot open database " + path.string() + ": " + e.what());
  }
  auto impl = std::make_unique<Impl>();
  impl->db = sql::Db::open(path, access);
  try {
    // Check what the file is before anything (WAL included) may write to it.
    const int version = schema::check_known(impl->db);
    if (writable) {
      if (version > 0) schema::check_integrity(impl->db);
      impl->db.enable_wal_and_foreign_keys();
      schema::migrate(impl->db);
    } else if (version == 0) {
      // An older version is read as it is (store_rows.cpp reads what it lacks as not measured).
      throw StoreError("no tiletune schema yet (open it read-write to create one)");
    }
  } catch (const StoreError& e) {
    throw StoreError("cannot open database " + path.string() + ": " + e.what());
  }
  return Store(std::move(impl));
}

std::int64_t Store::begin_sweep(const SweepSpec& spec) {
  check_spec(spec, "begin_sweep");
  const sql::Db& db = impl_->db;
  sql::Transaction transaction(db);
  const std::int64_t id = create_sweep_rows(db, spec, "begin_sweep");
  transaction.commit();
  return id;
}

std::int64_t Store::add_sweep(const SweepSpec& spec, const std::vector<ResultRecord>& records,
                              const std::string& status, const PrunedCounts& pruned) {
  check_spec(spec, "add_sweep");
  if (status.empty()) throw StoreError("add_sweep: the status is empty");
  const sql::Db& db = impl_->db;
  sql::Transaction transaction(db);
  const std::int64_t id = create_sweep_rows(db, spec, "add_sweep");
  rows::ResultWriter writer(db, rows::sweep_family_id(db, id));
  const std::string now = sql::utc_now_iso8601();
  for (const ResultRecord& record : records) writer.write(id, record, now);
  rows::add_pruned(db, id, pruned, "add_sweep");
  set_status(db, id, status);
  transaction.commit();
  return id;
}

void Store::add_results(std::int64_t sweep_id, const std::vector<ResultRecord>& records) {
  const sql::Db& db = impl_->db;
  sql::Transaction transaction(db);
  rows::ResultWriter writer(db, rows::sweep_family_id(db, sweep_id));
  const std::string now = sql::utc_now_iso8601();
  for (const ResultRecord& record : records) writer.write(sweep_id, record, now);
  transaction.commit();
}

void Store::finish_sweep(std::int64_t sweep_id, const std::string& status) {
  if (status.empty()) throw StoreError("finish_sweep: the status is empty");
  set_status(impl_->db, sweep_id, status);
}

void Store::set_best_found(std::int64_t sweep_id, std::int64_t measurement, double seconds) {
  const sql::Db& db = impl_->db;
  sql::Stmt update =
      db.prepare("UPDATE sweeps SET best_found_count = ?1, best_found_seconds = ?2 WHERE id = ?3");
  update.bind(1, measurement).bind(2, seconds).bind(3, sweep_id).run();
  if (db.changes() == 0) throw StoreError("set_best_found: no sweep with id " + std::to_string(sweep_id));
}

std::optional<SweepInfo> Store::sweep(std::int64_t sweep_id) const {
  rows::SweepFilter filter;
  filter.id = sweep_id;
  auto found = as_store_error("sweep", [&] { return rows::select_sweeps(impl_->db, filter); });
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<SweepInfo> Store::sweeps(const std::string& family, const std::string& device_name,
                                     const std::optional<ProblemKey>& problem) const {
  rows::SweepFilter filter;
  filter.family = family;
  filter.device_name = device_name;
  filter.problem = problem;
  return as_store_error("sweeps", [&] { return rows::select_sweeps(impl_->db, filter); });
}

std::optional<SweepInfo> Store::resumable_sweep(const std::string& family, const std::string& device_uuid,
                                                const ProblemKey& problem) const {
  if (family.empty() || device_uuid.empty()) return std::nullopt;
  rows::SweepFilter filter;
  filter.family = family;
  filter.device_uuid = device_uuid;
  filter.problem = problem;
  filter.kind = "sweep";
  filter.not_done_only = true;
  auto found = as_store_error("resumable_sweep", [&] { return rows::select_sweeps(impl_->db, filter); });
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<std::string> Store::stored_param_keys(std::int64_t sweep_id) const {
  sql::Stmt select = impl_->db.prepare(
      "SELECT c.params_text FROM results r JOIN configurations c ON c.id = r.configuration_id "
      "WHERE r.sweep_id = ?1 ORDER BY c.params_text");
  select.bind(1, sweep_id);
  std::vector<std::string> keys;
  while (select.step()) keys.push_back(select.column_text(0));
  return keys;
}

std::vector<StoredResult> Store::results(std::int64_t sweep_id, std::size_t limit) const {
  return as_store_error("results", [&] { return rows::select_results(impl_->db, sweep_id, limit); });
}

std::vector<StoredResult> Store::measured_results(std::int64_t sweep_id) const {
  return as_store_error("results",
                        [&] { return rows::select_results(impl_->db, sweep_id, 0, /*with_pruned=*/false); });
}

std::vector<BestConfig> Store::best_per_problem(const std::string& family,
                                                const std::string& device_name) const {
  return rows::select_best_per_problem(impl_->db, family, device_name);
}

std::optional<StoredResult> Store::best(const std::string& family, const std::string& device_name,
                                        const ProblemKey& problem) const {
  std::string size, args;
  try {
    size = problem.size_text();
    args = problem.args_text();
  } catch (const std::invalid_argument& e) {
    throw StoreError(std::string("best: ") + e.what());
  }
  // The fastest ok result of each matching sweep, then the fastest of those.
  sql::Stmt select = impl_->db.prepare(best_query::select("r.id"));
  select.bind(1, family).bind(2, device_name).bind(3, size).bind(4, args);
  if (!select.step()) return std::nullopt;
  const std::int64_t result_id = select.column_int64(0);
  return as_store_error("best", [&] { return rows::select_result(impl_->db, result_id); });
}

std::string Store::family_description(const std::string& family, const std::string& template_hash) const {
  return rows::family_description(impl_->db, family, template_hash);
}

bool Store::integrity_ok() const {
  try {
    sql::Stmt check = impl_->db.prepare("PRAGMA integrity_check");
    return check.step() && check.column_text(0) == "ok";
  } catch (const StoreError&) {
    return false;  // a database too damaged to check is not intact
  }
}

}  // namespace tiletune
