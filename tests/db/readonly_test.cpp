// Databases that can only be read: in a read-only directory or medium, or opened immutable on purpose.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <optional>

#include "test_support.hpp"
#include "tiletune/client.hpp"

namespace tiletune {
namespace {

using test::h100;
using test::ok;
using test::spec;

constexpr uid_t nobody = 65534;
const ProblemKey problem{{1000, 1000, 1000}, {}};

// A WAL database with one sweep, closed: SQLite removes its -wal and -shm files, and the header keeps
// saying WAL.
void make_database(const std::filesystem::path& path) {
  Store store = Store::open(path);
  const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  store.add_results(id, {ok({{"TILE", 32}, {"BLOCK_Y", 8}}, 1.0), ok({{"TILE", 16}, {"BLOCK_Y", 4}}, 2.0)});
  store.finish_sweep(id, "done");
}

std::vector<std::string> listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// Every read path on `path`: "ok", or what went wrong, in one line.
std::string read_everything(const std::filesystem::path& path) {
  std::string error;
  const auto client = Client::open(path, &error);
  if (!client) return "Client::open: " + error;
  const Lookup lookup = client->best({"gemm_tiled", h100.name, "sm_90", problem});
  if (lookup.match != Match::exact || lookup.params != Params{{"TILE", 32}, {"BLOCK_Y", 8}})
    return "Client::best: " + lookup.message;
  try {
    const Store store = Store::open(path, Store::Mode::read_only);
    if (store.sweeps().size() != 1) return "Store::sweeps: not one sweep";
    if (store.results(store.sweeps().front().id).size() != 2) return "Store::results: not two results";
    if (store.export_json().find("gemm_tiled") == std::string::npos) return "export_json: no gemm_tiled";
  } catch (const StoreError& e) {
    return std::string("Store: ") + e.what();
  }
  return "ok";
}

// Sets an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

struct ChildReport {
  std::optional<std::string> skipped;  // why the case could not be set up here
  std::string report;                  // what `body` returned
};

// Runs `body` in a child process for which `dir` is read-only: `dir` gets mode 0555, and a root parent's
// child becomes user nobody first (root writes through 0555). Skips when the child can still create a file
// in `dir`, as root can where it cannot drop its privileges.
ChildReport run_unable_to_write(const std::filesystem::path& dir, const std::function<std::string()>& body) {
  namespace fs = std::filesystem;
  fs::permissions(dir.parent_path(), fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  for (const auto& entry : fs::directory_iterator(dir))
    fs::permissions(entry.path(), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {"pipe() failed", ""};
  const pid_t pid = ::fork();
  if (pid < 0) return {"fork() failed", ""};
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string report;
    if (::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setgid(nobody) != 0 || ::setuid(nobody) != 0)) {
      report = "SKIP root cannot drop its privileges here, and root writes through mode 0555";
    } else {
      const std::string probe = (dir / "write-probe").string();
      const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
      if (fd >= 0) {
        ::close(fd);
        ::unlink(probe.c_str());
        report = "SKIP the directory is still writable (a file system that ignores modes?)";
      } else {
        report = body();
      }
    }
    const char* data = report.data();
    std::size_t left = report.size();
    while (left > 0) {
      const ssize_t n = ::write(pipe_fds[1], data, left);
      if (n <= 0) break;
      data += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);  // so that the test can clean up
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {std::nullopt, "child crashed: " + out};
  if (out.rfind("SKIP ", 0) == 0) return {out.substr(5), ""};
  return {std::nullopt, out};
}

bool header_says_wal(const std::filesystem::path& path) {
  const std::string bytes = test::read_bytes(path);
  return bytes.size() > 19 && bytes[18] == 2 && bytes[19] == 2;
}

TEST(ReadOnly, WalDatabaseWithoutItsFilesReadsFromAReadOnlyDirectory) {
  test::TempDir dir;
  const auto ro = dir / "ro";
  std::filesystem::create_directory(ro);
  make_database(ro / "tune.db");
  ASSERT_TRUE(header_says_wal(ro / "tune.db"));
  ASSERT_EQ(listing(ro), std::vector<std::string>{"tune.db"});  // no -wal, no -shm left
  const std::string before = test::read_bytes(ro / "tune.db");
  const ChildReport child = run_unable_to_write(ro, [&] {
    std::string report = read_everything(ro / "tune.db");
    // Writing still fails, in one line that names the file.
    try {
      Store::open(ro / "tune.db");
      report += "; read-write open succeeded";
    } catch (const StoreError& e) {
      if (!test::one_line(e.what()) || std::string(e.what()).find("tune.db") == std::string::npos)
        report += std::string("; bad read-write error: ") + e.what();
    }
    return report;
  });
  if (child.skipped) GTEST_SKIP() << *child.skipped;
  EXPECT_EQ(child.report, "ok");
  EXPECT_EQ(listing(ro), std::vector<std::string>{"tune.db"});
  EXPECT_EQ(test::read_bytes(ro / "tune.db"), before);
}

TEST(ReadOnly, ForcedImmutableReadsWithoutCreatingAnyFile) {
  test::TempDir dir;
  // Characters that a URI would otherwise read as its query, fragment or an escape.
  const auto odd = dir / "odd ?#%25 dir";
  std::filesystem::create_directory(odd);
  make_database(odd / "tune.db");
  {
    const ScopedEnv immutable("TILETUNE_DB_IMMUTABLE", "1");
    EXPECT_EQ(read_everything(odd / "tune.db"), "ok");
    EXPECT_EQ(listing(odd), std::vector<std::string>{"tune.db"});
  }
  // A plain read-only open of a WAL database in a writable directory makes the -shm file it needs.
  EXPECT_EQ(read_everything(odd / "tune.db"), "ok");
}

// An immutable read sees only the main file: with changes still in the -wal file it would answer from an
// older database, so it is refused instead.
TEST(ReadOnly, ChangesStillInTheWalAreNeverIgnored) {
  test::TempDir dir;
  const auto live = dir / "live.db";
  Store writer = Store::open(live);
  const std::int64_t id = writer.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  writer.add_results(id, {ok({{"TILE", 32}, {"BLOCK_Y", 8}}, 1.0)});
  ASSERT_GT(std::filesystem::file_size(live.string() + "-wal"), 0u);
  // A copy of the database with its -wal file but no -shm, as a backup of a live database would be.
  const auto copy = dir / "copy";
  std::filesystem::create_directory(copy);
  std::filesystem::copy_file(live, copy / "tune.db");
  std::filesystem::copy_file(live.string() + "-wal", copy / "tune.db-wal");
  const auto expect_refused = [&](const std::string& message) {
    EXPECT_TRUE(test::one_line(message)) << message;
    EXPECT_NE(message.find((copy / "tune.db").string() + ": "), std::string::npos) << message;
    EXPECT_NE(message.find("tune.db-wal holds changes not yet in the database"), std::string::npos)
        << message;
  };
  {
    const ScopedEnv immutable("TILETUNE_DB_IMMUTABLE", "1");
    std::string error;
    EXPECT_FALSE(Client::open(copy / "tune.db", &error).has_value());
    expect_refused(error);
    try {
      Store::open(copy / "tune.db", Store::Mode::read_only);
      ADD_FAILURE() << "opened";
    } catch (const StoreError& e) {
      expect_refused(e.what());
    }
  }
  const ChildReport child = run_unable_to_write(copy, [&] {
    std::string error;
    return Client::open(copy / "tune.db", &error) ? std::string("opened") : error;
  });
  if (child.skipped) GTEST_SKIP() << *child.skipped;
  expect_refused(child.report);
}

TEST(ReadOnly, ForcedImmutableStillRefusesWhatIsNotOurs) {
  test::TempDir dir;
  const ScopedEnv immutable("TILETUNE_DB_IMMUTABLE", "1");
  test::write_bytes(dir / "text.db", "not a database\n");
  std::string error;
  EXPECT_FALSE(Client::open(dir / "text.db", &error).has_value());
  EXPECT_NE(error.find("not an SQLite database"), std::string::npos) << error;
  EXPECT_FALSE(Client::open(dir / "missing.db", &error).has_value());
  EXPECT_NE(error.find("no such file"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(dir / "missing.db"));
  // Writing ignores the variable.
  Store store = Store::open(dir / "new.db");
  store.begin_sweep(spec("gemm_tiled", h100, {8, 8, 8}));
  EXPECT_EQ(store.sweeps().size(), 1u);
}

}  // namespace
}  // namespace tiletune
