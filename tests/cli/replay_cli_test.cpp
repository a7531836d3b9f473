// tiletune replay as a user meets it: a table per space and strategy, curves as JSON, and one line for each
// bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"

using tiletune::test::CmdResult;
using tiletune::test::lines;
using tiletune::test::read_bytes;
using tiletune::test::TempDir;
using tiletune::test::tiletune_cmd;

namespace {

std::string space(const std::string& name) { return (tiletune::test::spaces_dir() / name).string(); }

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
  };
  for (const auto& c : cases) {
    const CmdResult r = tiletune_cmd(c.args, dir);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_EQ(lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
}
