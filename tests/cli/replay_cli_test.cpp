// tiletune replay as a user meets it: a table per space and strategy, curves as JSON, and one line for each
// bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_support.hpp"

using tiletune::test::CmdResult;
using tiletune::test::lines;
using tiletune::test::read_bytes;
using tiletune::test::TempDir;
using tiletune::test::tiletune_cmd;

namespace {

std::string space(const std::string& name) { return (tiletune::test::spaces_dir() / name).string(); }

// A family of the user's own (gemm_tiled under another name in kernels/), and one sweep of it imported from a
// Kernel Tuner cache: two ok results and a compile failure.
void own_family_sweep(const TempDir& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir.path / "kernels");
  fs::copy(tiletune::test::templates_dir() / "gemm_tiled", dir.path / "kernels" / "my_gemm");
  const fs::path family = dir.path / "kernels" / "my_gemm" / "family.json";
  nlohmann::json f = nlohmann::json::parse(read_bytes(family));
  f["name"] = "my_gemm";
  std::ofstream(family, std::ios::trunc) << f.dump();
  std::ofstream(dir.path / "cache.json")
      << R"({"device_name": "NVIDIA H100 80GB HBM3", "kernel_name": "my_gemm",
"problem_size": [1000, 1000, 1000], "tune_params_keys": ["TILE_WIDTH", "BLOCK_Y", "TILE_K"],
"tune_params": {"TILE_WIDTH": [16, 32], "BLOCK_Y": [16, 32], "TILE_K": [16, 32]}, "objective": "time", "cache": {
"16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "times": [0.5, 0.5, 0.5], "compile_time": 120, "verification_time": 0, "benchmark_time": 10},
"32,16,32": {"TILE_WIDTH": 32, "BLOCK_Y": 16, "TILE_K": 32, "time": 0.4, "times": [0.4, 0.4, 0.4], "compile_time": 100, "verification_time": 0, "benchmark_time": 9},
"16,32,16": {"TILE_WIDTH": 16, "BLOCK_Y": 32, "TILE_K": 16, "__error__": "CompilationFailedConfig", "compile_time": 50, "verification_time": 0, "benchmark_time": 0}}}
)";
  const CmdResult r =
      tiletune_cmd("import --format kernel_tuner cache.json --family my_gemm --templates kernels", dir);
  ASSERT_EQ(r.status, 0) << r.err;
}

// guided over a main job's chain of gemm_regtile, 2048^3 then 4096^3, with `extra` arguments: what the
// command printed, and its curves where it succeeded.
struct ChainRun {
  CmdResult result;
  nlohmann::json curves;
};
ChainRun chain_run(const TempDir& dir, const std::string& extra) {
  const std::string args = "replay --chain --space " + space("gemm_regtile-2048-h100.csv") + " --space " +
                           space("gemm_regtile-4096-h100.csv") + " --strategy guided --curves c.json " +
                           extra;
  ChainRun run{tiletune_cmd(args, dir), {}};
  if (run.result.status == 0) run.curves = nlohmann::json::parse(read_bytes(dir.path / "c.json"));
  return run;
}

}  // namespace

TEST(ReplayCli, PrintsTheTableAndWritesTheCurves) {
  TempDir dir;
  const std::string args = "replay --space " + space("conv1d_register-2p28-mask63-h100.csv") +
                           " --seeds 3 --strategy random --strategy guided --curves c.json";
  const CmdResult r = tiletune_cmd(args, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("evals 1%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" random "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" guided "), std::string::npos) << r.out;
  const auto curves = nlohmann::json::parse(read_bytes(dir.path / "c.json"));
  EXPECT_EQ(curves["format"], "tiletune-replay-curves");
  ASSERT_EQ(curves["spaces"].size(), 1u);
  EXPECT_EQ(curves["spaces"][0]["strategies"]["guided"].size(), 3u);  // one curve per seed
  std::set<std::size_t> points;  // each step names the configuration it measured, once
  for (const auto& step : curves["spaces"][0]["strategies"]["guided"][0]["curve"]) {
    ASSERT_EQ(step.size(), 4u) << step;
    EXPECT_TRUE(points.insert(step[3].get<std::size_t>()).second) << step;
    EXPECT_LT(step[3].get<std::size_t>(), 116u) << step;
  }
  EXPECT_FALSE(points.empty());
  EXPECT_EQ(tiletune_cmd(args, dir).out, r.out) << "the same seeds give the same table";
}

TEST(ReplayCli, WholeBudgetRunsToTheBudgetAndCountsUnusedCompiles) {
  TempDir dir;
  const std::string args = "replay --space " + space("conv1d_register-2p28-mask63-h100.csv") +
                           " --seeds 2 --strategy guided --budget 40 --whole-budget --curves c.json";
  const CmdResult r = tiletune_cmd(args, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("s whole"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unused compiles"), std::string::npos) << r.out;
  const auto curves = nlohmann::json::parse(read_bytes(dir.path / "c.json"));
  for (const auto& run : curves["spaces"][0]["strategies"]["guided"]) {
    EXPECT_EQ(run["curve"].size(), 40u) << "past the 1% target, up to the budget";
    EXPECT_GE(run["compiles"].get<int>(), 40 + run["unused_compiles"].get<int>());
    EXPECT_GT(run["compile_busy_s"].get<double>(), 0.0);
    EXPECT_GE(run["compile_wait_s"].get<double>(), 0.0);
  }
}

// A main job's chain of sizes: a line says what transfers from what, then the table in the chain's order,
// each seed run to the main job's budget.
TEST(ReplayCli, AChainReplaysEachSizeAfterTheOnesBefore) {
  TempDir dir;
  const ChainRun run = chain_run(dir, "--seeds 2 --budget 30");
  ASSERT_EQ(run.result.status, 0) << run.result.err;
  const std::string& out = run.result.out;
  EXPECT_EQ(out.rfind("chain of gemm_regtile: 2048x2048x2048", 0), 0u) << out;
  const auto at_2048 = out.find("gemm_regtile 2048x2048x2048"),
             at_4096 = out.find("gemm_regtile 4096x4096x4096");
  ASSERT_NE(at_4096, std::string::npos) << out;
  EXPECT_LT(at_2048, at_4096) << out;
  EXPECT_NE(out.find("s whole"), std::string::npos) << "a main job measures its whole budget: " << out;
  ASSERT_EQ(run.curves["spaces"].size(), 2u);
  for (const auto& space : run.curves["spaces"])
    for (const auto& seed : space["strategies"]["guided"]) EXPECT_EQ(seed["curve"].size(), 30u);
}

// Without --budget a chain measures what a main job would: 130 at each size, or what the family's
// default_budgets ask at one of its default sizes (gemm_regtile asks 390 at 4096^3).
TEST(ReplayCli, AChainWithoutABudgetGivesEachSizeWhatItsFamilyAsks) {
  TempDir dir;
  const ChainRun run = chain_run(dir, "--seeds 1");
  ASSERT_EQ(run.result.status, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("4096x4096x4096 NVIDIA H100 80GB HBM3 (budget 390, as its family asks)"),
            std::string::npos)
      << run.result.out;
  ASSERT_EQ(run.curves["spaces"].size(), 2u);
  EXPECT_EQ(run.curves["spaces"][0]["strategies"]["guided"][0]["curve"].size(), 130u);
  EXPECT_EQ(run.curves["spaces"][1]["strategies"]["guided"][0]["curve"].size(), 390u);
}

TEST(ReplayCli, BadInputGivesOneLine) {
  TempDir dir;
  const std::string ok = space("conv1d_register-2p28-mask63-h100.csv");
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"replay", "name at least one sweep"},
      {"replay --space nothing.csv", "nothing.csv: cannot be read"},
      {"replay --space " + ok + " --strategy bogus", "unknown strategy 'bogus'"},
      {"replay --space " + ok + " --seeds 0", "--seeds must be at least 1"},
      {"replay --space " + ok + " --transfer nothing.csv", "--transfer: nothing.csv: cannot be read"},
      {"replay --sweep 3 --db missing.db", "missing.db"},
      {"replay --chain --space " + ok, "--chain needs at least two spaces, got 1"},
      {"replay --chain --space " + ok + " --space " + space("gemm_regtile-1000-h100.csv"),
       "a chain is one family at several problems"},
  };
  for (const auto& c : cases) {
    const CmdResult r = tiletune_cmd(c.args, dir);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_EQ(lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
}

TEST(ReplayCli, WriteSpaceTakesPlanFeaturesOfAFamilyUnderTemplates) {
  TempDir dir;
  own_family_sweep(dir);
  // Without --templates the family is unknown: the space is written without plan features, saying why.
  CmdResult r = tiletune_cmd("replay --sweep 1 --write-space bare.csv", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no plan features"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(dir.path / "bare.csv").find(",threads,"), std::string::npos);
  r = tiletune_cmd("replay --sweep 1 --write-space planned.csv --templates kernels", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string planned = read_bytes(dir.path / "planned.csv");
  EXPECT_NE(planned.find(",threads,log2_blocks,"), std::string::npos) << planned;
  EXPECT_NE(planned.find("\n# problem: 1000x1000x1000\n"), std::string::npos) << planned;
  EXPECT_EQ(lines(planned), 4 + 3) << planned;  // three comment lines, the header, the three configurations
}
