// A small RAII layer over the SQLite C API, private to db/. Errors become one-line StoreErrors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "tiletune/records.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace tiletune::sql {

// Throws StoreError: "CALL failed: ERRSTR (code N): ERRMSG [FILE:LINE]".
[[noreturn]] void throw_sqlite_error(sqlite3* db, int rc, const char* call, const char* file, int line);
// True for SQLITE_OK, SQLITE_ROW and SQLITE_DONE.
bool sqlite_ok(int rc) noexcept;

// Replaces line breaks so that every message we raise stays on one line.
std::string one_line(std::string_view text);

}  // namespace tiletune::sql

// The one checking macro for SQLite calls: reports the call text, the error's name and message, file and
// line.
#define TILETUNE_SQLITE_CHECK(db, call)                                                          \
  do {                                                                                           \
    const int tiletune_sqlite_rc_ = (call);                                                      \
    if (!::tiletune::sql::sqlite_ok(tiletune_sqlite_rc_))                                        \
      ::tiletune::sql::throw_sqlite_error((db), tiletune_sqlite_rc_, #call, __FILE__, __LINE__); \
  } while (false)

namespace tiletune::sql {

class Stmt;

// The 16 bytes every SQLite 3 database file starts with.
inline constexpr std::string_view sqlite_header{"SQLite format 3\0", 16};

// An existing, non-empty file that does not start with the SQLite header: returns why, in one line
// ("not an SQLite database (it starts with ...)"). Reads only; never modifies the file.
std::optional<std::string> not_sqlite_reason(const std::filesystem::path& path);

// The fields of a database file's 100-byte header that say whose it is and which schema it holds.
struct FileHeader {
  std::int64_t user_version = 0;
  std::int64_t application_id = 0;
};
// Reads the header of an existing SQLite file without opening it with SQLite (so no -wal or -shm file
// appears); nullopt when the file is missing, empty or shorter than a header.
std::optional<FileHeader> read_file_header(const std::filesystem::path& path);

// The environment variable that makes every read-only open immutable (see Db::open).
inline constexpr const char* immutable_environment = "TILETUNE_DB_IMMUTABLE";

class Db {
 public:
  enum class Access { read_only, read_write_create };

  // Throws StoreError "cannot open database PATH: ..." when the path cannot name a database file to open
  // this way: empty, ":memory:", a directory or another non-regular file, and for read_only a missing file.
  // Touches nothing; Store and Client call it before they read the file's header.
  static void check_path(const std::filesystem::path& path, Access access);

  Db() = default;
  // Opens with a 5 s busy timeout. Read-write opens do not change the file yet: the caller checks what it is
  // first and then calls enable_wal_and_foreign_keys(). Throws StoreError "cannot open database PATH: ...".
  // A read-only open of a WAL database needs its -shm file, which SQLite creates beside it; where it cannot
  // (a read-only directory or medium) and no -shm, -wal or hot -journal file is there, the file is opened
  // immutable (SQLite's immutable=1: no locks, no -wal or -shm; valid only while no one writes it). Setting
  // TILETUNE_DB_IMMUTABLE=1 opens every read-only database that way.
  static Db open(const std::filesystem::path& path, Access access);

  Db(Db&& other) noexcept;
  Db& operator=(Db&& other) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();

  sqlite3* get() const noexcept { return db_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  // True when opened with immutable=1 (see open).
  bool immutable() const noexcept { return immutable_; }

  // Statements without parameters and without rows (DDL, BEGIN, PRAGMA assignments).
  void exec(const char* sql) const;
  Stmt prepare(std::string_view sql, bool persistent = false) const;
  std::int64_t last_insert_rowid() const noexcept;
  int changes() const noexcept;
  // A single integer row, e.g. "PRAGMA user_version".
  std::int64_t query_int(const char* sql) const;
  void enable_wal_and_foreign_keys() const;

 private:
  static Db open_read_only(const std::filesystem::path& path, const std::string& where);
  // sqlite3_open_v2 with the busy timeout; `name` is what SQLite gets (a path or a URI).
  static Db open_raw(const std::filesystem::path& path, const std::string& name, int flags,
                     const std::string& where);
  void close() noexcept;
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
  bool immutable_ = false;
};

class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, sqlite3_stmt* stmt) noexcept : db_(db), stmt_(stmt) {}
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  // Parameters are 1-based, as in SQLite. Text is copied (SQLITE_TRANSIENT).
  Stmt& bind(int index, std::int64_t value);
  Stmt& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Stmt& bind(int index, double value);
  Stmt& bind(int index, std::string_view value);
  Stmt& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Stmt& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Stmt& bind(int index, std::nullopt_t);
  template <typename T>
  Stmt& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind(index, std::nullopt);
  }

  // True when a row is ready, false when done. Throws StoreError on failure.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  // Makes the statement ready to run again with new bindings.
  void reset() noexcept;

  bool is_null(int column) const noexcept;
  std::int64_t column_int64(int column) const noexcept;
  int column_int(int column) const noexcept;
  double column_double(int column) const noexcept;
  std::string column_text(int column) const;
  // Valid until the next step or reset.
  std::string_view column_view(int column) const noexcept;
  std::optional<double> column_optional_double(int column) const noexcept;
  std::optional<int> column_optional_int(int column) const noexcept;

  sqlite3_stmt* get() const noexcept { return stmt_; }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// Resets a reused statement when a scope ends, so that it holds no read lock between queries.
class ResetOnExit {
 public:
  explicit ResetOnExit(Stmt& stmt) noexcept : stmt_(stmt) {}
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;
  ~ResetOnExit() { stmt_.reset(); }

 private:
  Stmt& stmt_;
};

// BEGIN IMMEDIATE on construction; rolls back in the destructor unless commit() ran.
class Transaction {
 public:
  explicit Transaction(const Db& db);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  const Db& db_;
  bool open_ = true;
};

using tiletune::utc_now_iso8601;

}  // namespace tiletune::sql
