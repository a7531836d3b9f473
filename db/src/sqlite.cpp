#include "sqlite.hpp"

#include <sqlite3.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <system_error>

namespace tiletune::sql {

namespace {

constexpr int busy_timeout_ms = 5000;

// Reads the schema: the first read of a connection, where SQLite finds out whether it can read the file.
constexpr const char* probe_sql = "SELECT 1 FROM sqlite_schema LIMIT 1";

bool immutable_forced() {
  const char* value = std::getenv(immutable_environment);
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

// SQLite may be built to read any name that starts with "file:" as a URI (Debian's is); a path never is one.
std::string plain_name(const std::filesystem::path& path) {
  std::string name = path.string();
  if (name.rfind("file:", 0) == 0) name = "./" + name;
  return name;
}

// file:/absolute/path?mode=ro&immutable=1, every byte outside the unreserved set percent-encoded.
std::string immutable_uri(const std::filesystem::path& path) {
  std::string uri = "file:";
  for (const char ch : std::filesystem::absolute(path).string()) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0 || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      uri += ch;
    } else {
      std::array<char, 4> hex{};
      std::snprintf(hex.data(), hex.size(), "%%%02X", c);
      uri += hex.data();
    }
  }
  return uri + "?mode=ro&immutable=1";
}

std::uintmax_t size_or_zero(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

// Why the main file alone is not the whole database: changes beside it that an immutable read would miss.
std::optional<std::string> pending_changes(const std::filesystem::path& path) {
  const std::string wal = path.string() + "-wal", journal = path.string() + "-journal";
  if (size_or_zero(wal) > 0)
    return wal + " holds changes not yet in the database, which SQLite reads only with a -shm file it can " +
           "create beside it (copy the database and its -wal file to a writable directory)";
  if (size_or_zero(journal) > 0)
    return journal + " holds an unfinished transaction, which only a writable directory can roll back";
  return std::nullopt;
}

std::string printable_prefix(const char* bytes, std::size_t size) {
  std::string out;
  for (std::size_t i = 0; i < size; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      std::array<char, 5> hex{};
      std::snprintf(hex.data(), hex.size(), "\\x%02x", c);
      out += hex.data();
    }
  }
  return out;
}

}  // namespace

bool sqlite_ok(int rc) noexcept { return rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE; }

std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

void throw_sqlite_error(sqlite3* db, int rc, const char* call, const char* file, int line) {
  std::string message =
      std::string(call) + " failed: " + sqlite3_errstr(rc) + " (code " + std::to_string(rc) + ")";
  // sqlite3_errmsg describes the connection's latest error, which is this one for calls on that connection.
  if (db != nullptr) {
    const char* detail = sqlite3_errmsg(db);
    if (detail != nullptr && std::string_view(detail) != sqlite3_errstr(rc))
      message += std::string(": ") + detail;
  }
  message += " [" + std::filesystem::path(file).filename().string() + ":" + std::to_string(line) + "]";
  throw StoreError(one_line(message));
}

std::optional<std::string> not_sqlite_reason(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  if (std::filesystem::is_directory(path, ec)) return "it is a directory";
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) return std::nullopt;  // an empty file is an empty database to SQLite
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;  // let SQLite report why it cannot be read
  std::array<char, sqlite_header.size()> head{};
  in.read(head.data(), head.size());
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got == head.size() && std::string_view(head.data(), head.size()) == sqlite_header) return std::nullopt;
  return "not an SQLite database (it starts with \"" +
         printable_prefix(head.data(), std::min<std::size_t>(got, 8)) + "\")";
}

std::optional<FileHeader> read_file_header(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 100> head{};
  if (!in.read(reinterpret_cast<char*>(head.data()), head.size())) return std::nullopt;
  // Big-endian 32-bit integers at offsets 60 (user_version) and 68 (application_id).
  const auto at = [&](std::size_t offset) {
    const std::uint32_t value = (std::uint32_t{head[offset]} << 24) |
                                (std::uint32_t{head[offset + 1]} << 16) |
                                (std::uint32_t{head[offset + 2]} << 8) | std::uint32_t{head[offset + 3]};
    return static_cast<std::int64_t>(static_cast<std::int32_t>(value));
  };
  return FileHeader{at(60), at(68)};
}

void Db::check_path(const std::filesystem::path& path, Access access) {
  if (path.empty()) throw StoreError("cannot open database '': no path given");
  const std::string where = "cannot open database " + path.string() + ": ";
  if (path == ":memory:")
    throw StoreError(where + "that is SQLite's in-memory database, which keeps nothing; give a file");
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);  // follows links, as SQLite does
  if (std::filesystem::exists(status)) {
    if (std::filesystem::is_directory(status)) throw StoreError(where + "it is a directory");
    // A device or a pipe (/dev/null, a FIFO) would swallow writes or block reads.
    if (!std::filesystem::is_regular_file(status)) throw StoreError(where + "not a regular file");
    return;
  }
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw StoreError(one_line(where + ec.message()));
  const auto parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::exists(parent, ec))
    throw StoreError(where + "directory " + parent.string() + " does not exist");
  if (!std::filesystem::is_directory(parent, ec))
    throw StoreError(where + parent.string() + " is not a directory");
  if (access == Access::read_only) throw StoreError(where + "no such file");
}

Db Db::open(const std::filesystem::path& path, Access access) {
  check_path(path, access);
  const std::string where = "cannot open database " + path.string() + ": ";
  if (auto reason = not_sqlite_reason(path)) throw StoreError(where + *reason);
  if (access == Access::read_only) return open_read_only(path, where);
  Db db = open_raw(path, plain_name(path), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, where);
  if (sqlite3_db_readonly(db.db_, "main") == 1) throw StoreError(where + "the file is not writable");
  if (sqlite3_exec(db.db_, probe_sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
    const int code = sqlite3_extended_errcode(db.db_) & 0xff;
    std::string detail = sqlite3_errmsg(db.db_);
    if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN)
      detail = "its directory is not writable, and writing needs the -wal and -shm files beside it (" +
               detail + "; reading works without them)";
    throw StoreError(one_line(where + detail));
  }
  return db;
}

Db Db::open_read_only(const std::filesystem::path& path, const std::string& where) {
  const std::filesystem::path shm = path.string() + "-shm";
  if (!immutable_forced()) {
    Db db = open_raw(path, plain_name(path), SQLITE_OPEN_READONLY, where);
    // The first read is where a WAL database needs its -shm file.
    if (sqlite3_exec(db.db_, probe_sql, nullptr, nullptr, nullptr) == SQLITE_OK) return db;
    const int code = sqlite3_extended_errcode(db.db_) & 0xff;
    std::string detail = sqlite3_errmsg(db.db_);
    std::error_code ec;
    const bool shm_missing = !std::filesystem::exists(shm, ec);
    if ((code != SQLITE_READONLY && code != SQLITE_CANTOPEN) || !shm_missing) {
      // An existing -shm means someone may be writing: reading without locks would be unsafe.
      if (!shm_missing) detail += " (" + shm.string() + " exists but cannot be used)";
      throw StoreError(one_line(where + detail));
    }
  }
  // Immutable reads see only the main file, so nothing may be waiting beside it.
  if (auto why = pending_changes(path)) throw StoreError(one_line(where + *why));
  Db db = open_raw(path, immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, where);
  db.immutable_ = true;
  if (sqlite3_exec(db.db_, probe_sql, nullptr, nullptr, nullptr) != SQLITE_OK)
    throw StoreError(one_line(where + sqlite3_errmsg(db.db_)));
  return db;
}

Db Db::open_raw(const std::filesystem::path& path, const std::string& name, int flags,
                const std::string& where) {
  Db db;
  db.path_ = path;
  const int rc = sqlite3_open_v2(name.c_str(), &db.db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = db.db_ != nullptr ? sqlite3_errmsg(db.db_) : sqlite3_errstr(rc);
    if (rc == SQLITE_CANTOPEN && (flags & SQLITE_OPEN_CREATE) != 0) detail += " (is the directory writable?)";
    throw StoreError(one_line(where + detail));
  }
  TILETUNE_SQLITE_CHECK(db.db_, sqlite3_busy_timeout(db.db_, busy_timeout_ms));
  return db;
}

void Db::enable_wal_and_foreign_keys() const {
  // journal_mode answers with a row naming the mode now in force.
  Stmt wal = prepare("PRAGMA journal_mode=WAL");
  if (wal.step() && wal.column_text(0) != "wal")
    std::fprintf(stderr, "tiletune: %s: journal mode stays %s (WAL unavailable)\n", path_.c_str(),
                 wal.column_text(0).c_str());
  wal.reset();
  exec("PRAGMA foreign_keys=ON");
}

Db::Db(Db&& other) noexcept : db_(other.db_), path_(std::move(other.path_)), immutable_(other.immutable_) {
  other.db_ = nullptr;
}

Db& Db::operator=(Db&& other) noexcept {
  if (this != &other) {
    close();
    db_ = other.db_;
    path_ = std::move(other.path_);
    immutable_ = other.immutable_;
    other.db_ = nullptr;
  }
  return *this;
}

Db::~Db() { close(); }

void Db::close() noexcept {
  if (db_ == nullptr) return;
  const int rc = sqlite3_close(db_);
  if (rc != SQLITE_OK)
    std::fprintf(stderr, "tiletune: closing database %s failed: %s: %s\n", path_.c_str(), sqlite3_errstr(rc),
                 sqlite3_errmsg(db_));
  db_ = nullptr;
}

void Db::exec(const char* sql) const {
  TILETUNE_SQLITE_CHECK(db_, sqlite3_exec(db_, sql, nullptr, nullptr, nullptr));
}

Stmt Db::prepare(std::string_view sql, bool persistent) const {
  sqlite3_stmt* stmt = nullptr;
  TILETUNE_SQLITE_CHECK(db_, sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                                persistent ? SQLITE_PREPARE_PERSISTENT : 0, &stmt, nullptr));
  return Stmt(db_, stmt);
}

std::int64_t Db::last_insert_rowid() const noexcept { return sqlite3_last_insert_rowid(db_); }

int Db::changes() const noexcept { return sqlite3_changes(db_); }

std::int64_t Db::query_int(const char* sql) const {
  Stmt stmt = prepare(sql);
  if (!stmt.step()) throw StoreError(std::string(sql) + " returned no row");
  return stmt.column_int64(0);
}

Stmt::Stmt(Stmt&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

// sqlite3_finalize only repeats the latest step's error, which step() already reported.
Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::bind(int index, std::int64_t value) {
  TILETUNE_SQLITE_CHECK(db_, sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Stmt& Stmt::bind(int index, double value) {
  TILETUNE_SQLITE_CHECK(db_, sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Stmt& Stmt::bind(int index, std::string_view value) {
  TILETUNE_SQLITE_CHECK(
      db_, sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Stmt& Stmt::bind(int index, std::nullopt_t) {
  TILETUNE_SQLITE_CHECK(db_, sqlite3_bind_null(stmt_, index));
  return *this;
}

bool Stmt::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  std::string call = one_line(sqlite3_sql(stmt_));
  if (call.size() > 80) call = call.substr(0, 77) + "...";
  call = "sqlite3_step(" + call + ")";
  throw_sqlite_error(db_, rc, call.c_str(), __FILE__, __LINE__);
}

void Stmt::run() {
  while (step()) {
  }
}

void Stmt::reset() noexcept {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Stmt::is_null(int column) const noexcept { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::int64_t Stmt::column_int64(int column) const noexcept { return sqlite3_column_int64(stmt_, column); }

int Stmt::column_int(int column) const noexcept { return sqlite3_column_int(stmt_, column); }

double Stmt::column_double(int column) const noexcept { return sqlite3_column_double(stmt_, column); }

std::string Stmt::column_text(int column) const {
  const auto* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::string_view Stmt::column_view(int column) const noexcept {
  const auto* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))};
}

std::optional<double> Stmt::column_optional_double(int column) const noexcept {
  if (is_null(column)) return std::nullopt;
  return column_double(column);
}

std::optional<int> Stmt::column_optional_int(int column) const noexcept {
  if (is_null(column)) return std::nullopt;
  return column_int(column);
}

Transaction::Transaction(const Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

Transaction::~Transaction() {
  if (!open_) return;
  const int rc = sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  // A failed statement may already have rolled the transaction back; that is not worth a message.
  if (rc != SQLITE_OK && sqlite3_get_autocommit(db_.get()) == 0)
    std::fprintf(stderr, "tiletune: ROLLBACK on %s failed: %s\n", db_.path().c_str(),
                 sqlite3_errmsg(db_.get()));
}

}  // namespace tiletune::sql

namespace tiletune {

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return text.data();
}

}  // namespace tiletune
