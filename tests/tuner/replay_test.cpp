// Replay without a GPU: the simulated sweep loop's timing (the compile pool, the lanes, failures), that a
// seed gives one run, and the space read from a stored sweep.
#include "tiletune/replay.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include "../test_paths.hpp"
#include "tiletune/guided.hpp"
#include "tiletune/store.hpp"
#include "tiletune/strategy.hpp"

using namespace tiletune;

namespace {

// An 8x8 grid with its best at (5, 2); every point compiles in `compile_ms` and measures in `measure_ms`.
ReplaySpace grid(double compile_ms, double measure_ms) {
  ReplaySpace s;
  s.name = s.family = "grid";
  for (std::int64_t a = 0; a < 8; ++a)
    for (std::int64_t b = 0; b < 8; ++b) {
      ReplayPoint p;
      p.params = {{"A", a}, {"B", b}};
      p.median_ms = 1.0 + std::abs(a - 5) + 0.5 * std::abs(b - 2);
      p.compile_ms = compile_ms;
      p.measure_ms = measure_ms;
      s.points.push_back(p);
    }
  return s;
}

ReplayOptions everything(int jobs, std::size_t lanes) {
  ReplayOptions o;
  o.compile_jobs = jobs;
  o.lanes = lanes;
  o.stop_within = -1;
  return o;
}

// Two grids of one family as a main job's chain: four compilers, one lane, each space's whole `budget`.
struct TwoGrids {
  ReplaySpace first = grid(800, 300);
  ReplaySpace second = grid(800, 300);
  ReplayOptions options = everything(4, 1);
};
TwoGrids two_grids(std::size_t budget) {
  TwoGrids chain;
  chain.second.name = "grid at another size";
  chain.options.budget = budget;
  return chain;
}

}  // namespace

TEST(Replay, OneCompilerAndOneGpuTakeTheirTurns) {
  const ReplaySpace s = grid(1000, 500);
  const ReplayRun run = replay(s, replay_family(s), "brute_force", 1, everything(1, 1));
  ASSERT_EQ(run.curve.size(), 64u);
  // Each CUBIN is ready a second after the one before; its measurement takes half a second more.
  EXPECT_DOUBLE_EQ(run.curve.front().seconds, 1.5);
  EXPECT_DOUBLE_EQ(run.curve.back().seconds, 64.5);
  EXPECT_DOUBLE_EQ(run.curve.back().best_ms, 1.0);
}

TEST(Replay, ManyCompilersLeaveTheGpuTheBottleneck) {
  const ReplaySpace s = grid(1000, 1000);
  const ReplayRun run = replay(s, replay_family(s), "brute_force", 1, everything(4, 1));
  EXPECT_DOUBLE_EQ(run.curve.back().seconds, 65.0);  // the first CUBIN, then one measurement after another
  const ReplayRun two = replay(s, replay_family(s), "brute_force", 1, everything(64, 2));
  EXPECT_DOUBLE_EQ(two.curve.back().seconds, 33.0);  // two GPUs share the measuring
  EXPECT_EQ(two.curve.size(), 64u);
}

TEST(Replay, AFailedCompileNeverReachesTheGpu) {
  ReplaySpace s = grid(1000, 500);
  for (auto& p : s.points) p.median_ms.reset(), p.compiled = false;
  s.points[10].median_ms = 1.0, s.points[10].compiled = true;
  const ReplayRun run = replay(s, replay_family(s), "brute_force", 1, everything(1, 1));
  EXPECT_DOUBLE_EQ(run.curve.back().seconds, 64.0);  // only point 10 measured, the rest end compiled
  EXPECT_TRUE(std::isinf(run.curve[9].best_ms));
  EXPECT_DOUBLE_EQ(run.curve[10].best_ms, 1.0);
}

TEST(Replay, ASeedGivesOneRun) {
  const ReplaySpace s = grid(800, 300);
  const KernelFamily f = replay_family(s);
  for (const auto& name : strategy_names()) {
    const ReplayRun a = replay(s, f, name, 7, everything(3, 2));
    const ReplayRun b = replay(s, f, name, 7, everything(3, 2));
    ASSERT_EQ(a.curve.size(), b.curve.size()) << name;
    for (std::size_t i = 0; i < a.curve.size(); ++i) {
      EXPECT_EQ(a.curve[i].seconds, b.curve[i].seconds) << name << " step " << i;
      EXPECT_EQ(a.curve[i].best_ms, b.curve[i].best_ms) << name << " step " << i;
    }
  }
  const ReplayRun c = replay(s, f, "random", 8, everything(3, 2));
  const ReplayRun d = replay(s, f, "random", 7, everything(3, 2));
  // Another seed samples another order: the best-so-far curves part within the first eight measurements.
  const auto first_eight = [](const ReplayRun& r) {
    std::vector<double> best;
    for (std::size_t i = 0; i < 8; ++i) best.push_back(r.curve.at(i).best_ms);
    return best;
  };
  EXPECT_NE(first_eight(c), first_eight(d));
}

TEST(Replay, CountsTheCompilesThatWereNeverMeasured) {
  const ReplaySpace s = grid(1000, 100);
  const KernelFamily f = replay_family(s);
  // Brute force compiles ahead in its own order: every compile started is measured, and one compiler keeps
  // the single GPU waiting a second for each CUBIN but the ones it made while the GPU measured.
  const ReplayRun brute = replay(s, f, "brute_force", 1, everything(1, 1));
  EXPECT_EQ(brute.compiles, 64u);
  EXPECT_EQ(brute.unused_compiles, 0u);
  EXPECT_NEAR(brute.compile_busy_s, 64.0, 1e-9);
  EXPECT_NEAR(brute.compile_wait_s, 1.0 + 63 * 0.9, 1e-9);
  // Guided with a budget compiles its tail ahead: what a refit passed over is started but never measured.
  ReplayOptions o = everything(16, 1);
  o.budget = 24;
  const ReplayRun guided = replay(s, f, "guided", 1, o);
  ASSERT_EQ(guided.curve.size(), 24u);
  EXPECT_GT(guided.unused_compiles, 0u);
  EXPECT_EQ(guided.compiles, 24u + guided.unused_compiles);
  EXPECT_GT(guided.compile_wait_s, 0.0);
}

TEST(Replay, StopsWhenWithinTheTarget) {
  const ReplaySpace s = grid(100, 100);
  ReplayOptions o;
  o.stop_within = 0.01;
  const ReplayRun run = replay(s, replay_family(s), "random", 3, o);
  ASSERT_FALSE(run.curve.empty());
  EXPECT_DOUBLE_EQ(run.curve.back().best_ms, 1.0);
  EXPECT_EQ(run.reached(1.0, 0.01)->evaluations, run.curve.size());
  EXPECT_LE(run.reached(1.0, 1.0)->evaluations, run.curve.size());
}

TEST(Replay, StatCountsSeedsThatNeverReached) {
  const ReplayStat s = replay_stat({3, 1, INFINITY, 2});
  EXPECT_EQ(s.runs, 4u);
  EXPECT_EQ(s.reached, 3u);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.low, 1);
  EXPECT_TRUE(std::isinf(s.high));
}

namespace {

SweepSpec sweep_spec_for(const std::string& strategy) {
  SweepSpec s;
  s.family = "grid";
  s.template_hash = "hash";
  s.family_json = "{}";
  s.space_hash = "space";
  s.device.name = "NVIDIA H100 80GB HBM3";
  s.device.uuid = "GPU-replay";
  s.device.arch = "sm_90";
  s.device.sm_count = 132;
  s.problem.dims = {64};
  s.strategy = strategy;
  s.tiletune_version = "0";
  s.git_sha = "x";
  return s;
}

ResultRecord result(std::int64_t a, Outcome outcome, std::optional<double> median, std::optional<double> c) {
  ResultRecord r;
  r.params = {{"A", a}};
  r.outcome = outcome;
  r.reason = outcome == Outcome::ok ? "" : "made up";
  r.median_ms = median;
  r.compile_ms = c;
  r.measure_ms = median ? std::optional<double>(*median * 10) : std::nullopt;
  return r;
}

}  // namespace

TEST(Replay, ReadsAStoredSweepWithoutItsPrunedPoints) {
  test::TempDir dir;
  Store store = Store::open(dir.path / "r.db");
  const auto id =
      store.add_sweep(sweep_spec_for("brute_force"),
                      {result(3, Outcome::ok, 2.0, 100.0), result(1, Outcome::ok, 1.0, std::nullopt),
                       result(2, Outcome::pruned, std::nullopt, std::nullopt),
                       result(0, Outcome::compile_failed, std::nullopt, 300.0)});
  const ReplaySpace s = replay_space_from_store(store, id);
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_EQ(s.points[0].params.at("A"), 0);  // in the space's order
  EXPECT_FALSE(s.points[0].compiled);
  EXPECT_EQ(s.points[1].params.at("A"), 1);
  EXPECT_DOUBLE_EQ(s.points[1].compile_ms, 200.0);  // missing: the median of those stored
  EXPECT_DOUBLE_EQ(*s.best_ms(), 1.0);
}

TEST(Replay, RefusesASampleOrAnUnfinishedSweep) {
  test::TempDir dir;
  Store store = Store::open(dir.path / "r.db");
  const auto sample = store.add_sweep(sweep_spec_for("random"), {result(1, Outcome::ok, 1.0, 1.0)});
  const auto running =
      store.add_sweep(sweep_spec_for("brute_force"), {result(1, Outcome::ok, 1.0, 1.0)}, "interrupted");
  const auto none_ok =
      store.add_sweep(sweep_spec_for("brute_force"), {result(1, Outcome::compile_failed, std::nullopt, 1.0)});
  for (const auto& [id, says] :
       std::vector<std::pair<std::int64_t, std::string>>{{sample, "measured a sample"},
                                                         {running, "interrupted"},
                                                         {none_ok, "nothing ok"},
                                                         {99, "no such"}}) {
    try {
      replay_space_from_store(store, id);
      ADD_FAILURE() << "no refusal of sweep " << id;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

TEST(Replay, ASpaceFileReadsBackAsWritten) {
  test::TempDir dir;
  ReplaySpace s;
  s.name = "made up 64";
  s.family = "made_up";
  s.problem = ProblemKey{{64, 32}, {{"mask_width", 5}}};  // on a line of its own: the name holds none
  s.plan_names = {"threads", "waves"};
  for (std::int64_t a = 1; a <= 3; ++a) {
    ReplayPoint p;
    p.params = {{"A", a}, {"B", -a}};
    if (a != 2) p.median_ms = 0.25 * static_cast<double>(a);
    p.compiled = a != 3;
    p.compile_ms = 100.5;
    p.measure_ms = 7;
    p.plan = {128, 1.5f};
    s.points.push_back(p);
  }
  s.points[2].median_ms.reset();
  {
    std::ofstream out(dir.path / "s.csv");
    write_replay_space(s, out);
  }
  const ReplaySpace back = read_replay_space(dir.path / "s.csv");
  EXPECT_EQ(back.name, s.name);
  EXPECT_EQ(back.family, s.family);
  EXPECT_EQ(back.problem, s.problem);
  EXPECT_EQ(back.plan_names, s.plan_names);
  ASSERT_EQ(back.points.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.points[i].params, s.points[i].params);
    EXPECT_EQ(back.points[i].median_ms, s.points[i].median_ms);
    EXPECT_EQ(back.points[i].compiled, s.points[i].compiled);
    EXPECT_DOUBLE_EQ(back.points[i].compile_ms, 100.5);
    EXPECT_EQ(back.points[i].plan, s.points[i].plan);
  }
}

// A space file without a problem line (one written before it came) takes its problem from its first line,
// after its family (with its args where it has some); a name that holds none leaves the problem unknown.
TEST(Replay, ASpaceFileKnowsTheProblemItsNameHolds) {
  test::TempDir dir;
  const auto read_named = [&](const std::string& name) {
    {
      std::ofstream out(dir.path / "s.csv");
      out << "# tiletune replay space: " << name << "\n# family: conv\n"
          << "A,outcome,median_ms,compile_ms,measure_ms\n1,ok,0.5,10,2\n";
    }
    return read_replay_space(dir.path / "s.csv").problem;
  };
  EXPECT_EQ(read_named("conv 8192x4096 boundary=0,mask_width=15 NVIDIA H100 80GB HBM3"),
            (ProblemKey{{8192, 4096}, {{"boundary", 0}, {"mask_width", 15}}}));
  EXPECT_EQ(read_named("conv 1000x2000 NVIDIA H200"), (ProblemKey{{1000, 2000}, {}}));
  EXPECT_EQ(read_named("conv 1000x2000"), (ProblemKey{{1000, 2000}, {}}));
  EXPECT_EQ(read_named("other 1000x2000 NVIDIA H200"), std::nullopt);
  EXPECT_EQ(read_named("conv big NVIDIA H200"), std::nullopt);
}

TEST(Replay, AMalformedSpaceFileIsRefusedInOneLineNamingWhere) {
  test::TempDir dir;
  const std::string head =
      "# tiletune replay space: x\n# family: f\nA,outcome,median_ms,compile_ms,measure_ms\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "bad.csv: the first line must start"},
      {"# something else\n", "line 1: the first line"},
      {head + "1,ok,0.5,10,2\n2,maybe,0.5,10,2\n", "line 5, field outcome"},
      {head + "1,ok,fast,10,2\n", "line 4, field median_ms: not a number: 'fast'"},
      {head + "1,ok,0.5,10\n", "line 4: 4 fields, the header has 5"},
      {head + "1.5,ok,0.5,10,2\n", "line 4, field A: a parameter value must be an integer"},
      {head + "1,failed,0,10,2\n", "holds no ok configuration"},
      {"# tiletune replay space: x\n# family: f\nA,median_ms\n", "line 3: the header must name"},
      {"# tiletune replay space: x\n# family: f\n# problem: big\n", "line 3, field problem"},
      {"# tiletune replay space: x\n# family: f\n# problem: 64\n", "line 3: the header line is missing"},
  };
  for (const auto& [text, says] : cases) {
    {
      std::ofstream out(dir.path / "bad.csv");
      out << text;
    }
    try {
      read_replay_space(dir.path / "bad.csv");
      ADD_FAILURE() << "no refusal of: " << text;
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(says), std::string::npos) << what;
      EXPECT_NE(what.find("bad.csv"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  try {
    read_replay_space(dir.path / "missing.csv");
    ADD_FAILURE() << "no refusal of a missing file";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("missing.csv: cannot be read"), std::string::npos) << e.what();
  }
}

// A main job's chain: the first space is searched as replay alone would, each later one transfers from what
// the strategy measured before it, so the second starts from the first's best.
TEST(Replay, AChainTransfersFromWhatItsEarlierProblemsMeasured) {
  if (!guided_unavailable().empty()) GTEST_SKIP() << guided_unavailable();
  const auto [first, second, o] = two_grids(20);
  const std::vector<ReplayRun> runs = replay_chain({first, second}, "guided", 3, o);
  ASSERT_EQ(runs.size(), 2u);
  const ReplayRun alone = replay(first, replay_family(first), "guided", 3, o);
  ASSERT_EQ(runs[0].curve.size(), alone.curve.size());
  for (std::size_t i = 0; i < alone.curve.size(); ++i)
    EXPECT_EQ(runs[0].curve[i].point, alone.curve[i].point);

  const PriorSweep earlier = prior_sweep_of(first, runs[0]);
  ASSERT_EQ(earlier.results.size(), 20u);
  ASSERT_EQ(earlier.grids.size(), 0u);  // the grid has no plan features, so no grids
  for (std::size_t i = 0; i < 20; ++i)
    EXPECT_EQ(earlier.results[i].first, first.points[runs[0].curve[i].point].params);
  ASSERT_FALSE(runs[1].curve.empty());
  EXPECT_EQ(runs[1].curve.front().best_ms, runs[0].curve.back().best_ms) << "the earlier best measured first";

  const std::vector<ReplayRun> again = replay_chain({first, second}, "guided", 3, o);
  for (std::size_t i = 0; i < again[1].curve.size(); ++i)
    EXPECT_EQ(again[1].curve[i].point, runs[1].curve[i].point) << "a seed gives one chain";
  ReplaySpace other = grid(800, 300);
  other.family = "another";
  EXPECT_THROW(replay_chain({first, other}, "guided", 3, o), std::invalid_argument);
}

// A chain measures each space's whole budget: the chain's own, or the one given for that space (as a
// family's default_budgets give a main job's problem its own).
TEST(Replay, AChainGivesEachSpaceItsOwnBudgetWhereOneIsGiven) {
  if (!guided_unavailable().empty()) GTEST_SKIP() << guided_unavailable();
  const auto [first, second, o] = two_grids(20);
  const auto measured = [](const ReplayRun& run) {
    std::set<std::size_t> points;
    for (const auto& step : run.curve) points.insert(step.point);
    return points.size();
  };
  const std::vector<ReplayRun> same = replay_chain({first, second}, "guided", 5, o);
  EXPECT_EQ(measured(same[0]), 20u);
  EXPECT_EQ(measured(same[1]), 20u);
  const std::vector<ReplayRun> own = replay_chain({first, second}, "guided", 5, o, {0, 45});
  EXPECT_EQ(measured(own[0]), 20u);
  EXPECT_EQ(measured(own[1]), 45u);
}
