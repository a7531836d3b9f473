// The tiletune command as a user meets it: every bad input gives one clear line and a non-zero status, and
// nothing already stored changes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli_support.hpp"

using tiletune::test::CmdResult;
using tiletune::test::have_gpu;
using tiletune::test::lines;
using tiletune::test::read_bytes;
using tiletune::test::TempDir;
using tiletune::test::tiletune_cmd;

TEST(Cli, HelpOnEverySubcommand) {
  TempDir dir;
  for (const char* sub : {"devices", "plan", "sweep", "bench", "query", "show", "export", "import"}) {
    const CmdResult r = tiletune_cmd(std::string(sub) + " --help", dir);
    EXPECT_EQ(r.status, 0) << sub << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("usage: tiletune ") + sub), std::string::npos) << sub;
  }
  EXPECT_EQ(tiletune_cmd("frobnicate", dir).status, 2);
}

TEST(Cli, PlanOnTheH100ProfileShowsRunnableAndPruned) {
  TempDir dir;
  const CmdResult r =
      tiletune_cmd("plan --family gemm_tiled --size 1000x1000x1000 --device-profile h100 --store", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("planning for the NVIDIA H100 80GB HBM3 profile"), std::string::npos);
  EXPECT_NE(r.out.find("runnable 127, pruned 602, compile_failed 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("576 x pruned: constraint: TILE_K must equal TILE_WIDTH or BLOCK_Y"),
            std::string::npos);
  EXPECT_NE(r.out.find("26 x pruned: threads limit"), std::string::npos);
  EXPECT_NE(r.out.find("stored as plan"), std::string::npos);
  const CmdResult again =
      tiletune_cmd("plan --family gemm_tiled --size 1000x1000x1000 --device-profile h100", dir);
  EXPECT_NE(again.out.find("compiled 0 with NVRTC"), std::string::npos)
      << "a second plan compiles nothing: " << again.out;
  EXPECT_NE(again.out.find("(127 from cache)"), std::string::npos);
  const CmdResult shown = tiletune_cmd("show --list", dir);
  EXPECT_EQ(shown.status, 0) << shown.err;
  EXPECT_NE(shown.out.find("plan"), std::string::npos);
  // The stored plan holds the runnable configurations as results and the pruned ones as counts by reason.
  const CmdResult plan = tiletune_cmd("show --family gemm_tiled -n 0", dir);
  EXPECT_EQ(plan.status, 0) << plan.err;
  EXPECT_NE(plan.out.find("ok: 127  pruned: 602"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("pruned before compiling: 602"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("576 x constraint: TILE_K must equal TILE_WIDTH or BLOCK_Y"), std::string::npos)
      << plan.out;
}

TEST(Cli, BadInputGivesOneLineAndChangesNothing) {
  TempDir dir;
  ASSERT_EQ(
      tiletune_cmd("plan --family conv1d_tiled --size 4096 --device-profile h100 --no-compile --store", dir)
          .status,
      0);
  const auto db = dir.path / "tiletune.db";
  const std::string before = tiletune_cmd("export --format csv", dir).out;
  ASSERT_GT(lines(before), 10);
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"plan --family gemm_fast --device-profile h100 --store", "unknown family 'gemm_fast'"},
      {"plan --family gemm_tiled --size 0x10x10 --device-profile h100 --store", "positive"},
      {"plan --family gemm_tiled --size -5x10x10 --device-profile h100 --store", "positive"},
      {"plan --family gemm_tiled --size 10x10 --device-profile h100 --store", "3 dimension(s)"},
      {"plan --family gemm_tiled --size 10xAx10 --device-profile h100 --store", "size"},
      {"plan --family gemm_tiled --size 10x10x10x --device-profile h100 --store", "got '10x10x10x'"},
      {"plan --family gemm_tiled --size 10x10x --device-profile h100 --store", "got '10x10x'"},
      {"plan --family gemm_tiled --size 10x2^4x --device-profile h100 --store", "got '10x16x'"},
      {"plan --family gemm_tiled --size x10x10x10 --device-profile h100 --store", "got 'x10x10x10'"},
      {"plan --family conv1d_tiled --size 1000 --arg mask_width=4 --device-profile h100 --store",
       "mask_width must be odd"},
      {"plan --family conv1d_tiled --size 1000 --arg bogus=1 --device-profile h100 --store",
       "unknown problem argument 'bogus'"},
      {"plan --family gemm_tiled --device-profile h900 --store", "unknown device profile 'h900'"},
      {"plan --family gemm_tiled --templates /no/such/dir --store", "does not exist"},
      {"query --family gemm_tiled --size 100x100x100 --device X --db missing.db", "missing.db"},
      {"import nothing.json", "cannot read nothing.json"},
      {"plan --family gemm_tiled --size 100x100x100 --device-profile h100 --no-compile --store --db "
       "/no/such/dir/t.db",
       "/no/such/dir/t.db"},
  };
  for (const auto& c : cases) {
    const CmdResult r = tiletune_cmd(c.args, dir);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_EQ(lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
  EXPECT_EQ(tiletune_cmd("export --format csv", dir).out, before);
  EXPECT_FALSE(std::filesystem::exists(dir.path / "missing.db"));
}

TEST(Cli, MalformedTemplateNamesTheFile) {
  TempDir dir;
  std::filesystem::create_directories(dir.path / "mine/broken");
  std::ofstream(dir.path / "mine/broken/family.json") << "{\"name\": \"broken\", \"source\": ";
  const CmdResult r = tiletune_cmd("plan --family gemm_tiled --templates mine --device-profile h100", dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("broken/family.json: not valid JSON"), std::string::npos) << r.err;
}

TEST(Cli, CorruptDatabaseIsRefusedAndLeftAlone) {
  TempDir dir;
  const auto db = dir.path / "corrupt.db";
  std::string junk(8192, '\0');
  std::mt19937 rng(5);
  for (auto& ch : junk) ch = static_cast<char>(rng());
  std::ofstream(db, std::ios::binary) << junk;
  for (const char* args :
       {"show --db corrupt.db",
        "plan --family gemm_tiled --device-profile h100 --no-compile --store --db corrupt.db",
        "import x.json --db corrupt.db",
        "query --family gemm_tiled --size 10x10x10 --device X --db corrupt.db"}) {
    std::ofstream(dir.path / "x.json") << "{}";
    const CmdResult r = tiletune_cmd(args, dir);
    EXPECT_NE(r.status, 0) << args;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find("corrupt.db"), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_EQ(read_bytes(db), junk);
}

TEST(Cli, QueryFallsBackToFamilyDefaultsAndSaysSo) {
  TempDir dir;
  ASSERT_EQ(
      tiletune_cmd("plan --family gemm_tiled --size 64x64x64 --device-profile h100 --no-compile --store", dir)
          .status,
      0);
  const CmdResult r = tiletune_cmd(
      "query --family gemm_tiled --size 1000x1000x1000 --device 'NVIDIA H100 80GB HBM3' --arch sm_90 --json",
      dir);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("\"match\": \"not_found\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"TILE_WIDTH\": 16"), std::string::npos) << r.out;
}

TEST(Cli, GpuCommandsSayThereIsNoGpu) {
  TempDir dir;
  if (have_gpu(dir)) GTEST_SKIP() << "a GPU is present; this checks the message on machines without one";
  for (const char* args :
       {"sweep --family gemm_tiled --size 64x64x64", "bench --family gemm_tiled --size 64x64x64", "sweep",
        "sweep --gpus all --family gemm_tiled --size 64x64x64", "sweep --gpus 0,1", "sweep --gpus all"}) {
    const CmdResult r = tiletune_cmd(args, dir);
    EXPECT_EQ(r.status, 1) << args;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find("no CUDA GPU"), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path / "tiletune.db")) << "a sweep with no GPU left a database";
}

// bench --sustained-ms takes 0 (none) to a minute, and --config names parameters of the family with integer
// values; anything else is refused in one line before a GPU or the database is touched.
TEST(Cli, BenchRefusesASustainedTimeOrAConfigurationItCannotUse) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--sustained-ms -1", "--sustained-ms must be between 0 and 60000"},
      {"--sustained-ms nan", "--sustained-ms must be between 0 and 60000"},
      {"--sustained-ms inf", "--sustained-ms must be between 0 and 60000"},
      {"--sustained-ms 60001", "--sustained-ms must be between 0 and 60000"},
      {"--sustained-ms abc", "sustained-ms"},
      {"--config FOO=1", "gemm_tiled has no parameter 'FOO' (it has BLOCK_Y, TILE_K, TILE_WIDTH)"},
      {"--config TILE_WIDTH=x", "'x' is not a 64-bit integer"},
      {"--config TILE_WIDTH", "NAME=INTEGER"},
      {"--config TILE_WIDTH=8,TILE_WIDTH=16", "--config"},
  };
  for (const auto& [option, message] : cases) {
    const CmdResult r = tiletune_cmd("bench --family gemm_tiled --size 64x64x64 " + option, dir);
    EXPECT_EQ(r.status, 2) << option << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << option << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << option << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path / "tiletune.db"));
}

TEST(Cli, SweepRefusesAMalformedGpuList) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--gpus 0,0", "names GPU 0 twice"},
      {"--gpus 0,,1", "takes 'all' or device indices"},
      {"--gpus=-1", "takes 'all' or device indices"},
      {"--gpus one", "takes 'all' or device indices"},
      {"--gpus 99999", "takes 'all' or device indices"},
      {"--gpus all --gpu 1", "give --gpu or --gpus, not both"},
  };
  for (const auto& [args, message] : cases) {
    const CmdResult r = tiletune_cmd("sweep --family gemm_tiled --size 64x64x64 " + args, dir);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path / "tiletune.db"));
}

namespace {

// An export document with one measured gemm_tiled sweep on an H100 at 64^3, its one result taking `median`.
std::string export_document(const std::string& median,
                            const std::string& uid = "0123456789abcdef0123456789abcdef") {
  return R"({"format": "tiletune-export", "schema_version": 1, "sweeps": [{"uid": ")" + uid + R"(",
    "device": {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-cli-test", "arch": "sm_90", "sm_count": 132},
    "family": {"name": "gemm_tiled", "template_hash": "cli-test"}, "problem": {"size": "64x64x64"},
    "kind": "sweep", "status": "done", "started_at": "2025-01-01T00:00:00.000Z",
    "results": [{"params": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16}, "outcome": "ok", "median_ms": )" +
         median + R"(, "repetitions": 10}]}]})";
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

// `export -o` once replaced the database with its own export.
TEST(Cli, ExportNeverWritesOverADatabase) {
  TempDir dir;
  ASSERT_EQ(
      tiletune_cmd("plan --family gemm_tiled --size 64x64x64 --device-profile h100 --no-compile --store", dir)
          .status,
      0);
  const auto db = dir.path / "tiletune.db";
  std::filesystem::copy_file(db, dir.path / "other.db");
  std::filesystem::create_symlink("tiletune.db", dir.path / "link.json");
  // Dangling: it names the -wal file SQLite creates beside the database when it next writes.
  std::filesystem::create_symlink("tiletune.db-wal", dir.path / "wal-link.json");
  std::filesystem::create_symlink("wal-link.json", dir.path / "link-to-link.json");
  std::filesystem::create_directory(dir.path / "folder");
  const std::string db_bytes = read_bytes(db), other_bytes = read_bytes(dir.path / "other.db");
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"export -o tiletune.db",
       "--output tiletune.db is the database (--db tiletune.db): refusing to write over it"},
      {"export --format csv --output ./tiletune.db", "is the database"},
      {"export -o " + db.string(), "is the database"},
      {"export -o tiletune.db-wal", "is the database's -wal file"},
      {"export -o tiletune.db-shm --db ./tiletune.db", "is the database's -shm file"},
      {"export -o link.json", "is the database"},
      {"export -o wal-link.json", "--output wal-link.json is the database's -wal file"},
      {"export --format csv -o link-to-link.json", "is the database's -wal file"},
      {"export -o ''", "--output is empty"},
      {"export --format csv --output ''", "--output is empty"},
      {"export --format header -o other.db",
       "--output other.db is an SQLite database: refusing to write over it"},
      {"export -o folder", "--output folder is a directory"},
  };
  for (const auto& c : cases) {
    const CmdResult r = tiletune_cmd(c.args, dir);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_EQ(lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
  EXPECT_EQ(read_bytes(db), db_bytes);
  EXPECT_EQ(read_bytes(dir.path / "other.db"), other_bytes);
  EXPECT_TRUE(std::filesystem::is_symlink(dir.path / "link.json"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir.path / "wal-link.json"));
  EXPECT_FALSE(std::filesystem::exists(dir.path / "tiletune.db-wal.XXXXXX"));
  // A device is written in place, never replaced by a file.
  EXPECT_EQ(tiletune_cmd("export --format csv -o /dev/null", dir).status, 0);
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  // An ordinary file is replaced whole.
  write_text(dir.path / "out.csv", "old");
  ASSERT_EQ(tiletune_cmd("export --format csv -o out.csv", dir).status, 0);
  EXPECT_EQ(read_bytes(dir.path / "out.csv").rfind("sweep_uid,", 0), 0u);
}

// `--db ''` once imported into SQLite's temporary database and reported success.
TEST(Cli, UnusableDatabasePathsAreRefused) {
  TempDir dir;
  write_text(dir.path / "good.json", export_document("0.5"));
  std::filesystem::create_directory(dir.path / "folder");
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"import good.json --db ''", "--db is empty"},
      {"import good.json --db=", "--db"},
      {"import good.json --db :memory:", "--db :memory: is SQLite's in-memory database"},
      {"plan --family gemm_tiled --size 64x64x64 --device-profile h100 --no-compile --store --db ''",
       "--db is empty"},
      {"import good.json --db folder", "--db folder is a directory"},
      {"show --list --db folder", "--db folder is a directory"},
      {"show --list --db /no/such/dir/t.db",
       "cannot open database /no/such/dir/t.db: directory /no/such/dir does not exist"},
      {"export --db missing.db", "cannot open database missing.db: no such file"},
      {"query --family gemm_tiled --size 64x64x64 --device X --db ''", "--db is empty"},
      {"import good.json --db /dev/null", "cannot open database /dev/null: not a regular file"},
      {"export --db /dev/null", "not a regular file"},
  };
  for (const auto& c : cases) {
    const CmdResult r = tiletune_cmd(c.args, dir);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_EQ(lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path / "missing.db"));
  EXPECT_FALSE(std::filesystem::exists(dir.path / "tiletune.db"));
}

// A profile file named h100.json once overwrote the stored H100 profile, so that every earlier H100 plan
// belonged to another GPU.
TEST(Cli, ProfileFileNamedLikeABuiltInKeepsItsOwnDevice) {
  TempDir dir;
  ASSERT_EQ(
      tiletune_cmd("plan --family gemm_tiled --size 64x64x64 --device-profile h100 --no-compile --store", dir)
          .status,
      0);
  write_text(dir.path / "h100.json", R"({"base": "h100", "sm_count": 114})");
  const CmdResult custom = tiletune_cmd(
      "plan --family gemm_tiled --size 64x64x64 --device-profile h100.json --no-compile --store", dir);
  ASSERT_EQ(custom.status, 0) << custom.err;
  const CmdResult exported = tiletune_cmd("export", dir);
  ASSERT_EQ(exported.status, 0) << exported.err;
  const auto doc = nlohmann::json::parse(exported.out);
  ASSERT_EQ(doc["sweeps"].size(), 2u);
  EXPECT_EQ(doc["sweeps"][0]["device"]["uuid"], "profile:h100");
  EXPECT_EQ(doc["sweeps"][0]["device"]["sm_count"], 132);
  EXPECT_EQ(doc["sweeps"][1]["device"]["uuid"].get<std::string>().rfind("profile:h100#", 0), 0u)
      << doc["sweeps"][1]["device"];
  EXPECT_EQ(doc["sweeps"][1]["device"]["sm_count"], 114);
}

TEST(Cli, InvalidImportNamesTheFieldAndChangesNothing) {
  TempDir dir;
  write_text(dir.path / "good.json", export_document("0.5"));
  ASSERT_EQ(tiletune_cmd("import good.json", dir).status, 0);
  const std::string before = tiletune_cmd("export --format csv", dir).out;
  struct Case {
    std::string document, expect;
  } cases[] = {
      {export_document("-1", std::string(32, 'a')),
       "bad.json: sweeps[0].results[0].median_ms must be a positive, finite time in ms, got -1 (nothing "
       "imported)"},
      {export_document("0", std::string(32, 'b')), "sweeps[0].results[0].median_ms must be a positive"},
      {export_document("1e999", std::string(32, 'c')), "bad.json: not valid JSON"},
      {export_document("null", std::string(32, 'd')), "sweeps[0].results[0].median_ms is missing"},
  };
  for (const auto& c : cases) {
    write_text(dir.path / "bad.json", c.document);
    const CmdResult r = tiletune_cmd("import bad.json", dir);
    EXPECT_NE(r.status, 0) << c.expect;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
  }
  // Nesting deep enough to overflow a recursive parser once crashed the import.
  std::string deep = export_document("0.5", std::string(32, 'g'));
  deep.replace(deep.find(R"("template_hash": "cli-test"})"), 27,
               R"("template_hash": "cli-test", "description": {"x": )" + std::string(300000, '[') +
                   std::string(300000, ']') + "}}");
  write_text(dir.path / "bad.json", deep);
  const CmdResult nested = tiletune_cmd("import bad.json", dir);
  EXPECT_EQ(nested.status, 1) << nested.err;
  EXPECT_NE(
      nested.err.find("bad.json: the document is nested 300005 levels deep (at most 72) (nothing imported)"),
      std::string::npos)
      << nested.err;
  // Two sweeps in one file, the second invalid: neither is stored.
  std::string two = export_document("0.25", std::string(32, 'e'));
  const std::string second = export_document("-3", std::string(32, 'f'));
  two.insert(two.rfind("]}"),
             ", " + second.substr(second.find("[{") + 1, second.rfind("]}") - second.find("[{") - 1));
  write_text(dir.path / "bad.json", two);
  const CmdResult r = tiletune_cmd("import bad.json", dir);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("sweeps[1].results[0].median_ms"), std::string::npos) << r.err;
  EXPECT_EQ(tiletune_cmd("export --format csv", dir).out, before);
}

// Read commands on a database in a directory they cannot write: the WAL database (its -wal and -shm files
// gone with its last writer) is read immutable.
TEST(Cli, ReadCommandsWorkInAReadOnlyDirectory) {
  TempDir dir;
  namespace fs = std::filesystem;
  fs::permissions(dir.path, fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
  fs::create_directory(dir.path / "ro");
  write_text(dir.path / "good.json", export_document("0.5"));
  ASSERT_EQ(tiletune_cmd("import good.json --db ro/t.db", dir).status, 0);
  ASSERT_FALSE(fs::exists(dir.path / "ro/t.db-wal"));
  ASSERT_FALSE(fs::exists(dir.path / "ro/t.db-shm"));
  fs::permissions(dir.path / "ro/t.db",
                  fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir.path / "ro", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                       fs::perms::group_exec | fs::perms::others_read |
                                       fs::perms::others_exec);
  const std::string before = read_bytes(dir.path / "ro/t.db");
  const auto check_reads = [&](const std::string& prefix, bool can_write) {
    const CmdResult list = tiletune_cmd("show --list --db ro/t.db", dir, prefix);
    EXPECT_EQ(list.status, 0) << prefix << ": " << list.err;
    EXPECT_NE(list.out.find("gemm_tiled"), std::string::npos) << list.out;
    const CmdResult csv = tiletune_cmd("export --format csv --db ro/t.db", dir, prefix);
    EXPECT_EQ(csv.status, 0) << prefix << ": " << csv.err;
    EXPECT_NE(csv.out.find("BLOCK_Y=16,TILE_K=16,TILE_WIDTH=16"), std::string::npos) << csv.out;
    const CmdResult query = tiletune_cmd(
        "query --family gemm_tiled --size 64x64x64 --device 'NVIDIA H100 80GB HBM3' --db ro/t.db", dir,
        prefix);
    EXPECT_EQ(query.status, 0) << prefix << ": " << query.err;
    EXPECT_NE(query.out.find("exact match"), std::string::npos) << query.out;
    if (!can_write) {
      const CmdResult write = tiletune_cmd("import good.json --db ro/t.db", dir, prefix);
      EXPECT_NE(write.status, 0);
      EXPECT_EQ(lines(write.err), 1) << write.err;
      EXPECT_NE(write.err.find("ro/t.db"), std::string::npos) << write.err;
    }
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path / "ro"), fs::directory_iterator()),
              1);  // no -wal, -shm
    EXPECT_EQ(read_bytes(dir.path / "ro/t.db"), before);
  };
  // Forced immutable: runs everywhere, even as root.
  check_reads("TILETUNE_DB_IMMUTABLE=1", ::geteuid() == 0);
  // Without it: as a user who cannot write the directory (root writes through mode 0555, so it runs the
  // binary as nobody where it can).
  std::string prefix;
  if (::geteuid() == 0) {
    if (std::system("command -v setpriv > /dev/null 2>&1") != 0)
      GTEST_SKIP() << "root writes through mode 0555, and there is no setpriv to drop privileges";
    prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups";
  }
  if (std::system(
          ("cd '" + dir.path.string() + "' && " + prefix + " sh -c 'touch ro/probe' 2>/dev/null").c_str()) ==
      0) {
    fs::remove(dir.path / "ro/probe");
    GTEST_SKIP() << "the directory is still writable for the user running the binary";
  }
  check_reads(prefix, false);
  fs::permissions(dir.path / "ro", fs::perms::owner_all, fs::perm_options::add);
}

// ---- tiletune import with CSV: the format by content or --format, and every error one line naming the file,
// the line and the field, with nothing imported ----

namespace csv_import_cli {

std::string without_exported_at(const std::string& json_text) {
  auto doc = nlohmann::json::parse(json_text);
  doc.erase("exported_at");
  return doc.dump();
}

}  // namespace csv_import_cli

TEST(Cli, CsvExportImportsElsewhereAsTheSameSweeps) {
  TempDir dir;
  write_text(dir.path / "good.json", export_document("0.5"));
  ASSERT_EQ(tiletune_cmd("import good.json", dir).status, 0);
  ASSERT_EQ(
      tiletune_cmd("plan --family gemm_tiled --size 64x64x64 --device-profile h100 --no-compile --store", dir)
          .status,
      0);
  ASSERT_EQ(tiletune_cmd("export --format csv -o all.csv", dir).status, 0);
  const CmdResult imported = tiletune_cmd("import all.csv --db copy.db", dir);
  ASSERT_EQ(imported.status, 0) << imported.err;
  EXPECT_NE(imported.out.find("imported 2 sweeps ("), std::string::npos) << imported.out;
  const CmdResult original = tiletune_cmd("export", dir), copy = tiletune_cmd("export --db copy.db", dir);
  ASSERT_EQ(copy.status, 0) << copy.err;
  EXPECT_EQ(csv_import_cli::without_exported_at(copy.out), csv_import_cli::without_exported_at(original.out));
  EXPECT_EQ(tiletune_cmd("export --format csv --db copy.db", dir).out, read_bytes(dir.path / "all.csv"));

  // Again, by content or by --format: nothing new. LF line endings and a byte order mark are fine.
  const CmdResult again = tiletune_cmd("import all.csv --db copy.db --format csv", dir);
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("imported 0 sweeps (0 results), skipped 2 already present"), std::string::npos)
      << again.out;
  std::string lf = read_bytes(dir.path / "all.csv");
  for (std::size_t at = 0; (at = lf.find("\r\n", at)) != std::string::npos;) lf.erase(at, 1);
  write_text(dir.path / "lf.csv", "\xEF\xBB\xBF" + lf);
  const CmdResult from_lf = tiletune_cmd("import lf.csv --db lf.db", dir);
  EXPECT_EQ(from_lf.status, 0) << from_lf.err;
  EXPECT_EQ(csv_import_cli::without_exported_at(tiletune_cmd("export --db lf.db", dir).out),
            csv_import_cli::without_exported_at(original.out));
  // A JSON export is told by its '{', after a byte order mark and white space.
  write_text(dir.path / "spaced.json", "\xEF\xBB\xBF \r\n\t" + export_document("0.5"));
  const CmdResult json = tiletune_cmd("import spaced.json --db json.db", dir);
  EXPECT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find("imported 1 sweeps (1 results)"), std::string::npos) << json.out;
  // The wrong --format says what it read.
  const CmdResult as_json = tiletune_cmd("import all.csv --db other.db --format json", dir);
  EXPECT_EQ(as_json.status, 1);
  EXPECT_EQ(lines(as_json.err), 1) << as_json.err;
  EXPECT_NE(as_json.err.find("all.csv: not valid JSON"), std::string::npos) << as_json.err;
  const CmdResult as_csv = tiletune_cmd("import good.json --db other.db --format csv", dir);
  EXPECT_EQ(as_csv.status, 1);
  EXPECT_NE(as_csv.err.find("good.json: line 1, field 1 has a quote but does not start with one"),
            std::string::npos)
      << as_csv.err;
  const CmdResult usage = tiletune_cmd("import all.csv --format xml", dir);
  EXPECT_EQ(usage.status, 2);
  EXPECT_NE(usage.err.find("--format must be json or csv"), std::string::npos) << usage.err;
}

TEST(Cli, InvalidCsvNamesTheLineAndFieldAndChangesNothing) {
  TempDir dir;
  write_text(dir.path / "good.json", export_document("0.5"));
  ASSERT_EQ(tiletune_cmd("import good.json", dir).status, 0);
  const std::string csv = tiletune_cmd("export --format csv", dir).out;
  ASSERT_EQ(lines(csv), 2) << csv;
  const std::string header = csv.substr(0, csv.find("\r\n") + 2);
  std::string row = csv.substr(header.size());
  ASSERT_EQ(row.find(",0.5,"), row.find(",ok,") + 4) << row;  // the median follows the empty reason
  const auto with_median = [&](const std::string& median, const std::string& uid) {
    std::string r = row;
    r.replace(r.find(",0.5,") + 1, 3, median);
    r.replace(0, r.find(','), uid);
    return header + r;
  };
  std::filesystem::create_directory(dir.path / "folder");
  const std::string db_before = read_bytes(dir.path / "tiletune.db");
  const std::string before = tiletune_cmd("export --format csv", dir).out;
  struct Case {
    std::string file, text, expect;
  } cases[] = {
      {"bad.csv", with_median("-1", std::string(32, 'a')),
       "tiletune import: bad.csv: line 2, field 10 (median_ms) must be a positive, finite time in ms, got -1 "
       "(nothing imported)"},
      {"bad.csv", with_median("fast", std::string(32, 'b')),
       "bad.csv: line 2, field 10 (median_ms) must be a number or empty, got 'fast' (nothing imported)"},
      {"quote.csv", with_median("\"0.5", std::string(32, 'c')),
       "quote.csv: line 2, field 10 (median_ms) opens a quote that is never closed (nothing imported)"},
      {"ragged.csv", header + "abc,def\r\n",
       "ragged.csv: line 2 has 2 fields, the header 46 (nothing imported)"},
      {"columns.csv", "sweep_uid,\"median\r\nms\"\r\n",
       "columns.csv: line 1, field 2 is 'median\\x0d ms', which is not a column of a tiletune CSV export"},
      {"escape.csv", "sweep_uid,\x1b[2Jx\xff\r\n", "escape.csv: line 1, field 2 is '\\x1b[2Jx\xEF\xBF\xBD'"},
      {"empty.csv", "",
       "empty.csv: the text is empty, without the header row of a CSV export (nothing imported)"},
      // The second sweep is invalid: the first is not stored either.
      {"two.csv",
       with_median("0.25", std::string(32, 'd')) +
           with_median("0", std::string(32, 'e')).substr(header.size()),
       "two.csv: line 3, field 10 (median_ms) must be a positive"},
      {"folder", "", "tiletune import: cannot read folder: a directory"},
  };
  for (const auto& c : cases) {
    if (c.file != "folder") write_text(dir.path / c.file, c.text);
    const CmdResult r = tiletune_cmd("import " + c.file, dir);
    EXPECT_EQ(r.status, 1) << c.file << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << c.file << ": " << r.err;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "a raw escape reached the terminal: " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.file << ": " << r.err;
  }
  EXPECT_EQ(tiletune_cmd("export --format csv", dir).out, before);
  EXPECT_EQ(read_bytes(dir.path / "tiletune.db"), db_before);
}

// sweep --captured and --input refuse bad files in one line, before any GPU or database is touched; so does
// a problem option without the family it belongs to.
TEST(Cli, CapturedAndInputFilesAreCheckedBeforeAnything) {
  TempDir dir;
  std::ofstream(dir.path / "bad.jsonl")
      << "{\"tiletune_capture\": 1}\n"
      << "{\"family\": \"gemm_fast\", \"device\": \"X\", \"size\": \"8x8x8\"}\n";
  std::ofstream(dir.path / "size.jsonl")
      << "{\"tiletune_capture\": 1}\n"
      << "{\"family\": \"gemm_tiled\", \"device\": \"X\", \"size\": \"8x8\"}\n";
  std::ofstream(dir.path / "short.bin") << "abc";
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"sweep --captured bad.jsonl", "bad.jsonl: line 2: unknown family 'gemm_fast'"},
      {"sweep --captured size.jsonl", "size.jsonl: line 2: "},
      {"sweep --captured absent.jsonl", "absent.jsonl: cannot read"},
      {"sweep --captured bad.jsonl --family gemm_tiled", "--captured takes its families"},
      {"sweep --family spmv_csr --input values=short.bin", "--input values: "},
      {"sweep --family spmv_csr --input nothing=short.bin", "no input buffer or constant of that name"},
      {"sweep --family spmv_csr --input values", "must be NAME=PATH"},
      {"sweep --input values=short.bin", "--input needs --family"},
      {"sweep --size 64x64x64", "--size needs --family"},
      {"sweep --arg mask_width=3", "--arg needs --family"},
      {"bench --family spmv_csr --input values=short.bin", "--input values: "},
  };
  for (const auto& c : cases) {
    const CmdResult r = tiletune_cmd(c.args, dir);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_EQ(lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path / "tiletune.db"));
}

// sweep --captured refuses a saved input that is missing, malformed or names no input, in one line naming the
// capture file, its line and the field, before any GPU or database is touched.
TEST(Cli, CapturedSavedInputsAreCheckedBeforeAnything) {
  TempDir dir;
  std::filesystem::create_directories(dir.path / "c.jsonl.inputs" / "p");
  std::ofstream(dir.path / "c.jsonl.inputs" / "p" / "bad.npy") << "abc";
  std::ofstream(dir.path / "c.jsonl.inputs" / "p" / "values.bin") << "abcdefgh";
  const auto capture = [&](const std::string& name, const std::string& inputs) {
    std::ofstream(dir.path / name) << "{\"tiletune_capture\": 1}\n"
                                   << "{\"family\": \"spmv_csr\", \"device\": \"X\", \"size\": \"8x8x8\", "
                                   << "\"inputs\": " << inputs << "}\n";
  };
  capture("missing.jsonl", "{\"values\": \"c.jsonl.inputs/p/gone.npy\"}");
  capture("bad.jsonl", "{\"values\": \"c.jsonl.inputs/p/bad.npy\"}");
  capture("name.jsonl", "{\"nothing\": \"c.jsonl.inputs/p/values.bin\"}");
  capture("abs.jsonl", "{\"values\": \"/c.jsonl.inputs/p/values.bin\"}");
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"sweep --captured missing.jsonl", "missing.jsonl: line 2: field 'inputs.values': "},
      {"sweep --captured bad.jsonl", "bad.jsonl: line 2: field 'inputs.values': "},
      {"sweep --captured name.jsonl", "name.jsonl: line 2: field 'inputs.nothing': "},
      {"sweep --captured abs.jsonl", "abs.jsonl: line 2: field 'inputs.values' must be a path relative"},
  };
  for (const auto& c : cases) {
    const CmdResult r = tiletune_cmd(c.args, dir);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_EQ(lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
  EXPECT_NE(tiletune_cmd("sweep --captured missing.jsonl", dir).err.find("gone.npy"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.path / "tiletune.db"));
}

// Arguments echoed in errors and in query's not-found line reach the terminal as one line, with newlines,
// ESC, BEL, DEL and C1 control characters (U+009B is a terminal's CSI) escaped.
TEST(Cli, EchoedArgumentsAreOneLineWithControlCharactersEscaped) {
  TempDir dir;
  const auto raw_controls = [](const std::string& text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if ((c < 0x20 && c != '\n') || c == 0x7F) return true;
      if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xA0) return true;
    }
    return false;
  };
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"plan --family \"$(printf 'gemm\\nfake: all good')\" --device-profile h100",
       "unknown family 'gemm\\nfake: all good'"},
      {"plan --family gemm_tiled --size \"$(printf '10x10\\nx10')\" --device-profile h100",
       "got '10x10\\nx10'"},
      {"plan --family \"$(printf 'x\\033[31mred\\007')\" --device-profile h100", "'x\\x1b[31mred\\x07'"},
      {"plan --family \"$(printf 'x\\302\\23331m')\" --device-profile h100", "'x\\u009b31m'"},
      {"\"$(printf 'pla\\nn')\"", "unknown command 'pla\\nn'"},
  };
  for (const auto& c : cases) {
    const CmdResult r = tiletune_cmd(c.args, dir);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_EQ(lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_FALSE(raw_controls(r.err)) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
  ASSERT_EQ(
      tiletune_cmd("plan --family gemm_tiled --size 64x64x64 --device-profile h100 --no-compile --store", dir)
          .status,
      0);
  const CmdResult q = tiletune_cmd(
      "query --family gemm_tiled --size 64x64x64 --device \"$(printf "
      "'H\\033]0;owned\\007\\302\\2332J\\nX')\"",
      dir);
  EXPECT_FALSE(raw_controls(q.out + q.err)) << q.out << q.err;
  EXPECT_LE(lines(q.out), 3) << q.out;
}

// `show` prints where a sweep's best improved: measurement, time and seconds since the sweep began.
TEST(Cli, ShowPrintsTheBestSoFarCurve) {
  TempDir dir;
  using nlohmann::json;
  const auto result = [](int tile, const char* outcome, double ms, const char* at) {
    json r{{"params", {{"TILE", tile}}}, {"outcome", outcome}, {"measured_at", at}, {"repetitions", 0}};
    if (std::string(outcome) == "ok") r["median_ms"] = ms, r["repetitions"] = 5;
    return r;
  };
  const json sweep{
      {"uid", "0123456789abcdef0123456789abcdef"},
      {"device",
       {{"name", "Lab GPU"},
        {"uuid", "GPU-lab"},
        {"arch", "sm_90"},
        {"sm_count", 132},
        {"properties", json::object()}}},
      {"family", {{"name", "demo"}, {"template_hash", "h1"}, {"description", {{"name", "demo"}}}}},
      {"problem", {{"size", "4096"}, {"args", ""}}},
      {"kind", "sweep"},
      {"strategy", "random"},
      {"status", "done"},
      {"space_hash", "s1"},
      {"started_at", "2026-01-01T00:00:00.000Z"},
      {"ended_at", "2026-01-01T00:00:09.000Z"},
      {"results",
       {result(8, "ok", 3.0, "2026-01-01T00:00:01.000Z"),
        result(16, "runtime_failed", 0, "2026-01-01T00:00:02.000Z"),
        result(32, "ok", 2.0, "2026-01-01T00:00:04.500Z"),
        result(64, "ok", 2.5, "2026-01-01T00:00:05.000Z")}}};
  const json doc{{"format", "tiletune-export"}, {"schema_version", 3}, {"sweeps", {sweep}}};
  std::ofstream(dir.path / "demo.json") << doc.dump();
  const CmdResult imported = tiletune_cmd("import demo.json", dir);
  ASSERT_EQ(imported.status, 0) << imported.err << imported.out;
  const CmdResult shown = tiletune_cmd("show --family demo", dir);
  ASSERT_EQ(shown.status, 0) << shown.err;
  EXPECT_NE(shown.out.find("best so far: #1 3.0000 ms (1.0 s) -> #3 2.0000 ms (4.5 s)\n"), std::string::npos)
      << shown.out;
}
