// Spaces of any size: the lazily indexed space, the shuffled draw order, and the sampling strategies that
// find their candidates as they go, driven without a GPU through a prune function.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "../test_paths.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/strategy.hpp"
#include "tiletune/sweep.hpp"

using namespace tiletune;

namespace {

const std::vector<KernelFamily>& builtin() {
  static const auto fams = load_families({tiletune::test::templates_dir()});
  return fams;
}

// `params` parameters P0, P1, ... of the values 0 .. values-1. A constraint prunes a third of the space and
// the block size (32 * (P2 + 1) threads) prunes what is over the H100's 1024 threads, so about a fifth runs.
KernelFamily synthetic(int params, int values, const std::string& constraint = "(P0 + P1) % 3 != 0") {
  KernelFamily f;
  f.name = "synthetic";
  for (int k = 0; k < params; ++k) {
    Parameter p{std::string("P").append(std::to_string(k)), {}, 0};
    for (int v = 0; v < values; ++v) p.values.push_back(v);
    f.parameters.push_back(p);
  }
  f.constraints.push_back({Expr::parse(constraint), "the constraint"});
  f.launch.block = {Expr::parse(params > 2 ? "32 * (P2 + 1)" : "32")};
  f.launch.grid = {Expr::parse("1")};
  f.launch.dynamic_shared_bytes = Expr::parse("0");
  f.launch.static_shared_bytes = Expr::parse("0");
  return f;
}

// The synthetic family's rule, written out independently of the planner.
bool runs(const Params& p) { return (p.at("P0") + p.at("P1")) % 3 != 0 && 32 * (p.at("P2") + 1) <= 1024; }

// A smooth landscape with one best point, every parameter at 37.
double cost(const Params& p) {
  double c = 1;
  for (const auto& [name, v] : p) c += std::abs(static_cast<double>(v - 37));
  return c;
}

struct Drive {
  std::vector<Params> asked;          // in the order the strategy asked for them
  std::vector<PlannedConfig> pruned;  // what the visits reported as pruned
  std::uint64_t visited = 0;          // points the space pruned (its memory follows this, not the size)
  std::size_t table = 0;              // candidate slots
  std::string stop;
};

// Runs a lazy strategy to its end, measuring each candidate with `cost` as a sweep would.
Drive drive(const KernelFamily& f, const std::string& name, std::size_t budget, std::uint64_t seed,
            const std::set<std::string>& stored = {}) {
  Drive d;
  const DeviceLimits h100 = load_profile("h100");
  LazyCandidates space(
      f, [&](const Params& p) { return prune_before_compile(f, h100, ProblemKey{}, p); },
      [&](PlannedConfig&& c) { d.pruned.push_back(std::move(c)); },
      [&](const Params& p) { return stored.count(params_to_text(p)) > 0; });
  auto s = make_lazy_strategy(name, space, budget, seed);
  std::vector<std::optional<double>> times;
  while (auto i = s->next(times)) {
    times.resize(space.candidates().size());
    EXPECT_FALSE(times[*i].has_value()) << name << " asked for a candidate twice";
    for (std::size_t u : s->upcoming()) {
      EXPECT_LT(u, space.candidates().size());
      if (u < times.size()) {
        EXPECT_FALSE(times[u].has_value()) << "announced a measured candidate";
      }
    }
    times[*i] = cost(space.candidates()[*i].params);
    d.asked.push_back(space.candidates()[*i].params);
  }
  d.visited = space.visited();
  d.table = space.candidates().size();
  d.stop = s->stop_reason();
  return d;
}

// How many parameters differ between a and b, and whether each that does moved one step along its list.
std::pair<int, bool> difference(const KernelFamily& f, const Params& a, const Params& b) {
  int differ = 0;
  bool one_step = true;
  for (const auto& p : f.parameters) {
    const auto ia = std::find(p.values.begin(), p.values.end(), a.at(p.name)) - p.values.begin();
    const auto ib = std::find(p.values.begin(), p.values.end(), b.at(p.name)) - p.values.begin();
    if (ia != ib) {
      ++differ;
      one_step = one_step && std::abs(ia - ib) == 1;
    }
  }
  return {differ, one_step};
}

}  // namespace

// The index decodes in enumerate_space's order, and index_of is its inverse.
TEST(LazySpace, IndexDecodesInEnumerationOrder) {
  for (const char* name : {"gemm_tiled", "conv1d_tiled"}) {
    const auto& f = find_family(builtin(), name);
    const std::vector<Params> all = enumerate_space(f);
    const SpaceIndex space(f);
    ASSERT_EQ(space.size(), all.size());
    for (std::uint64_t i = 0; i < space.size(); ++i) {
      EXPECT_EQ(space.at(i), all[i]) << name << " " << i;
      EXPECT_EQ(space.index_of(all[i]).value_or(~0ull), i) << name;
    }
  }
  const SpaceIndex huge(synthetic(8, 100));
  EXPECT_EQ(huge.size(), 10'000'000'000'000'000ull);
  const std::uint64_t i = 1234567890123456ull;
  const Params p = huge.at(i);
  EXPECT_EQ(p.at("P0"), 12);  // the first parameter is the most significant digit
  EXPECT_EQ(p.at("P7"), 56);
  EXPECT_EQ(huge.index_of(p).value_or(0), i);
  EXPECT_EQ(huge.at(huge.size() - 1).at("P3"), 99);
  Params outside = p;
  outside["P4"] = 100;
  EXPECT_FALSE(huge.index_of(outside).has_value());
  outside.erase("P4");
  EXPECT_FALSE(huge.index_of(outside).has_value());
}

// Annealing's neighbourhood by index arithmetic: exactly one parameter, one step along its list, and every
// such configuration (fewer at the ends of a list).
TEST(LazySpace, NeighboursDifferInExactlyOneParameterByOneStep) {
  const KernelFamily f = synthetic(8, 100);
  const SpaceIndex space(f);
  for (std::uint64_t i : {0ull, 1ull, 99ull, 5'000'000'000'000'000ull, 9'999'999'999'999'999ull,
                          1234567890123456ull, 9'900'000'000'000'000ull}) {
    const Params at = space.at(i);
    int expected = 0;
    for (const auto& [name, v] : at) expected += (v > 0) + (v < 99);
    const auto n = space.neighbours(i);
    EXPECT_EQ(static_cast<int>(n.size()), expected) << i;
    EXPECT_EQ(std::set<std::uint64_t>(n.begin(), n.end()).size(), n.size());
    for (std::uint64_t j : n) {
      ASSERT_LT(j, space.size());
      EXPECT_EQ(difference(f, at, space.at(j)), std::make_pair(1, true)) << i << " -> " << j;
    }
  }
  // Values need not be sorted nor evenly spaced: a step is along the list.
  const auto& tiled = find_family(builtin(), "gemm_tiled");
  const SpaceIndex small(tiled);
  for (std::uint64_t i = 0; i < small.size(); i += 37)
    for (std::uint64_t j : small.neighbours(i))
      EXPECT_EQ(difference(tiled, small.at(i), small.at(j)), std::make_pair(1, true));
}

// The draw order is a permutation of [0, n) for every n, and position_of inverts it.
TEST(LazySpace, ShuffleDrawsEveryIndexOnce) {
  for (std::uint64_t n : {1ull, 2ull, 3ull, 4ull, 5ull, 17ull, 1000ull, 4097ull, 70000ull}) {
    const IndexShuffle shuffle(n, 42);
    std::vector<bool> seen(n, false);
    for (std::uint64_t p = 0; p < n; ++p) {
      const std::uint64_t i = shuffle[p];
      ASSERT_LT(i, n);
      EXPECT_FALSE(seen[i]) << n << ": " << i << " drawn twice";
      seen[i] = true;
      EXPECT_EQ(shuffle.position_of(i), p);
    }
  }
  // The whole 64-bit range, and a size just under it.
  for (std::uint64_t n : {~0ull, 10'000'000'000'000'000ull}) {
    const IndexShuffle shuffle(n, 7);
    std::set<std::uint64_t> drawn;
    for (std::uint64_t p = 0; p < 1000; ++p) {
      const std::uint64_t i = shuffle[p];
      EXPECT_LT(i, n);
      drawn.insert(i);
      EXPECT_EQ(shuffle.position_of(i), p);
    }
    EXPECT_EQ(drawn.size(), 1000u);
  }
  // Seeded: the same seed gives the same order, another seed another.
  EXPECT_EQ(IndexShuffle(1'000'000'007ull, 1)[5], IndexShuffle(1'000'000'007ull, 1)[5]);
  int same = 0;
  for (std::uint64_t p = 0; p < 100; ++p)
    same += IndexShuffle(1'000'000'007ull, 1)[p] == IndexShuffle(1'000'000'007ull, 2)[p];
  EXPECT_LT(same, 5);
}

// Random over 10^16 configurations with a budget of 50: 50 distinct runnable points, quickly, with memory
// that follows the budget; every pruned point is reported with its reason and never asked for; the same seed
// gives the same sample.
TEST(LazySpace, RandomSamplesAHugeSpaceWithinItsBudget) {
  const KernelFamily f = synthetic(8, 100);
  const auto t0 = std::chrono::steady_clock::now();
  const Drive d = drive(f, "random", 50, 7);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  ASSERT_EQ(d.asked.size(), 50u);
  std::set<std::string> asked;
  for (const auto& p : d.asked) {
    EXPECT_TRUE(runs(p)) << params_to_text(p);
    asked.insert(params_to_text(p));
  }
  EXPECT_EQ(asked.size(), 50u);
  EXPECT_GT(d.pruned.size(), 50u);  // about four in five points are pruned
  std::set<std::string> pruned;
  for (const auto& c : d.pruned) {
    EXPECT_EQ(c.outcome, Outcome::pruned);
    EXPECT_FALSE(runs(c.params)) << params_to_text(c.params);
    EXPECT_TRUE(c.reason == "constraint: the constraint" ||
                c.reason == "threads: block x " + std::to_string(c.launch.threads()) + " > 1024")
        << c.reason;
    EXPECT_TRUE(pruned.insert(params_to_text(c.params)).second) << "reported twice";
    EXPECT_EQ(asked.count(params_to_text(c.params)), 0u);
  }
  // Memory: the drawn points (and candidate slots) follow the budget, never the space.
  EXPECT_EQ(d.visited, d.pruned.size() + d.table);
  EXPECT_LE(d.table, 50u);  // the look-ahead never draws past the budget
  EXPECT_LT(d.visited, 2000u);
  EXPECT_TRUE(d.stop.empty());

  const Drive again = drive(f, "random", 50, 7);
  EXPECT_EQ(again.asked, d.asked);
  const Drive other = drive(f, "random", 50, 8);
  EXPECT_NE(other.asked, d.asked);

  // Nothing pruned: exactly the budget is drawn.
  const KernelFamily wide = [] {
    KernelFamily w = synthetic(8, 100, "1");
    w.launch.block = {Expr::parse("32")};
    return w;
  }();
  const Drive all_run = drive(wide, "random", 50, 7);
  EXPECT_EQ(all_run.asked.size(), 50u);
  EXPECT_EQ(all_run.visited, 50u);
  EXPECT_TRUE(all_run.pruned.empty());
}

// A resumed sampling sweep walks the same draws and passes over what was stored (measured or pruned): it
// measures the next points of the sample and reports no stored point again.
TEST(LazySpace, ResumedRandomPassesOverWhatWasStored) {
  const KernelFamily f = synthetic(8, 100);
  const Drive first = drive(f, "random", 30, 11);
  ASSERT_EQ(first.asked.size(), 30u);
  // Interrupted after 12 measurements: those and every pruned point drawn so far are stored.
  std::set<std::string> stored;
  for (std::size_t i = 0; i < 12; ++i) stored.insert(params_to_text(first.asked[i]));
  for (const auto& c : first.pruned) stored.insert(params_to_text(c.params));
  const Drive resumed = drive(f, "random", 18, 11, stored);
  ASSERT_EQ(resumed.asked.size(), 18u);
  for (std::size_t i = 0; i < 18; ++i) EXPECT_EQ(resumed.asked[i], first.asked[12 + i]) << i;
  // Every point drawn up to the 30th runnable one was stored: nothing is reported again.
  EXPECT_TRUE(resumed.pruned.empty());
}

// Annealing over 10^16 configurations: its moves are to neighbours (one parameter, one step), computed from
// indices; it never asks twice nor for a pruned point, reports each pruned point once, finds better points
// on a smooth landscape, and is reproducible from the seed.
TEST(LazySpace, AnnealingWalksAHugeSpaceByNeighbours) {
  const KernelFamily f = synthetic(8, 100);
  const Drive d = drive(f, "annealing", 200, 5);
  ASSERT_EQ(d.asked.size(), 200u);
  std::set<std::string> asked, pruned;
  int restarts = 0;
  for (std::size_t i = 0; i < d.asked.size(); ++i) {
    EXPECT_TRUE(runs(d.asked[i]));
    EXPECT_TRUE(asked.insert(params_to_text(d.asked[i])).second);
    bool near = false;
    for (std::size_t j = 0; j < i && !near; ++j)
      near = difference(f, d.asked[i], d.asked[j]) == std::make_pair(1, true);
    restarts += !near;
  }
  EXPECT_LT(restarts, 20) << "annealing should mostly walk to neighbours";
  for (const auto& c : d.pruned) {
    EXPECT_FALSE(runs(c.params));
    EXPECT_TRUE(pruned.insert(params_to_text(c.params)).second)
        << "reported twice: " << params_to_text(c.params);
    EXPECT_EQ(asked.count(params_to_text(c.params)), 0u);
  }
  double best = cost(d.asked.front());
  for (const auto& p : d.asked) best = std::min(best, cost(p));
  EXPECT_LE(best, cost(d.asked.front()) - 5);
  // Memory: the neighbourhoods of what was measured, not the space.
  EXPECT_LT(d.visited, 200u * 16u * 2u);
  EXPECT_EQ(drive(f, "annealing", 200, 5).asked, d.asked);
}

// Guided search over 10^16 configurations: it ranks a pool drawn lazily; it never asks twice nor for a pruned
// point, reports each pruned point once, beats a random sample of the same budget on a smooth landscape,
// keeps memory to its pool, and is reproducible from the seed.
TEST(LazySpace, GuidedWalksAHugeSpaceByItsModel) {
  const KernelFamily f = synthetic(8, 100);
  const Drive d = drive(f, "guided", 120, 5);
  ASSERT_EQ(d.asked.size(), 120u);
  std::set<std::string> asked, pruned;
  for (const auto& p : d.asked) {
    EXPECT_TRUE(runs(p)) << params_to_text(p);
    EXPECT_TRUE(asked.insert(params_to_text(p)).second) << "asked twice: " << params_to_text(p);
  }
  for (const auto& c : d.pruned) {
    EXPECT_FALSE(runs(c.params));
    EXPECT_TRUE(pruned.insert(params_to_text(c.params)).second)
        << "reported twice: " << params_to_text(c.params);
  }
  const auto best_of = [](const Drive& run) {
    double best = INFINITY;
    for (const auto& p : run.asked) best = std::min(best, cost(p));
    return best;
  };
  EXPECT_LT(best_of(d), best_of(drive(f, "random", 120, 5)) * 0.8);
  EXPECT_LT(d.visited, 40'000u);  // the pool, not the space
  EXPECT_EQ(drive(f, "guided", 120, 5).asked, d.asked);
}

// When no point runs, the draws give up after kMaxFruitlessDraws in a row, each pruned point reported, and
// say why.
TEST(LazySpace, DrawsGiveUpWhenNothingRuns) {
  const KernelFamily f = synthetic(8, 100, "0");
  for (const char* name : {"random", "annealing", "guided"}) {
    const Drive d = drive(f, name, 10, 3);
    EXPECT_TRUE(d.asked.empty()) << name;
    EXPECT_EQ(d.pruned.size(), kMaxFruitlessDraws) << name;
    EXPECT_EQ(d.stop, "gave up: 100000 draws in a row found nothing runnable") << name;
  }
}

// The refusals, each one line naming the space's size: brute force or a plan above kMaxSpaceSize, sampling
// without a budget, and a space whose size does not fit in 64 bits.
TEST(LazySpace, SpacesThatCannotBeWalkedAreRefusedWithTheirSize) {
  auto error_of = [](auto&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const KernelFamily huge = synthetic(8, 100);
  SweepOptions o;
  const std::string size =
      "the space has 10000000000000000 configurations (100 P0 x 100 P1 x 100 P2 x 100 P3 x "
      "100 P4 x 100 P5 x 100 P6 x 100 P7)";
  o.strategy = "brute_force";
  o.budget = 50;
  std::string e = error_of([&] { sweep_space_walk(huge, o); });
  EXPECT_EQ(
      e, "synthetic: " + size +
             ", more than the 1000000 brute force measures; sample it with --strategy random --budget N (or "
             "annealing)");
  EXPECT_THROW(sweep_space_walk(huge, o), SweepError);
  o.strategy = "random";
  o.budget = 0;
  e = error_of([&] { sweep_space_walk(huge, o); });
  EXPECT_EQ(e,
            "synthetic: " + size +
                ", more than the 1000000 a sweep enumerates; --strategy random samples it with --budget N");
  o.budget = 50;
  EXPECT_EQ(sweep_space_walk(huge, o), SpaceWalk::sampled);
  o.strategy = "annealing";
  EXPECT_EQ(sweep_space_walk(huge, o), SpaceWalk::sampled);
  o.strategy = "brute_force";
  o.budget = 0;
  EXPECT_EQ(sweep_space_walk(find_family(builtin(), "gemm_tiled"), o), SpaceWalk::enumerated);

  // A plan (and anything that enumerates) refuses it too, and says how to sample it.
  e = error_of([&] { check_space_enumerable(huge); });
  EXPECT_NE(
      e.find(size + ", more than the 1000000 a plan or a brute-force sweep holds; sample it with 'tiletune "
                    "sweep --strategy random --budget N'"),
      std::string::npos)
      << e;
  EXPECT_EQ(error_of([&] { enumerate_space(huge); }), e);

  // 100^10 overflows 64 bits: refused by every path, with its description.
  const KernelFamily overflow = synthetic(10, 100);
  EXPECT_FALSE(space_size(overflow).has_value());
  const std::string more =
      "synthetic: the space has more than 2^64 configurations (100 P0 x 100 P1 x 100 P2 x 100 P3 "
      "x 100 P4 x 100 P5 x 100 P6 x 100 P7 x 100 P8 x 100 P9), more than a 64-bit index can "
      "address; give its parameters fewer values";
  o.strategy = "random";
  o.budget = 50;
  EXPECT_EQ(error_of([&] { sweep_space_walk(overflow, o); }), more);
  EXPECT_EQ(error_of([&] { SpaceIndex{overflow}; }), more);
  EXPECT_EQ(error_of([&] { enumerate_space(overflow); }), more);
  EXPECT_EQ(error_of([&] { LazyCandidates(overflow, [](const Params&) { return PlannedConfig{}; }); }), more);
  for (const auto& m : {e, more}) EXPECT_EQ(m.find('\n'), std::string::npos);

  // The lazy strategies themselves.
  LazyCandidates space(huge, [](const Params& p) {
    PlannedConfig c;
    c.params = p;
    return c;
  });
  EXPECT_THROW(make_lazy_strategy("brute_force", space, 10, 1), std::invalid_argument);
  EXPECT_THROW(make_lazy_strategy("random", space, 0, 1), std::invalid_argument);
  EXPECT_THROW(make_lazy_strategy("genetic", space, 10, 1), std::invalid_argument);
}

// Jobs added after construction compile when prefetched or asked for, as a sampled sweep adds them.
TEST(LazySpace, BackgroundCompilerTakesJobsAfterConstruction) {
  const auto& f = find_family(builtin(), "conv1d_tiled");
  const DeviceLimits device = load_profile("h100");
  const std::vector<Params> all = enumerate_space(f);
  test::TempDir dir;
  const CompileCache cache(dir.path);
  BackgroundCompiler compiler({}, cache, 2, /*eager=*/false);
  EXPECT_EQ(compiler.size(), 0u);
  const std::size_t first = compiler.add_jobs({compile_job(f, device, all[0])});
  const std::size_t second =
      compiler.add_jobs({compile_job(f, device, all[1]), compile_job(f, device, all[2])});
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(second, 1u);
  ASSERT_EQ(compiler.size(), 3u);
  EXPECT_EQ(compiler.key(2), cache.key(compile_job(f, device, all[2])));
  compiler.prefetch({2, 0});
  for (std::size_t i : {0, 2, 1}) {
    const CompileResult r = compiler.get(i, false);
    ASSERT_TRUE(std::holds_alternative<CompiledKernel>(r)) << i;
    EXPECT_GT(std::get<CompiledKernel>(r).usage.registers, 0);
    EXPECT_TRUE(std::filesystem::exists(dir.path / (compiler.key(i) + ".json"))) << i;
  }
}

// The command refuses before it needs a GPU or writes the database: 'tiletune plan' and a brute-force sweep
// on a space above kMaxSpaceSize, a sampling sweep without a budget, in one line naming the size.
TEST(LazySpace, CommandsRefuseHugeSpacesInOneLine) {
  const auto bin = tiletune::test::tiletune_binary();
  if (bin.empty()) GTEST_SKIP() << "no tiletune binary built";
  test::TempDir dir;
  // gemm_tiled with two more parameters of 1000 values: 729 million configurations.
  const auto& tiled = find_family(builtin(), "gemm_tiled");
  std::filesystem::create_directories(dir.path / "fams" / "gemm_huge");
  std::string json = tiled.description_json;
  json.replace(json.find("\"gemm_tiled\""), 12, "\"gemm_huge\"");
  std::string extra;
  for (const char* name : {"EXTRA_A", "EXTRA_B"}) {
    extra += std::string("\"") + name + "\": {\"values\": [";
    for (int v = 0; v < 1000; ++v) extra += (v ? ", " : "") + std::to_string(v);
    extra += "], \"default\": 0}, ";
  }
  json.insert(json.find("\"TILE_WIDTH\""), extra);
  std::ofstream(dir.path / "fams" / "gemm_huge" / "family.json") << json;
  std::filesystem::copy_file(tiled.directory / tiled.source_file,
                             dir.path / "fams" / "gemm_huge" / tiled.source_file);
  const std::string db = (dir.path / "t.db").string();
  auto run = [&](const std::string& args, int* status) {
    const std::string cmd = "'" + bin.string() + "' " + args + " --templates '" +
                            (dir.path / "fams").string() + "' --family gemm_huge --size 100x100x100 --db '" +
                            db + "' 2>&1";
    FILE* pipe = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
    *status = ::pclose(pipe);
    return out;
  };
  const std::string size =
      "gemm_huge: the space has 729000000 configurations (9 BLOCK_Y x 1000 EXTRA_A x 1000 EXTRA_B x 9 "
      "TILE_K x 9 TILE_WIDTH)";
  int status = 0;
  std::string out = run("plan --no-compile", &status);
  EXPECT_NE(status, 0);
  EXPECT_EQ(out,
            "tiletune plan: " + size +
                ", more than the 1000000 a plan or a brute-force sweep holds; sample it with 'tiletune sweep "
                "--strategy random --budget N' or give its parameters fewer values\n");
  out = run("sweep", &status);
  EXPECT_NE(status, 0);
  EXPECT_EQ(
      out,
      "tiletune sweep: " + size +
          ", more than the 1000000 brute force measures; sample it with --strategy random --budget N (or "
          "annealing)\n");
  out = run("sweep --strategy annealing", &status);
  EXPECT_EQ(
      out,
      "tiletune sweep: " + size +
          ", more than the 1000000 a sweep enumerates; --strategy annealing samples it with --budget N\n");
  EXPECT_FALSE(std::filesystem::exists(db)) << "refused before the database was opened";
}
