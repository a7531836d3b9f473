#include "tiletune/plan.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../test_paths.hpp"
#include "requests.hpp"
#include "tiletune/device.hpp"

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

namespace {

// The blocks of gemm_regtile's default configuration at 2000^3 split two ways along K on an H100.
long long on_split_k_blocks(const KernelFamily& f) {
  Params split = f.default_params();
  split["SPLIT_K"] = 2;
  return prune_before_compile(f, load_profile("h100"), f.make_problem({2000, 2000, 2000}, {}), split)
      .launch.blocks();
}

}  // namespace

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
  EXPECT_EQ(data_parallel.launch.blocks(), 8 * 16);
  EXPECT_EQ(on_split_k_blocks(f), 8 * 16 * 2);  // the third dimension counts too
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

// Every family's runnable configurations (an even sample of at most 60) compile for the profile's
// architecture, report their registers and occupancy, and come back from the cache the second time. One test
// per profile, so that each stays within a test's time on two cores.
static void expect_every_configuration_compiles(const char* profile) {
  test::TempDir cache_dir;
  const CompileCache cache(cache_dir.path);
  const int jobs = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  const DeviceLimits device = load_profile(profile);
  for (const auto& f : builtin()) {
    const ProblemKey p = f.make_problem(parse_size_text(f.default_sizes.front()), {});
    PlanOptions o;
    o.jobs = jobs;
    o.compile = false;
    std::vector<Params> runnable;
    for (const auto& c : make_plan(f, device, p, cache, o).configs)
      if (c.outcome == Outcome::ok) runnable.push_back(c.params);
    if (runnable.empty() && std::string(profile) == "a100") {
      // Only the Hopper families run nothing there, and they say so.
      const auto d = prune_before_compile(f, device, p, f.default_params());
      EXPECT_NE(d.reason.find("\"a\" suffix needs sm_90"), std::string::npos) << f.name << ": " << d.reason;
      continue;
    }
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
    // A family on another's template (a naive baseline) may share that family's configurations.
    if (f.source_from.empty()) {
      EXPECT_EQ(plan.compile_stats.from_cache, 0) << f.name << ": the cache was empty";
    }
    const Plan again = make_plan(f, device, p, cache, o);
    EXPECT_EQ(again.compile_stats.compiled, 0) << f.name;
    EXPECT_EQ(again.compile_stats.from_cache, plan.compile_stats.jobs) << f.name;
    for (std::size_t i = 0; i < plan.configs.size(); ++i) {
      EXPECT_EQ(again.configs[i].usage.registers, plan.configs[i].usage.registers);
      EXPECT_EQ(again.configs[i].outcome, plan.configs[i].outcome);
    }
  }
}

TEST(Plan, EveryConfigurationCompilesForSm80) { expect_every_configuration_compiles("a100"); }

TEST(Plan, EveryConfigurationCompilesForSm90) { expect_every_configuration_compiles("h100"); }

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

// With one compiler process and two jobs queued, the second starts only once the first is reaped: poll()
// does that without anyone asking for a CUBIN (as a sweep's GPUs measure), and ready() says what is done.
TEST(Plan, PollKeepsTheCompilersBusyWithoutAnAsk) {
  const std::vector<CompileJob> jobs = first_conv1d_jobs(2);
  test::TempDir dir;
  const CompileCache cache(dir.path);
  BackgroundCompiler compiler(jobs, cache, 1, /*eager=*/false);
  EXPECT_FALSE(compiler.ready(0));
  compiler.prefetch({0, 1});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!compiler.ready(1) && std::chrono::steady_clock::now() < deadline) {
    compiler.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(compiler.ready(0));
  EXPECT_TRUE(compiler.ready(1)) << "the queued job never started";
  EXPECT_FALSE(compiler.ready(7)) << "no such job";
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

// Stored properties (an import's, another database's) read back exactly; a number that is no integer of its
// field's range is an error, never a cast.
TEST(Plan, StoredDevicePropertiesAreReadAsTheyAreOrRefused) {
  const DeviceLimits h100 = load_profile("h100");
  const DeviceLimits back = device_from_json(h100.to_json());
  EXPECT_EQ(back.to_json(), h100.to_json());
  for (const auto& [field, value] : {std::pair{"sm_count", "1e30"},
                                     {"sm_count", "2.5"},
                                     {"l2_bytes", "18446744073709551615"},
                                     {"clock_mhz", "4294967296"}}) {
    nlohmann::json j = nlohmann::json::parse(h100.to_json());
    j[field] = nlohmann::json::parse(value);
    EXPECT_THROW(device_from_json(j.dump()), nlohmann::json::type_error) << field << " = " << value;
  }
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

// On the H100, the log of a configuration over the shared-memory limit starts with a NUL byte: the ptxas
// error must still be the reason, whole, with no NUL byte left to cut it short where it is read as C text.
TEST(Plan, ACompileLogStartingWithANulByteKeepsItsReason) {
  const std::string error =
      "ptxas error   : Entry function 'k' uses too much shared data (0x30000 bytes, 0xe400 max)";
  const std::string log =
      std::string("\0", 1) + error + std::string("\0", 1) + "ptxas info    : Used 40 registers\n";
  PlannedConfig c;
  apply_compile_result(c, CompileError{log}, load_profile("h100"));
  EXPECT_EQ(c.outcome, Outcome::compile_failed);
  EXPECT_EQ(c.reason.find('\0'), std::string::npos);
  EXPECT_EQ(c.reason.substr(0, error.size()), error);
  EXPECT_NE(c.reason.find("Used 40 registers"), std::string::npos) << c.reason;
  EXPECT_EQ(to_record(c).reason, c.reason);
  EXPECT_EQ(readable_log(std::string("\0\0", 2)), "");
  EXPECT_EQ(readable_log("a\nb\n"), "a\nb\n");
}

namespace {

// A bf16 GEMM described with tensor maps (A as K x M, B as K x N, C read as TF32) and clusters of CL blocks
// along x, for sm_90a; its template is a stub, as pruning happens before compiling.
const char* kTmaGemmJson = R"J({
  "name": "gemm_tma", "source": "gemm_tma.cu", "kernel": "gemm_tma", "arch_suffix": "a",
  "problem": {"dims": ["M", "N", "K"], "default_sizes": ["1024x1024x1024"]},
  "parameters": {"BM": {"values": [64, 128, 512], "default": 128},
                 "BK": {"values": [4, 64, 128], "default": 64},
                 "CL": {"values": [1, 2, 16], "default": 2},
                 "OVER": {"values": [0, 1], "default": 0}},
  "launch": {"block": ["128"], "grid": ["ceil_div(N, 8)", "ceil_div(M, BM)"], "cluster": ["CL"]},
  "arguments": [
    {"name": "A", "buffer": "bfloat16", "count": "M * K", "role": "input"},
    {"name": "B", "buffer": "bfloat16", "count": "N * K", "role": "input"},
    {"name": "C", "buffer": "float", "count": "M * N", "role": "output"},
    {"name": "tma_A", "tensor_map": "A", "dims": ["K", "M + OVER"], "strides": ["K * 2"],
     "box": ["BK", "BM / CL"], "swizzle": "128"},
    {"name": "tma_B", "tensor_map": "B", "dims": ["K", "N"], "box": ["BK", "64"], "l2_promotion": 256},
    {"name": "tma_C", "tensor_map": "C", "dims": ["N", "M"], "box": ["32", "BM / CL"], "element": "tfloat32",
     "oob_fill": "nan", "l2_promotion": "0"},
    {"name": "M", "scalar": "int", "value": "M"},
    {"name": "N", "scalar": "int", "value": "N"},
    {"name": "K", "scalar": "int", "value": "K"}
  ],
  "metric": {"unit": "GFLOP/s", "work": "2 * M * N * K"},
  "reference": {"kernel": "gemm_tma_reference.cu", "block": ["1"], "grid": ["1"]}
})J";

KernelFamily tma_gemm(const test::TempDir& dir) {
  const auto folder = dir.path / "gemm_tma";
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "family.json") << kTmaGemmJson;
  std::ofstream(folder / "gemm_tma.cu") << "extern \"C\" __global__ void gemm_tma() {}\n";
  std::ofstream(folder / "gemm_tma_reference.cu") << "extern \"C\" __global__ void gemm_tma_reference() {}\n";
  return load_families({folder}).at(0);
}

Params tma_params(std::int64_t bm, std::int64_t bk, std::int64_t cl, std::int64_t over = 0) {
  return {{"BM", bm}, {"BK", bk}, {"CL", cl}, {"OVER", over}};
}

}  // namespace

// Tensor maps, clusters and the architecture suffix are checked before compiling, each with its reason.
TEST(Plan, TensorMapsClustersAndArchSuffixArePrunedWithTheirReason) {
  test::TempDir dir;
  const KernelFamily f = tma_gemm(dir);
  const DeviceLimits h100 = load_profile("h100"), a100 = load_profile("a100");
  const ProblemKey square = f.make_problem({1024, 1024, 1024}, {});
  const auto ok = prune_before_compile(f, h100, square, f.default_params());
  ASSERT_EQ(ok.outcome, Outcome::ok) << ok.reason;
  EXPECT_EQ(ok.launch.cluster, (std::array<long long, 3>{2, 1, 1}));
  EXPECT_EQ(ok.launch.cluster_size(), 2);
  ASSERT_EQ(ok.launch.tensor_maps.size(), 3u);
  EXPECT_EQ(ok.launch.tensor_maps[0].name, "tma_A");

  const struct {
    const DeviceLimits& device;
    std::vector<std::int64_t> size;
    Params params;
    std::string reason;
  } cases[] = {
      // A bf16 matrix whose rows are not 16-byte aligned: K = 1001 gives rows of 2002 bytes.
      {h100,
       {1024, 1024, 1001},
       tma_params(128, 64, 2),
       "tensor map tma_A: stride 2002 bytes (dims[1]) is not a multiple of 16: TMA needs 16-byte aligned "
       "rows"},
      {h100,
       {1024, 1024, 1024},
       tma_params(512, 64, 1),
       "tensor map tma_A: box[1] = 512 is outside [1, 256]"},
      {h100,
       {1024, 1024, 1024},
       tma_params(128, 128, 2),
       "tensor map tma_A: box[0] is 256 bytes (128 x 2), more than the 128-byte swizzle span"},
      {h100,
       {1024, 1024, 1024},
       tma_params(128, 4, 2),
       "tensor map tma_A: box[0] is 8 bytes (4 x 2), not a multiple of 16"},
      // One row more than A holds: the last row starts at 1024 * 2048 bytes and ends 2048 bytes later.
      {h100,
       {1024, 1024, 1024},
       tma_params(128, 64, 2, 1),
       "tensor map tma_A: reaches 2099200 bytes into A, which holds 2097152: TMA would touch memory outside "
       "the buffer"},
      {h100,
       {1024, 1024, 8589934592LL},
       tma_params(128, 64, 2),
       "tensor map tma_A: dims[0] = 8589934592 is outside [1, 2^32]"},
      // N = 1064: 133 blocks along x, which clusters of 2 do not divide.
      {h100,
       {1024, 1064, 1024},
       tma_params(128, 64, 2),
       "cluster: grid x 133 is not a multiple of the cluster's 2"},
      {h100, {1024, 1024, 1024}, tma_params(128, 64, 16), "cluster: x 16 blocks > 8, the portable maximum"},
      {a100,
       {1024, 1024, 1024},
       tma_params(128, 64, 2),
       "arch: sm_80a does not exist: the \"a\" suffix needs sm_90 or newer"},
  };
  for (const auto& c : cases) {
    const auto got = prune_before_compile(f, c.device, f.make_problem(c.size, {}), c.params);
    EXPECT_EQ(got.outcome, Outcome::pruned) << c.reason;
    EXPECT_EQ(got.reason, c.reason);
  }
  // Without the suffix, an A100 refuses the cluster, then the tensor maps.
  KernelFamily plain = f;
  plain.arch_suffix = "";
  EXPECT_EQ(prune_before_compile(plain, a100, square, tma_params(128, 64, 2)).reason,
            "cluster: clusters of 2 blocks need sm_90 or newer; the device is sm_80");
  EXPECT_EQ(prune_before_compile(plain, a100, square, tma_params(128, 64, 1)).reason,
            "tensor map tma_A: TMA needs sm_90 or newer; the device is sm_80");
  KernelFamily family_specific = f;
  family_specific.arch_suffix = "f";
  EXPECT_EQ(prune_before_compile(family_specific, h100, square, f.default_params()).reason,
            "arch: sm_90f does not exist: the \"f\" suffix needs sm_100 or newer");
}

// The measure request carries each tensor map's evaluated values (dims, strides, box, swizzle, L2 promotion,
// data type, NaN fill) and the cluster, through the JSON the worker reads.
TEST(Plan, MeasureRequestsCarryTensorMapsAndTheCluster) {
  test::TempDir dir;
  const KernelFamily f = tma_gemm(dir);
  const ProblemKey p = f.make_problem({1000, 1024, 2048}, {});
  const Params params = tma_params(128, 64, 2);
  const auto c = prune_before_compile(f, load_profile("h100"), p, params);
  ASSERT_EQ(c.outcome, Outcome::ok) << c.reason;
  const wire::MeasureRequest sent = measure_request(f, p, params, c.launch, "k.cubin", MeasureSettings{});
  const nlohmann::json j = wire::message("measure", sent);
  EXPECT_EQ(j["kernel"]["args"][3]["tensor_map"]["type"], "bfloat16");
  EXPECT_EQ(j["kernel"]["cluster"], nlohmann::json::array({2, 1, 1}));
  const auto req = j.get<wire::MeasureRequest>();
  EXPECT_EQ(req.kernel.cluster, (std::array<std::int64_t, 3>{2, 1, 1}));
  EXPECT_EQ(req.kernel.grid, (std::array<std::int64_t, 3>{128, 8, 1}));
  ASSERT_EQ(req.kernel.args.size(), 9u);
  EXPECT_EQ(req.kernel.args[0].buffer, "A");
  EXPECT_FALSE(req.kernel.args[0].is_tensor_map());
  EXPECT_FALSE(req.kernel.args[6].is_tensor_map());
  EXPECT_EQ(req.kernel.args[6].integer, 1000);

  const wire::TensorMapSpec& a = req.kernel.args[3].tensor_map;
  ASSERT_TRUE(req.kernel.args[3].is_tensor_map());
  EXPECT_TRUE(req.kernel.args[3].buffer.empty());  // not a buffer: the worker encodes it over one
  EXPECT_EQ(a.name, "tma_A");
  EXPECT_EQ(a.buffer, "A");
  EXPECT_EQ(a.type, wire::TensorMapDataType::bfloat16);
  EXPECT_EQ(a.rank, 2u);
  EXPECT_EQ(a.dims, (std::vector<std::uint64_t>{2048, 1000}));
  EXPECT_EQ(a.strides, (std::vector<std::uint64_t>{4096}));
  EXPECT_EQ(a.box, (std::vector<std::uint32_t>{64, 64}));
  EXPECT_EQ(a.swizzle, 128u);
  EXPECT_EQ(a.l2_promotion, 128u);
  EXPECT_FALSE(a.oob_nan);

  const wire::TensorMapSpec& b = req.kernel.args[4].tensor_map;
  EXPECT_EQ(b.dims, (std::vector<std::uint64_t>{2048, 1024}));
  EXPECT_EQ(b.strides, (std::vector<std::uint64_t>{4096}));  // packed: K * 2 bytes
  EXPECT_EQ(b.box, (std::vector<std::uint32_t>{64, 64}));
  EXPECT_EQ(b.swizzle, 0u);
  EXPECT_EQ(b.l2_promotion, 256u);

  const wire::TensorMapSpec& cm = req.kernel.args[5].tensor_map;
  EXPECT_EQ(cm.type, wire::TensorMapDataType::tfloat32);
  EXPECT_EQ(cm.dims, (std::vector<std::uint64_t>{1024, 1000}));
  EXPECT_EQ(cm.strides, (std::vector<std::uint64_t>{4096}));
  EXPECT_EQ(cm.box, (std::vector<std::uint32_t>{32, 64}));
  EXPECT_EQ(cm.l2_promotion, 0u);
  EXPECT_TRUE(cm.oob_nan);
}

// The architecture suffix is part of the compile job and so of its cache key; NVRTC compiles wgmma only for
// sm_90a, through the family's own path.
TEST(Plan, ArchSuffixReachesTheCompileAndItsCacheKey) {
  test::TempDir dir;
  const KernelFamily f = tma_gemm(dir);
  const DeviceLimits h100 = load_profile("h100");
  const CompileJob job = compile_job(f, h100, f.default_params());
  EXPECT_EQ(job.arch, "sm_90a");
  KernelFamily plain = f;
  plain.arch_suffix = "";
  EXPECT_EQ(compile_job(plain, h100, f.default_params()).arch, "sm_90");
  const CompileCache cache(dir.path / "cache");
  EXPECT_NE(cache.key(job), cache.key(compile_job(plain, h100, f.default_params())));

  const auto folder = dir.path / "wgmma_fence";
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "family.json") << R"J({
    "name": "wgmma_fence", "source": "wgmma_fence.cu", "kernel": "wgmma_fence", "arch_suffix": "a",
    "problem": {"dims": ["n"]},
    "parameters": {"BLOCK": {"values": [128]}},
    "launch": {"block": ["BLOCK"], "grid": ["ceil_div(n, BLOCK)"]},
    "arguments": [{"name": "x", "buffer": "float", "count": "n", "role": "output"},
                  {"name": "n", "scalar": "int", "value": "n"}],
    "metric": {"unit": "GB/s", "work": "4 * n"},
    "reference": {"kernel": "wgmma_fence.cu", "block": ["1"], "grid": ["1"]}
  })J";
  std::ofstream(folder / "wgmma_fence.cu")
      << "extern \"C\" __global__ void wgmma_fence(float* x, int n) {\n"
         "  asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) x[i] = 1.0f;\n}\n";
  const KernelFamily wgmma = load_families({folder}).at(0);
  const ProblemKey p = wgmma.make_problem({1000}, {});
  const Plan with_suffix = make_plan(wgmma, h100, p, cache, PlanOptions{});
  ASSERT_EQ(with_suffix.configs.size(), 1u);
  EXPECT_EQ(with_suffix.configs[0].outcome, Outcome::ok) << with_suffix.configs[0].reason;
  EXPECT_GT(with_suffix.configs[0].usage.registers, 0);
  KernelFamily without = wgmma;
  without.arch_suffix = "";
  const Plan no_suffix = make_plan(without, h100, p, cache, PlanOptions{});
  EXPECT_EQ(no_suffix.configs[0].outcome, Outcome::compile_failed);
  EXPECT_NE(no_suffix.configs[0].reason.find("wgmma.fence"), std::string::npos)
      << no_suffix.configs[0].reason;
}

// The GPU tests' tensor-map and cluster families (a TMA load completing on an mbarrier, cluster registers)
// compile with NVRTC for the H100 through the plan.
TEST(Plan, TensorMapFixturesCompileForSm90a) {
  test::TempDir dir;
  const CompileCache cache(dir.path);
  const auto fams = load_families({test::templates_dir(), test::fixtures_dir() / "families"});
  const DeviceLimits h100 = load_profile("h100");
  for (const char* name : {"tma_tile", "tma_tile_rows"}) {
    const KernelFamily& f = find_family(fams, name);
    const Plan plan = make_plan(f, h100, f.make_problem({100, 36}, {}), cache, PlanOptions{});
    EXPECT_EQ(plan.count(Outcome::ok), plan.configs.size()) << name;
    for (const auto& c : plan.configs)
      EXPECT_EQ(c.outcome, Outcome::ok) << name << " " << params_to_text(c.params) << ": " << c.reason;
  }
}

// A dimension the kernel's `int` scalar cannot hold would wrap on the GPU: every configuration is pruned
// with the scalar, its value and its type's range, though its buffers fit in the device's memory.
TEST(Plan, ScalarsOutsideTheirDeclaredTypeArePruned) {
  const auto& f = find_family(builtin(), "gemm_tiled");
  const DeviceLimits h100 = load_profile("h100");
  const Params params{{"BLOCK_Y", 16}, {"TILE_K", 16}, {"TILE_WIDTH", 16}};
  const auto fits = prune_before_compile(f, h100, f.make_problem({1, 2147483647, 1}, {}), params);
  EXPECT_EQ(fits.outcome, Outcome::ok) << fits.reason;
  const auto c = prune_before_compile(f, h100, f.make_problem({1, 3000000000LL, 1}, {}), params);
  EXPECT_EQ(c.outcome, Outcome::pruned);
  EXPECT_EQ(c.reason, "scalar N = 3000000000 does not fit int [-2147483648, 2147483647]");
  CompileCache no_cache{""};
  PlanOptions o;
  o.compile = false;
  const Plan plan = make_plan(f, h100, f.make_problem({1, 1, 3000000000LL}, {}), no_cache, o);
  EXPECT_EQ(plan.count(Outcome::ok), 0u);
}

// Buffers larger than the device's memory cannot be allocated: pruned against the profile's memory, and
// not checked where a profile does not say how much memory the device has.
TEST(Plan, BuffersLargerThanTheDeviceMemoryArePruned) {
  const auto& f = find_family(builtin(), "gemm_tiled");
  DeviceLimits h100 = load_profile("h100");
  const Params params{{"BLOCK_Y", 16}, {"TILE_K", 16}, {"TILE_WIDTH", 16}};
  const ProblemKey huge = f.make_problem({1000000, 1000000, 1000000}, {});
  const auto c = prune_before_compile(f, h100, huge, params);
  EXPECT_EQ(c.outcome, Outcome::pruned);
  // The worker also holds C's truth in double, and an L2 flush buffer of twice the L2 (64 MiB at least).
  const long long flush = std::max<long long>(2 * h100.l2_bytes, 64LL << 20);
  EXPECT_EQ(c.reason, "memory: buffers need 12000000000000 bytes and the measuring worker's copies " +
                          std::to_string(8000000000000LL + flush) + " more, over the device's " +
                          std::to_string(h100.global_memory_bytes));
  // 3 x 4 bytes x 49152^2 = 27 GiB, and 18 GiB of copies, fit in 80.
  const ProblemKey fits = f.make_problem({49152, 49152, 49152}, {});
  EXPECT_EQ(prune_before_compile(f, h100, fits, params).outcome, Outcome::ok);
  // 3 x 4 bytes x 2^32 = 48 GiB would fit alone; with C's truth (32 GiB) and the flush buffer it does not.
  EXPECT_EQ(prune_before_compile(f, h100, f.make_problem({65536, 65536, 65536}, {}), params).outcome,
            Outcome::pruned);
  h100.global_memory_bytes = 40LL << 30;
  EXPECT_EQ(prune_before_compile(f, h100, fits, params).outcome, Outcome::pruned);
  h100.global_memory_bytes = 0;
  EXPECT_EQ(prune_before_compile(f, h100, huge, params).outcome, Outcome::ok);
}
