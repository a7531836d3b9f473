#include "tiletune/plan.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../test_paths.hpp"

using namespace tiletune;

namespace {

const std::vector<KernelFamily>& builtin() {
  static const auto fams = load_families({tiletune::test::templates_dir()});
  return fams;
}

}  // namespace

// The expected counts are derived here from the kernel's definition, independently of the planner:
// TILE_K must equal TILE_WIDTH or BLOCK_Y, and a block has TILE_WIDTH x BLOCK_Y threads (at most 1024).
TEST(Plan, GemmTiledOnH100PrunesExactlyTheImpossibleConfigurations) {
  const auto& f = find_family(builtin(), "gemm_tiled");
  const DeviceLimits h100 = load_profile("h100");
  const ProblemKey p = f.make_problem({1000, 1000, 1000}, {});
  const std::vector<int> v = {4, 8, 12, 16, 20, 24, 32, 48, 64};
  int constraint = 0, threads = 0, runnable = 0;
  for (int tw : v)
    for (int by : v)
      for (int tk : v) {
        if (tk != tw && tk != by)
          ++constraint;
        else if (tw * by > 1024)
          ++threads;
        else
          ++runnable;
      }
  ASSERT_EQ(constraint + threads + runnable, 729);
  CompileCache no_cache{""};
  PlanOptions o;
  o.compile = false;
  const Plan plan = make_plan(f, h100, p, no_cache, o);
  ASSERT_EQ(plan.configs.size(), 729u);
  EXPECT_EQ(plan.count(Outcome::ok), static_cast<std::size_t>(runnable));
  EXPECT_EQ(plan.count(Outcome::pruned), static_cast<std::size_t>(constraint + threads));
  int seen_constraint = 0, seen_threads = 0;
  for (const auto& c : plan.configs) {
    if (c.outcome != Outcome::pruned) continue;
    if (c.reason == "constraint: TILE_K must equal TILE_WIDTH or BLOCK_Y")
      ++seen_constraint;
    else if (c.reason.rfind("threads: ", 0) == 0) {
      ++seen_threads;
      EXPECT_GT(c.params.at("TILE_WIDTH") * c.params.at("BLOCK_Y"), 1024) << c.reason;
    } else
      ADD_FAILURE() << "unexpected reason " << c.reason;
  }
  EXPECT_EQ(seen_constraint, constraint);
  EXPECT_EQ(seen_threads, threads);
  // The seed's configurations over 1024 threads stay in the space, pruned with their reason.
  int seen_seed_48 = 0;
  for (const auto& c : plan.configs) {
    if (c.params == Params{{"BLOCK_Y", 48}, {"TILE_K", 48}, {"TILE_WIDTH", 48}}) {
      ++seen_seed_48;
      EXPECT_EQ(c.reason, "threads: 2304 per block > 1024");
    }
  }
  EXPECT_EQ(seen_seed_48, 1);
}

TEST(Plan, SharedMemoryIsCheckedAgainstTheOptInLimit) {
  const auto& f = find_family(builtin(), "conv1d_tiled");
  DeviceLimits small = load_profile("h100");
  small.shared_per_block_optin = 2048;  // a made-up device with little shared memory
  const ProblemKey p = f.make_problem({1 << 20}, {{"mask_width", 63}});
  const auto c = prune_before_compile(f, small, p, {{"BLOCK_SIZE", 1024}, {"LOAD_STRATEGY", 1}});
  EXPECT_EQ(c.outcome, Outcome::pruned);
  EXPECT_EQ(c.reason, "shared memory: 4344 B per block > 2 KB opt-in maximum");
  const auto ok = prune_before_compile(f, small, p, {{"BLOCK_SIZE", 256}, {"LOAD_STRATEGY", 1}});
  EXPECT_EQ(ok.outcome, Outcome::ok) << ok.reason;
  EXPECT_EQ(ok.launch.dynamic_smem, 4 * (256 + 62));
  EXPECT_EQ(ok.launch.grid[0], (1 << 20) / 256);
}

TEST(Plan, ProblemArgumentsEnterConstraints) {
  const auto& f = find_family(builtin(), "conv1d_tiled");
  const DeviceLimits h100 = load_profile("h100");
  // Edge-thread halo loading needs r = mask_width / 2 <= BLOCK_SIZE; a 16-thread block fails it at mask 63.
  const ProblemKey wide = f.make_problem({1000}, {{"mask_width", 63}});
  const ProblemKey narrow = f.make_problem({1000}, {{"mask_width", 31}});
  const auto edge = prune_before_compile(f, h100, wide, {{"BLOCK_SIZE", 16}, {"LOAD_STRATEGY", 0}});
  EXPECT_EQ(edge.outcome, Outcome::pruned);
  EXPECT_EQ(edge.reason, "constraint: edge-thread halo loading needs mask_width / 2 <= BLOCK_SIZE");
  EXPECT_EQ(prune_before_compile(f, h100, wide, {{"BLOCK_SIZE", 16}, {"LOAD_STRATEGY", 1}}).outcome,
            Outcome::ok);
  EXPECT_EQ(prune_before_compile(f, h100, narrow, {{"BLOCK_SIZE", 16}, {"LOAD_STRATEGY", 0}}).outcome,
            Outcome::ok);
}

// Constraints read the device's compute capability as 'cc': gemm_regtile's cluster split-K needs sm_90.
TEST(Plan, ConstraintsReadTheComputeCapability) {
  const auto& f = find_family(builtin(), "gemm_regtile");
  const ProblemKey p = f.make_problem({1000, 1000, 1000}, {});
  Params split = f.default_params();
  split["SPLIT_K"] = 2;
  const auto on_h100 = prune_before_compile(f, load_profile("h100"), p, split);
  EXPECT_EQ(on_h100.outcome, Outcome::ok) << on_h100.reason;
  EXPECT_EQ(on_h100.launch.grid[2], 2);
  EXPECT_EQ(on_h100.launch.dynamic_smem, 4 * 128 * 256);  // the reduction buffer outgrows the pipeline's
  const auto on_a100 = prune_before_compile(f, load_profile("a100"), p, split);
  EXPECT_EQ(on_a100.outcome, Outcome::pruned);
  EXPECT_EQ(on_a100.reason, "constraint: SPLIT_K > 1 reduces through thread block clusters (sm_90 or newer)");
  EXPECT_EQ(prune_before_compile(f, load_profile("a100"), p, f.default_params()).outcome, Outcome::ok);
}

// Launch expressions read the device's SM count as 'sms': stream-K launches one block per SM whatever the
// size.
TEST(Plan, LaunchReadsTheSmCount) {
  const auto& f = find_family(builtin(), "gemm_regtile");
  Params sk = f.default_params();
  sk["STREAM_K"] = 1;
  for (const auto& [profile, sms] : {std::pair<const char*, int>{"h100", 132}, {"a100", 108}})
    for (const auto& size : {std::vector<std::int64_t>{1, 1, 1}, {2000, 2000, 2000}, {16384, 256, 4096}}) {
      const auto c = prune_before_compile(f, load_profile(profile), f.make_problem(size, {}), sk);
      ASSERT_EQ(c.outcome, Outcome::ok) << c.reason;
      EXPECT_EQ(c.launch.grid[0], sms) << profile;
      EXPECT_EQ(c.launch.grid[1], 1);
    }
  const auto data_parallel = prune_before_compile(f, load_profile("h100"),
                                                  f.make_problem({2000, 2000, 2000}, {}), f.default_params());
  EXPECT_EQ(data_parallel.launch.grid[0], 8);  // ceil(2000 / 256)
  EXPECT_EQ(data_parallel.launch.grid[1], 16);
  sk["SPLIT_K"] = 2;
  const auto both = prune_before_compile(f, load_profile("h100"), f.make_problem({2000, 2000, 2000}, {}), sk);
  EXPECT_EQ(both.outcome, Outcome::pruned);
}

// Every runnable configuration of every built-in family compiles with NVRTC for sm_80 and sm_90, and a
// second plan takes every one of them from the cache. Families with thousands of configurations are
// compiled on an evenly spaced sample of 60 here (the whole space compiles in 'tiletune plan' on a GPU
// machine's cores); the others in full.
// The worker's own kernels (fill, compare, convert for every element type) and every family's reference
// kernel compile with NVRTC for both architectures, as the worker compiles them on the GPU machine.
TEST(Plan, SupportAndReferenceKernelsCompile) {
  std::ifstream in(TILETUNE_SOURCE_SUPPORT_KERNELS);
  // An installed copy of the tests has no source tree; the worker compiles these kernels there at start.
  if (!in) GTEST_SKIP() << "no source tree here: " << TILETUNE_SOURCE_SUPPORT_KERNELS;
  std::stringstream support;
  support << in.rdbuf();
  for (const char* arch : {"sm_80", "sm_90"}) {
    const CompileResult r =
        compile(CompileJob{support.str(), "tiletune_support.cu", "tt_compare_half_double", arch, {}});
    const auto* err = std::get_if<CompileError>(&r);
    EXPECT_EQ(err, nullptr) << (err ? err->log : "");
    if (!err) {
      EXPECT_NE(std::get<CompiledKernel>(r).cubin.find("tt_compare_int64_int64"), std::string::npos);
    }
    for (const auto& f : builtin()) {
      const ReferenceKernel& k = f.reference.kernel;
      if (f.reference.kind != Reference::Kind::kernel || !f.reference.from.empty()) continue;
      const CompileResult rr = compile(CompileJob{k.source, k.file, k.name, arch, {}});
      const auto* e = std::get_if<CompileError>(&rr);
      EXPECT_EQ(e, nullptr) << f.name << " " << k.file << ": " << (e ? e->log : "");
      if (!e) {
        EXPECT_GT(std::get<CompiledKernel>(rr).usage.registers, 0) << f.name << " " << k.file;
      }
    }
  }
}

TEST(Plan, EveryConfigurationCompilesForSm80AndSm90) {
  test::TempDir cache_dir;
  const CompileCache cache(cache_dir.path);
  const int jobs = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  for (const char* profile : {"a100", "h100"}) {
    const DeviceLimits device = load_profile(profile);
    for (const auto& f : builtin()) {
      const ProblemKey p = f.make_problem(parse_size_text(f.default_sizes.front()), {});
      PlanOptions o;
      o.jobs = jobs;
      o.compile = false;
      std::vector<Params> runnable;
      for (const auto& c : make_plan(f, device, p, cache, o).configs)
        if (c.outcome == Outcome::ok) runnable.push_back(c.params);
      constexpr std::size_t kSample = 60;
      if (runnable.size() > kSample) {
        std::vector<Params> sample;
        for (std::size_t i = 0; i < kSample; ++i) sample.push_back(runnable[i * runnable.size() / kSample]);
        runnable = sample;
      }
      o.compile = true;
      o.subset = runnable;
      const Plan plan = make_plan(f, device, p, cache, o);
      EXPECT_GT(plan.count(Outcome::ok), 0u) << f.name << " on " << profile;
      for (const auto& c : plan.configs) {
        EXPECT_NE(c.outcome, Outcome::compile_failed)
            << f.name << " " << params_to_text(c.params) << ": " << c.reason;
        if (c.outcome == Outcome::ok) {
          EXPECT_TRUE(c.compiled);
          if (c.usage.registers <= 0) {
            const auto log = compile(compile_job(f, device, c.params));
            ADD_FAILURE() << f.name << " " << params_to_text(c.params) << " on " << profile
                          << ": no register count in the NVRTC log:\n"
                          << (std::holds_alternative<CompiledKernel>(log) ? std::get<CompiledKernel>(log).log
                                                                          : std::get<CompileError>(log).log);
            return;
          }
          EXPECT_GT(c.occupancy.active_blocks, 0);
        }
      }
      EXPECT_EQ(plan.compile_stats.from_cache, 0) << "the cache was empty";
      const Plan again = make_plan(f, device, p, cache, o);
      EXPECT_EQ(again.compile_stats.compiled, 0) << f.name;
      EXPECT_EQ(again.compile_stats.from_cache, plan.compile_stats.jobs) << f.name;
      for (std::size_t i = 0; i < plan.configs.size(); ++i) {
        EXPECT_EQ(again.configs[i].usage.registers, plan.configs[i].usage.registers);
        EXPECT_EQ(again.configs[i].outcome, plan.configs[i].outcome);
      }
    }
  }
}

TEST(Plan, CompileErrorsCarryTheFullLog) {
  CompileJob job{
      "extern \"C\" __global__ void k(float* p) { p[0] = undeclared_name; }\n", "k.cu", "k", "sm_90", {}};
  const CompileResult r = compile(job);
  ASSERT_TRUE(std::holds_alternative<CompileError>(r));
  EXPECT_NE(std::get<CompileError>(r).log.find("undeclared_name"), std::string::npos);
  PlannedConfig c;
  apply_compile_result(c, r, load_profile("h100"));
  EXPECT_EQ(c.outcome, Outcome::compile_failed);
  EXPECT_NE(c.reason.find("k.cu"), std::string::npos);
}

// NVRTC 12.9+ has its own on-disk cache, and what it serves from there comes without ptxas's report: the same
// source compiled again must still report its registers (tiletune passes --no-cache).
TEST(Plan, RecompilingTheSameSourceStillReportsResources) {
  const CompileJob job{
      "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }\n", "k.cu", "k", "sm_90", {}};
  for (int i = 0; i < 3; ++i) {
    const CompileResult r = compile(job);
    ASSERT_TRUE(std::holds_alternative<CompiledKernel>(r));
    EXPECT_GT(std::get<CompiledKernel>(r).usage.registers, 0) << "compile " << i << ":\n"
                                                              << std::get<CompiledKernel>(r).log;
  }
}

// The first n configurations of conv1d_tiled as compile jobs for the H100.
static std::vector<CompileJob> first_conv1d_jobs(std::size_t n) {
  const auto& f = find_family(builtin(), "conv1d_tiled");
  const DeviceLimits device = load_profile("h100");
  std::vector<CompileJob> jobs;
  for (const auto& params : enumerate_space(f)) jobs.push_back(compile_job(f, device, params));
  jobs.resize(n);
  return jobs;
}

// Without a fixed order nothing compiles ahead until asked: prefetch starts compiler processes for exactly
// the jobs named, and get() waits for them.
TEST(Plan, BackgroundCompilerCompilesWhatIsPrefetched) {
  const std::vector<CompileJob> jobs = first_conv1d_jobs(4);
  test::TempDir dir;
  const CompileCache cache(dir.path);
  auto cached = [&](std::size_t i) {
    return std::filesystem::exists(dir.path / (cache.key(jobs[i]) + ".json"));
  };
  BackgroundCompiler compiler(jobs, cache, 2, /*eager=*/false);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (std::size_t i = 0; i < jobs.size(); ++i) EXPECT_FALSE(cached(i)) << i;
  compiler.prefetch({2, 0, 1});
  for (std::size_t i : {0, 1, 2}) {
    const CompileResult r = compiler.get(i, false);
    ASSERT_TRUE(std::holds_alternative<CompiledKernel>(r)) << i;
    EXPECT_GT(std::get<CompiledKernel>(r).usage.registers, 0);
    EXPECT_TRUE(cached(i)) << i;
  }
  EXPECT_FALSE(cached(3));
}

TEST(Plan, ThreadsAndProcessesGiveTheSameResults) {
  const std::vector<CompileJob> jobs = first_conv1d_jobs(6);
  test::TempDir a, b;
  const auto by_process = compile_all(jobs, CompileCache(a.path), 2, ParallelMode::processes);
  const auto by_thread = compile_all(jobs, CompileCache(b.path), 2, ParallelMode::threads);
  ASSERT_EQ(by_process.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_TRUE(std::holds_alternative<CompiledKernel>(by_process[i]));
    ASSERT_TRUE(std::holds_alternative<CompiledKernel>(by_thread[i]));
    EXPECT_EQ(std::get<CompiledKernel>(by_process[i]).cubin, std::get<CompiledKernel>(by_thread[i]).cubin);
  }
}

// A device profile file is checked field by field: a base that is not a built-in profile (a file naming
// itself looped until the stack ran out), numbers that are not integers or out of range (occupancy divides by
// them).
TEST(Plan, ProfileFilesAreChecked) {
  test::TempDir dir;
  auto error_of = [&](const std::string& text) {
    const auto path = dir.path / "mine.json";
    std::ofstream(path) << text;
    try {
      load_profile(path.string());
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(error_of(R"({"base": "h100", "name": "My H100", "sm_count": 114})"), "");
  const std::string self = (dir.path / "mine.json").string();
  EXPECT_NE(error_of("{\"base\": \"" + self + "\"}").find("base must name a built-in profile"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"base": "h100", "max_blocks_per_sm": 0})").find("max_blocks_per_sm must be positive"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"base": "h100", "regs_per_sm": -5})").find("regs_per_sm must be positive"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"base": "h100", "sm_count": 1e30})").find("field 'sm_count' has the wrong type"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"base": "h100", "sm_count": 99999999999})").find("field 'sm_count'"),
            std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("must hold a JSON object"), std::string::npos);
  EXPECT_NE(error_of(std::string(10000, '[') + std::string(10000, ']')).find("nested deeper"),
            std::string::npos);
}

// A space too large to hold is refused, with its size, before anything is allocated.
TEST(Plan, HugeSpacesAreRefusedBeforeTheyAreBuilt) {
  KernelFamily f = find_family(builtin(), "gemm_tiled");
  EXPECT_EQ(space_size(f).value_or(0), 729u);
  for (int i = 0; i < 5; ++i) {
    Parameter p{"EXTRA" + std::to_string(i), {}, 0};
    for (int v = 0; v < 100; ++v) p.values.push_back(v);
    f.parameters.push_back(p);
  }
  EXPECT_EQ(space_size(f).value_or(0), 729ull * 10'000'000'000ull);
  try {
    enumerate_space(f);
    FAIL() << "enumerated";
  } catch (const FamilyError& e) {
    EXPECT_NE(std::string(e.what()).find("the space has 7290000000000 configurations"), std::string::npos)
        << e.what();
  }
  for (int i = 0; i < 10; ++i) f.parameters.push_back(f.parameters.back());
  EXPECT_FALSE(space_size(f).has_value());
  EXPECT_THROW(enumerate_space(f), FamilyError);
}

// A template may hold any bytes (a Latin-1 comment, stray binary): it travels to the compiler processes
// intact, and a compile log with such bytes is cached and read back, never a crash of the JSON printer.
TEST(Plan, TemplatesWithAnyBytesCompileInChildProcesses) {
  test::TempDir dir;
  const std::string good =
      "// caf\xe9 \xff\xfe\x01\nextern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }\n";
  const std::string bad = "extern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }\n#error caf\xe9 \xff\n";
  const std::vector<CompileJob> jobs = {{good, "good.cu", "k", "sm_90", {}},
                                        {bad, "bad.cu", "k", "sm_90", {}}};
  for (int pass = 0; pass < 2; ++pass) {  // the second pass reads both from the cache
    const auto results = compile_all(jobs, CompileCache(dir.path), 2, ParallelMode::processes);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_TRUE(std::holds_alternative<CompiledKernel>(results[0])) << pass;
    ASSERT_TRUE(std::holds_alternative<CompileError>(results[1])) << pass;
    EXPECT_NE(std::get<CompileError>(results[1]).log.find("#error"), std::string::npos);
  }
}

// A compile that fails after a warning says why in its first line; the whole log is kept after it.
TEST(Plan, ACompileFailureLeadsWithItsErrorLine) {
  const std::string log =
      "nvrtc: warning: \"--std (-std)=c++17\" followed by \"--std (-std)=c++11\"\n"
      "ptxas info    : Used 168 registers\n"
      " ptxas error   : Entry function 'k' uses too much shared data (0xe100 bytes, 0xc000 max)\n";
  PlannedConfig c;
  apply_compile_result(c, CompileError{log}, load_profile("h100"));
  EXPECT_EQ(c.outcome, Outcome::compile_failed);
  EXPECT_EQ(
      c.reason,
      "ptxas error   : Entry function 'k' uses too much shared data (0xe100 bytes, 0xc000 max)\n" + log);
  PlannedConfig first;
  apply_compile_result(first, CompileError{"k.cu(3): error: expected a ;\n1 error detected\n"},
                       load_profile("h100"));
  EXPECT_EQ(first.reason, "k.cu(3): error: expected a ;\n1 error detected\n");
  PlannedConfig none;
  apply_compile_result(none, CompileError{"nvrtcCompileProgram: NVRTC_ERROR_INVALID_OPTION"},
                       load_profile("h100"));
  EXPECT_EQ(none.reason, "nvrtcCompileProgram: NVRTC_ERROR_INVALID_OPTION");
}
