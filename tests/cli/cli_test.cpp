// The tiletune command as a user meets it: every bad input gives one clear line and a non-zero status, and
// nothing already stored changes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <random>
#include <sstream>

#include "../test_paths.hpp"

using tiletune::test::TempDir;

namespace {

struct CmdResult {
  int status = -1;
  std::string out, err;
};

CmdResult tiletune_cmd(const std::string& args, const TempDir& dir) {
  const auto bin = tiletune::test::tiletune_binary();
  EXPECT_FALSE(bin.empty()) << "tiletune binary not found";
  const std::string out = (dir.path / "stdout").string(), err = (dir.path / "stderr").string();
  const std::string cmd = "cd '" + dir.path.string() + "' && TILETUNE_CACHE='" + (dir.path / "cache").string() + "' '" +
                          bin.string() + "' " + args + " >'" + out + "' 2>'" + err + "'";
  CmdResult r;
  const int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

bool have_gpu(const TempDir& dir) { return tiletune_cmd("devices", dir).out.find("GPUs present") != std::string::npos; }

}  // namespace

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
  const CmdResult r = tiletune_cmd("plan --family gemm_tiled --size 1000x1000x1000 --device-profile h100 --store", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("planning for the NVIDIA H100 80GB HBM3 profile"), std::string::npos);
  EXPECT_NE(r.out.find("runnable 127, pruned 602, compile_failed 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("576 x pruned: constraint: TILE_K must equal TILE_WIDTH or BLOCK_Y"), std::string::npos);
  EXPECT_NE(r.out.find("26 x pruned: threads limit"), std::string::npos);
  EXPECT_NE(r.out.find("stored as plan"), std::string::npos);
  const CmdResult again = tiletune_cmd("plan --family gemm_tiled --size 1000x1000x1000 --device-profile h100", dir);
  EXPECT_NE(again.out.find("compiled 0 with NVRTC"), std::string::npos) << "a second plan compiles nothing: " << again.out;
  EXPECT_NE(again.out.find("(127 from cache)"), std::string::npos);
  const CmdResult shown = tiletune_cmd("show --list", dir);
  EXPECT_EQ(shown.status, 0) << shown.err;
  EXPECT_NE(shown.out.find("plan"), std::string::npos);
}

TEST(Cli, BadInputGivesOneLineAndChangesNothing) {
  TempDir dir;
  ASSERT_EQ(tiletune_cmd("plan --family conv1d_tiled --size 4096 --device-profile h100 --no-compile --store", dir).status, 0);
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
      {"plan --family conv1d_tiled --size 1000 --arg mask_width=4 --device-profile h100 --store", "mask_width must be odd"},
      {"plan --family conv1d_tiled --size 1000 --arg bogus=1 --device-profile h100 --store", "unknown problem argument 'bogus'"},
      {"plan --family gemm_tiled --device-profile h900 --store", "unknown device profile 'h900'"},
      {"plan --family gemm_tiled --templates /no/such/dir --store", "does not exist"},
      {"query --family gemm_tiled --size 100x100x100 --device X --db missing.db", "missing.db"},
      {"import nothing.json", "cannot read nothing.json"},
      {"plan --family gemm_tiled --size 100x100x100 --device-profile h100 --no-compile --store --db /no/such/dir/t.db", "/no/such/dir/t.db"},
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
  for (const char* args : {"show --db corrupt.db", "plan --family gemm_tiled --device-profile h100 --no-compile --store --db corrupt.db",
                           "import x.json --db corrupt.db", "query --family gemm_tiled --size 10x10x10 --device X --db corrupt.db"}) {
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
  ASSERT_EQ(tiletune_cmd("plan --family gemm_tiled --size 64x64x64 --device-profile h100 --no-compile --store", dir).status, 0);
  const CmdResult r = tiletune_cmd("query --family gemm_tiled --size 1000x1000x1000 --device 'NVIDIA H100 80GB HBM3' --arch sm_90 --json", dir);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("\"match\": \"not_found\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"TILE_WIDTH\": 16"), std::string::npos) << r.out;
}

TEST(Cli, GpuCommandsSayThereIsNoGpu) {
  TempDir dir;
  if (have_gpu(dir)) GTEST_SKIP() << "a GPU is present; this checks the message on machines without one";
  for (const char* args : {"sweep --family gemm_tiled --size 64x64x64", "bench --family gemm_tiled --size 64x64x64", "sweep"}) {
    const CmdResult r = tiletune_cmd(args, dir);
    EXPECT_EQ(r.status, 1) << args;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find("no CUDA GPU"), std::string::npos) << args << ": " << r.err;
  }
}
