// What opening does with files that are not (or not yet, or no longer) tiletune databases.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.hpp"
#include "tiletune/client.hpp"

namespace tiletune {
namespace {

std::string store_open_error(const std::filesystem::path& path, Store::Mode mode = Store::Mode::read_write) {
  try {
    Store::open(path, mode);
  } catch (const StoreError& e) {
    return e.what();
  }
  return "(opened)";
}

std::string client_open_error(const std::filesystem::path& path) {
  std::string error;
  const auto client = Client::open(path, &error);
  return client ? "(opened)" : error;
}

void run_sql(const std::filesystem::path& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

std::vector<std::string> directory_listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// A file that is not ours must come back as one clear line naming it, and be left exactly as it was.
void expect_refused_untouched(const std::filesystem::path& path, const std::string& expected_part) {
  const std::string before = test::read_bytes(path);
  const auto listing = directory_listing(path.parent_path());
  for (const std::string& message :
       {store_open_error(path), store_open_error(path, Store::Mode::read_only), client_open_error(path)}) {
    EXPECT_NE(message, "(opened)");
    EXPECT_TRUE(test::one_line(message)) << message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find(expected_part), std::string::npos) << message;
  }
  EXPECT_EQ(test::read_bytes(path), before);
  EXPECT_EQ(directory_listing(path.parent_path()), listing);
}

TEST(Open, RandomBytesAreRefusedAndLeftUnchanged) {
  test::TempDir dir;
  const auto path = dir / "random.db";
  test::write_bytes(path, test::random_bytes(8192, 7));
  expect_refused_untouched(path, "not an SQLite database");
}

TEST(Open, TextFileIsRefusedAndLeftUnchanged) {
  test::TempDir dir;
  const auto path = dir / "notes.db";
  test::write_bytes(path, "device,time\nH100,1.0\n");
  expect_refused_untouched(path, "not an SQLite database");
}

TEST(Open, SqliteHeaderFollowedByGarbageIsRefusedAndLeftUnchanged) {
  test::TempDir dir;
  const auto path = dir / "damaged.db";
  test::write_bytes(path, std::string("SQLite format 3\0", 16) + test::random_bytes(4080, 11));
  const std::string before = test::read_bytes(path);
  const std::string message = store_open_error(path);
  EXPECT_NE(message, "(opened)");
  EXPECT_TRUE(test::one_line(message)) << message;
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_EQ(client_open_error(path).find("(opened)"), std::string::npos);
  EXPECT_EQ(test::read_bytes(path), before);
}

TEST(Open, ForeignSqliteDatabaseIsRefusedAndLeftUnchanged) {
  test::TempDir dir;
  const auto path = dir / "other.db";
  run_sql(path,
          "CREATE TABLE inventory (item TEXT, count INTEGER); INSERT INTO inventory VALUES ('gpu', 8);");
  expect_refused_untouched(path, "not tiletune's");
}

TEST(Open, NewerSchemaIsRefused) {
  test::TempDir dir;
  const auto path = dir / "future.db";
  Store::open(path).begin_sweep(test::spec("gemm_tiled", test::h100, {8, 8, 8}));
  run_sql(path, "PRAGMA user_version = 99");
  expect_refused_untouched(path, "schema version 99 is newer than this tiletune (knows 4)");
}

TEST(Open, OtherApplicationIdIsRefused) {
  test::TempDir dir;
  const auto path = dir / "app.db";
  run_sql(path, "PRAGMA application_id = 1234; PRAGMA user_version = 1;");
  expect_refused_untouched(path, "another application");
}

TEST(Open, MissingDirectoryIsAnError) {
  test::TempDir dir;
  const auto path = dir / "no" / "such" / "dir" / "tune.db";
  const std::string message = store_open_error(path);
  EXPECT_EQ(message.rfind("cannot open database " + path.string() + ": ", 0), 0u) << message;
  EXPECT_TRUE(test::one_line(message));
  EXPECT_FALSE(std::filesystem::exists(dir / "no"));
}

TEST(Open, ParentThatIsAFileIsAnError) {
  test::TempDir dir;
  test::write_bytes(dir / "plain", "x");
  const auto path = dir / "plain" / "tune.db";
  const std::string message = store_open_error(path);
  EXPECT_EQ(message.rfind("cannot open database " + path.string() + ": ", 0), 0u) << message;
}

TEST(Open, UnwritableDirectoryIsAnError) {
  test::TempDir dir;
  std::filesystem::path path = "/proc/tiletune-test.db";  // not writable even for root
  if (::geteuid() != 0) {
    std::filesystem::create_directory(dir / "locked");
    std::filesystem::permissions(dir / "locked",
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    path = dir / "locked" / "tune.db";
  } else if (!std::filesystem::is_directory("/proc")) {
    GTEST_SKIP() << "root writes anywhere, and there is no /proc here";
  }
  const std::string message = store_open_error(path);
  EXPECT_EQ(message.rfind("cannot open database " + path.string() + ": ", 0), 0u) << message;
  EXPECT_TRUE(test::one_line(message)) << message;
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Open, ClientNeverCreatesAFile) {
  test::TempDir dir;
  const auto path = dir / "absent.db";
  const std::string message = client_open_error(path);
  EXPECT_NE(message, "(opened)");
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(Client::open(path).has_value());  // no error pointer: still no throw
}

TEST(Open, ClientRefusesAnEmptyFile) {
  test::TempDir dir;
  const auto path = dir / "empty.db";
  test::write_bytes(path, "");
  EXPECT_NE(client_open_error(path).find("not a tiletune database"), std::string::npos);
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
}

TEST(Open, EmptyFileBecomesADatabase) {
  test::TempDir dir;
  const auto path = dir / "empty.db";
  test::write_bytes(path, "");
  Store store = Store::open(path);
  EXPECT_TRUE(store.integrity_ok());
  EXPECT_TRUE(Client::open(path).has_value());
}

TEST(Open, ReopeningKeepsTheSchemaVersion) {
  test::TempDir dir;
  const auto path = dir / "t.db";
  { Store::open(path); }
  { Store::open(path); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), Store::schema_version);
  sqlite3_finalize(stmt);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(Open, IntegrityCheckNoticesDamage) {
  test::TempDir dir;
  const auto path = dir / "t.db";
  {
    Store store = Store::open(path);
    EXPECT_TRUE(store.integrity_ok());
    for (int i = 0; i < 20; ++i) {
      const std::int64_t id = store.begin_sweep(test::spec("gemm_tiled", test::h100, {64 + i, 64, 64}));
      std::vector<ResultRecord> records;
      for (int t = 1; t <= 50; ++t) records.push_back(test::ok({{"TILE", t}}, 1.0 + t));
      store.add_results(id, records);
    }
  }
  // Overwrite the middle of the file (table and index pages), keeping the header page intact.
  std::string bytes = test::read_bytes(path);
  ASSERT_GT(bytes.size(), 4 * 4096u);
  const std::string noise = test::random_bytes(bytes.size() / 2, 3);
  bytes.replace(4096 * 2, noise.size() - 4096 * 2, noise.substr(0, noise.size() - 4096 * 2));
  test::write_bytes(path, bytes);
  // Opening to read reads only the header page, so the damage shows in the check, not before; opening to
  // write checks first, and refuses.
  Store store = Store::open(path, Store::Mode::read_only);
  EXPECT_FALSE(store.integrity_ok());
  const std::string message = store_open_error(path);
  EXPECT_TRUE(test::one_line(message)) << message;
  EXPECT_NE(message.find("fails PRAGMA integrity_check"), std::string::npos) << message;
}

// A database cut short (a copy that stopped half-way) is refused by every writer before it writes: nothing
// is added to it, and its bytes stay as they were.
TEST(Open, WritersRefuseADatabaseCutShort) {
  test::TempDir dir;
  const auto path = dir / "t.db";
  {
    Store store = Store::open(path);
    for (int i = 0; i < 20; ++i) {
      const std::int64_t id = store.begin_sweep(test::spec("gemm_tiled", test::h100, {64 + i, 64, 64}));
      std::vector<ResultRecord> records;
      for (int t = 1; t <= 50; ++t) records.push_back(test::ok({{"TILE", t}}, 1.0 + t));
      store.add_results(id, records);
    }
  }
  std::string bytes = test::read_bytes(path);
  ASSERT_GT(bytes.size(), 8 * 4096u);
  bytes.resize(bytes.size() - 100);  // within the last page: SQLite still reads and writes it
  test::write_bytes(path, bytes);
  const std::string message = store_open_error(path);
  EXPECT_TRUE(test::one_line(message)) << message;
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("fails PRAGMA integrity_check"), std::string::npos) << message;
  EXPECT_EQ(test::read_bytes(path), bytes);
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal") &&
               std::filesystem::file_size(path.string() + "-wal") > 0);
}

// Paths that cannot name a database file: refused before SQLite sees them (an empty path would be SQLite's
// temporary database, ":memory:" its in-memory one, /dev/null would swallow every write, a FIFO would block
// the header read forever), and nothing is created.
TEST(Open, PathsThatNameNoDatabaseFileAreRefused) {
  test::TempDir dir;
  std::filesystem::create_directory(dir / "folder");
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  const auto listing = directory_listing(dir.path());
  struct Case {
    std::filesystem::path path;
    std::string expected;
  } cases[] = {
      {"", "cannot open database '': no path given"},
      {":memory:", "cannot open database :memory:: that is SQLite's in-memory database"},
      {dir / "folder", "it is a directory"},
      {"/dev/null", "not a regular file"},
      {dir / "pipe", "not a regular file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path.string());
    for (const std::string& message :
         {store_open_error(c.path), store_open_error(c.path, Store::Mode::read_only),
          client_open_error(c.path)}) {
      EXPECT_TRUE(test::one_line(message)) << message;
      EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    }
  }
  EXPECT_EQ(directory_listing(dir.path()), listing);
}

TEST(Open, ReadingUnderAMissingDirectorySaysSo) {
  test::TempDir dir;
  const auto path = dir / "no" / "tune.db";
  for (const std::string& message :
       {store_open_error(path, Store::Mode::read_only), client_open_error(path)}) {
    EXPECT_TRUE(test::one_line(message)) << message;
    EXPECT_NE(message.find("directory " + (dir / "no").string() + " does not exist"), std::string::npos)
        << message;
  }
}

// SQLite (as Debian builds it) reads a name that starts with "file:" as a URI; a path is always a file.
TEST(Open, PathThatLooksLikeAUriIsAFile) {
  test::TempDir dir;
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  const std::filesystem::path name = "file:tune.db?mode=memory";
  {
    Store store = Store::open(name);
    store.begin_sweep(test::spec("gemm_tiled", test::h100, {8, 8, 8}));
  }
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / name.string()));
  EXPECT_EQ(Store::open(name, Store::Mode::read_only).sweeps().size(), 1u);
  EXPECT_TRUE(Client::open(name).has_value());
  std::filesystem::current_path(cwd);
}

}  // namespace
}  // namespace tiletune
