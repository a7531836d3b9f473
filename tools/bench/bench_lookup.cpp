// How long an application waits for its configuration: tiletune::Client lookups on a realistic database
// (5 families x 3 devices x 20 problem sizes x 50 configurations = 15,000 results), in a writable directory
// and in a read-only one (opened immutable).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include "tiletune/client.hpp"
#include "tiletune/store.hpp"

namespace {

using tiletune::Client;
using tiletune::Query;

constexpr int family_count = 5, size_count = 20, configuration_count = 50;

struct Device {
  const char* name;
  const char* uuid;
  const char* arch;
};
constexpr Device devices[] = {{"NVIDIA H100 80GB HBM3", "GPU-bench-h100", "sm_90"},
                              {"NVIDIA A100-SXM4-80GB", "GPU-bench-a100", "sm_80"},
                              {"NVIDIA L40S", "GPU-bench-l40s", "sm_89"}};

std::string family_name(int f) { return f == 0 ? "gemm_tiled" : "family_" + std::to_string(f); }

// Sizes 256, 512, ... 5120 (cubes): a query between two of them exercises nearest_size.
tiletune::ProblemKey cube(std::int64_t n) { return {{n, n, n}, {}}; }
std::int64_t tuned_size(int i) { return 256 * (i + 1); }

// The database lives in a temporary directory for the whole run, with a copy in a read-only subdirectory.
class BenchDatabase {
 public:
  BenchDatabase() {
    dir_ = std::filesystem::temp_directory_path() / ("tiletune-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = dir_ / "bench.db";
    fill();
    // The store is closed: its -wal and -shm files are gone, and the copy is a WAL database on its own.
    const auto read_only_dir = dir_ / "read-only";
    std::filesystem::create_directory(read_only_dir);
    read_only_path_ = read_only_dir / "bench.db";
    std::filesystem::copy_file(path_, read_only_path_);
    std::filesystem::permissions(read_only_dir,
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    const std::string probe = (read_only_dir / "probe").string();
    const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    read_only_is_writable_ = fd >= 0;
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
    }
  }
  ~BenchDatabase() {
    std::error_code ec;
    std::filesystem::permissions(dir_ / "read-only", std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& read_only_path() const { return read_only_path_; }
  // Root writes through mode 0500: then the benchmarks force the immutable open that the directory would.
  bool read_only_is_writable() const { return read_only_is_writable_; }

 private:
  void fill() {
    tiletune::Store store = tiletune::Store::open(path_);
    std::mt19937 random(42);
    std::uniform_real_distribution<double> time_ms(0.05, 50.0);
    for (int f = 0; f < family_count; ++f) {
      for (const Device& d : devices) {
        for (int i = 0; i < size_count; ++i) {
          tiletune::SweepSpec spec;
          spec.family = family_name(f);
          spec.template_hash = "bench-" + spec.family;
          spec.family_json = R"({"parameters": {"TILE": {"values": [8, 16, 32, 64], "default": 16},
                                                "BLOCK_Y": {"values": [1, 2, 4, 8, 16], "default": 4}}})";
          spec.device = {d.name, d.uuid, d.arch, 132, false, "{}"};
          spec.problem = cube(tuned_size(i));
          const std::int64_t sweep = store.begin_sweep(spec);
          std::vector<tiletune::ResultRecord> records;
          for (int c = 0; c < configuration_count; ++c) {
            tiletune::ResultRecord r;
            r.params = {{"TILE", 8 << (c % 4)}, {"BLOCK_Y", c / 4}, {"UNROLL", c % 3}};
            // One in five configurations failed in some way; the others are ok with a measured time.
            r.outcome = c % 5 == 4 ? tiletune::Outcome::pruned : tiletune::Outcome::ok;
            if (r.outcome == tiletune::Outcome::ok) {
              r.median_ms = time_ms(random);
              r.metric = 1000.0 / *r.median_ms;
              r.metric_unit = "GFLOP/s";
            } else {
              r.reason = "shared memory over the limit";
            }
            records.push_back(std::move(r));
          }
          store.add_results(sweep, records);
          store.finish_sweep(sweep, "done");
        }
      }
    }
  }

  std::filesystem::path dir_, path_, read_only_path_;
  bool read_only_is_writable_ = false;
};

const BenchDatabase& database() {
  static const BenchDatabase db;
  return db;
}

Client open_client(const std::filesystem::path& path = database().path()) {
  std::string error;
  auto client = Client::open(path, &error);
  if (!client) {
    std::fprintf(stderr, "bench_lookup: %s\n", error.c_str());
    std::exit(1);
  }
  return std::move(*client);
}

void expect(benchmark::State& state, const tiletune::Lookup& lookup, tiletune::Match match) {
  if (lookup.match != match) state.SkipWithError(("unexpected match: " + lookup.message).c_str());
}

const Query exact_query{"gemm_tiled", devices[0].name, devices[0].arch, cube(tuned_size(7))};
const Query nearest_query{"gemm_tiled", devices[0].name, devices[0].arch, cube(1000)};
const Query same_arch_query{"gemm_tiled", "NVIDIA H100 PCIe", "sm_90", cube(1000)};
const Query not_found_query{"gemm_tiled", "RTX 9000", "sm_120", cube(1000)};

// Repeated questions: the client answers from its cache after checking that no one has committed since.
void run_repeated(benchmark::State& state, const Query& query, tiletune::Match match) {
  const Client client = open_client();
  for (auto _ : state) {
    auto lookup = client.best(query);
    benchmark::DoNotOptimize(lookup);
  }
  expect(state, client.best(query), match);
}

void BM_ExactRepeated(benchmark::State& state) { run_repeated(state, exact_query, tiletune::Match::exact); }
BENCHMARK(BM_ExactRepeated);

void BM_NearestSizeRepeated(benchmark::State& state) {
  run_repeated(state, nearest_query, tiletune::Match::nearest_size);
}
BENCHMARK(BM_NearestSizeRepeated);

void BM_NotFoundRepeated(benchmark::State& state) {
  run_repeated(state, not_found_query, tiletune::Match::not_found);
}
BENCHMARK(BM_NotFoundRepeated);

// Every question new to the client, so each one runs its SQL. The exact query varies only its arch, which an
// exact match ignores; the others vary the size.
void run_uncached(benchmark::State& state, Query query, tiletune::Match match, bool vary_size,
                  const std::filesystem::path& path = database().path()) {
  const Client client = open_client(path);
  const std::string arch = query.arch;
  std::int64_t i = 0;
  tiletune::Lookup lookup;
  for (auto _ : state) {
    ++i;
    if (vary_size) {
      query.problem = cube(1000 + i % 20000);
    } else {
      query.arch = arch + "_" + std::to_string(i);
    }
    lookup = client.best(query);
    benchmark::DoNotOptimize(lookup);
  }
  expect(state, lookup, match);
}

void BM_ExactUncached(benchmark::State& state) {
  run_uncached(state, exact_query, tiletune::Match::exact, false);
}
BENCHMARK(BM_ExactUncached);

void BM_NearestSizeUncached(benchmark::State& state) {
  run_uncached(state, nearest_query, tiletune::Match::nearest_size, true);
}
BENCHMARK(BM_NearestSizeUncached);

void BM_SameArchUncached(benchmark::State& state) {
  run_uncached(state, same_arch_query, tiletune::Match::same_arch, true);
}
BENCHMARK(BM_SameArchUncached);

void BM_NotFoundUncached(benchmark::State& state) {
  run_uncached(state, not_found_query, tiletune::Match::not_found, true);
}
BENCHMARK(BM_NotFoundUncached);

// The first query on a freshly opened client: statements prepared, nothing cached, pages not yet read.
void BM_FirstQueryAfterOpen(benchmark::State& state) {
  for (auto _ : state) {
    const Client client = open_client();
    const auto start = std::chrono::steady_clock::now();
    auto lookup = client.best(exact_query);
    const auto stop = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(lookup);
    state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
  }
}
BENCHMARK(BM_FirstQueryAfterOpen)->UseManualTime();

// What an application pays once at start: open the client and ask one question.
void BM_OpenAndFirstQuery(benchmark::State& state) {
  for (auto _ : state) {
    const Client client = open_client();
    auto lookup = client.best(exact_query);
    benchmark::DoNotOptimize(lookup);
  }
}
BENCHMARK(BM_OpenAndFirstQuery);

// The copy in the read-only directory: the client opens it immutable (no locks, no -shm), as it would on
// read-only media. The label says whether the directory refused writes or the open was forced (as root).
class ReadOnlyCopy {
 public:
  explicit ReadOnlyCopy(benchmark::State& state) {
    if (database().read_only_is_writable()) {
      ::setenv("TILETUNE_DB_IMMUTABLE", "1", 1);
      state.SetLabel("immutable, forced (this user writes through mode 0500)");
    } else {
      state.SetLabel("immutable, read-only directory");
    }
  }
  ReadOnlyCopy(const ReadOnlyCopy&) = delete;
  ReadOnlyCopy& operator=(const ReadOnlyCopy&) = delete;
  ~ReadOnlyCopy() { ::unsetenv("TILETUNE_DB_IMMUTABLE"); }
  const std::filesystem::path& path() const { return database().read_only_path(); }
};

void BM_ReadOnlyDirectoryOpenAndFirstQuery(benchmark::State& state) {
  const ReadOnlyCopy copy(state);
  for (auto _ : state) {
    const Client client = open_client(copy.path());
    auto lookup = client.best(exact_query);
    benchmark::DoNotOptimize(lookup);
  }
}
BENCHMARK(BM_ReadOnlyDirectoryOpenAndFirstQuery);

void BM_ReadOnlyDirectoryExactUncached(benchmark::State& state) {
  const ReadOnlyCopy copy(state);
  run_uncached(state, exact_query, tiletune::Match::exact, false, copy.path());
}
BENCHMARK(BM_ReadOnlyDirectoryExactUncached);

void BM_ReadOnlyDirectoryNearestSizeUncached(benchmark::State& state) {
  const ReadOnlyCopy copy(state);
  run_uncached(state, nearest_query, tiletune::Match::nearest_size, true, copy.path());
}
BENCHMARK(BM_ReadOnlyDirectoryNearestSizeUncached);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  (void)database();  // build the database before any timing starts
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
