#include <string>

#include "schema.hpp"

namespace tiletune::schema {

namespace {

void check_ids(std::int64_t version, std::int64_t app_id) {
  if (app_id != 0 && app_id != application_id)
    throw StoreError("an SQLite database of another application (application_id " + std::to_string(app_id) +
                     "), not a tiletune database");
  if (version > current_version)
    throw StoreError("schema version " + std::to_string(version) + " is newer than this tiletune (knows " +
                     std::to_string(current_version) + ")");
  if (version < 0)
    throw StoreError("schema version " + std::to_string(version) + " is not a tiletune version");
  if (version > 0 && app_id != application_id)
    throw StoreError("not a tiletune database (user_version " + std::to_string(version) +
                     " without tiletune's application_id)");
}

}  // namespace

void check_file_header(const std::filesystem::path& path) {
  if (sql::not_sqlite_reason(path)) return;  // Db::open says so, in its own words
  if (const auto header = sql::read_file_header(path))
    check_ids(header->user_version, header->application_id);
}

int check_known(const sql::Db& db) {
  const std::int64_t version = db.query_int("PRAGMA user_version");
  const std::int64_t app_id = db.query_int("PRAGMA application_id");
  check_ids(version, app_id);
  if (version == 0) {
    // A database with someone else's tables: refuse rather than mix ours in.
    sql::Stmt tables = db.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "ORDER BY name LIMIT 4");
    std::string names;
    int count = 0;
    while (tables.step()) {
      if (++count == 4) {
        names += ", ...";
        break;
      }
      names += (names.empty() ? "" : ", ") + tables.column_text(0);
    }
    if (count > 0)
      throw StoreError("an SQLite database with tables that are not tiletune's (" + names +
                       "); refusing to add tiletune tables to it");
    return 0;
  }
  return static_cast<int>(version);
}

void check_integrity(const sql::Db& db) {
  std::string first;
  try {
    sql::Stmt check = db.prepare("PRAGMA integrity_check(1)");
    if (check.step()) first = check.column_text(0);
  } catch (const StoreError& e) {
    first = e.what();  // too damaged to be checked
  }
  if (first != "ok")
    throw StoreError(sql::one_line("fails PRAGMA integrity_check (" + first.substr(0, 200) +
                                   "); nothing was written: restore it from a copy or export what it "
                                   "still holds"));
}

}  // namespace tiletune::schema
