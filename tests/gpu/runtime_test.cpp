// tiletune::runtime on the GPU: a sweep through the tiletune command, then the measured configuration
// launched from this process with its own buffers and checked element by element. This process owns a CUDA
// context, so it starts no worker of its own: the sweep runs in the command.
#include "tiletune/runtime.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "../test_paths.hpp"
#include "tiletune/capture.hpp"
#include "tiletune/family.hpp"
#include "tiletune/input_file.hpp"
#include "tiletune/store.hpp"

using namespace tiletune;
using tiletune::test::TempDir;

namespace {

std::string gpu_missing() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA GPU: ") + cudaGetErrorString(e);
  }
  return count ? "" : "no CUDA GPU";
}

int run(const std::string& command) {
  const int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

struct DeviceArray {
  float* p = nullptr;
  explicit DeviceArray(std::size_t n) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)), cudaSuccess);
  }
  ~DeviceArray() { cudaFree(p); }
};

// C = A * B for row-major A (m x k) and B (k x n), launched through the runtime, against a float64 product
// on the host: every element within 1e-4 of the row's scale, the output poisoned with NaN first.
void expect_gemm_correct(const runtime::Kernel& kernel, long m, long n, long k, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  DeviceArray da(a.size()), db(b.size()), dc(static_cast<std::size_t>(m * n));
  ASSERT_EQ(cudaMemcpy(da.p, a.data(), a.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.p, b.data(), b.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dc.p, 0xff, static_cast<std::size_t>(m * n) * 4), cudaSuccess);  // NaN
  kernel.launch({{"A", da.p}, {"B", db.p}, {"C", dc.p}});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  ASSERT_EQ(cudaMemcpy(c.data(), dc.p, c.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  long wrong = 0;
  for (long i = 0; i < m; ++i)
    for (long j = 0; j < n; ++j) {
      double sum = 0, scale = 0;
      for (long p = 0; p < k; ++p) {
        const double term = static_cast<double>(a[i * k + p]) * b[p * n + j];
        sum += term;
        scale += std::abs(term);
      }
      const float got = c[static_cast<std::size_t>(i * n + j)];
      if (!(std::abs(got - sum) <= 1e-4 * std::max(scale, 1.0)) && wrong++ < 5)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", expected " << sum;
    }
  EXPECT_EQ(wrong, 0) << m << "x" << n << "x" << k;
}

}  // namespace

TEST(Runtime, LaunchesTheMeasuredConfigurationAndItIsCorrect) {
  if (const std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const auto db = dir.path / "t.db", cache = dir.path / "cache";
  const std::string sweep = "TILETUNE_CACHE='" + cache.string() + "' '" + test::tiletune_binary().string() +
                            "' sweep --family gemm_tiled --size 1000x1000x777 --strategy random --budget 12 "
                            "--min-reps 3 --max-reps 10 --db '" +
                            db.string() + "' > '" + (dir.path / "sweep.log").string() + "' 2>&1";
  ASSERT_EQ(run(sweep), 0) << sweep;
  cudaDeviceProp props{};
  ASSERT_EQ(cudaGetDeviceProperties(&props, 0), cudaSuccess);
  const auto best = Store::open(db, Store::Mode::read_only)
                        .best("gemm_tiled", props.name, ProblemKey{{1000, 1000, 777}, {}});
  ASSERT_TRUE(best.has_value());

  runtime::Runtime rt({db, {}, cache, {}, {}, false});
  const runtime::Kernel& tuned = rt.kernel("gemm_tiled", "1000x1000x777");
  EXPECT_EQ(tuned.match(), Match::exact) << tuned.message();
  EXPECT_EQ(tuned.params(), best->record.params);
  EXPECT_TRUE(tuned.from_cache()) << "the sweep's CUBIN was compiled again";
  EXPECT_EQ(&rt.kernel("gemm_tiled", "1000x1000x777"), &tuned);  // loaded once
  expect_gemm_correct(tuned, 1000, 1000, 777, 1);

  // Timed as the sweep timed it: the median of back-to-back runs between events.
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  DeviceArray a(1000 * 777), b(777 * 1000), c(1000 * 1000);
  std::vector<float> times;
  for (int r = 0; r < 21; ++r) {
    cudaEventRecord(start);
    tuned.launch({{"A", a.p}, {"B", b.p}, {"C", c.p}});
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  std::nth_element(times.begin(), times.begin() + 10, times.end());
  std::cout << "runtime launch median " << times[10] << " ms, the sweep's median " << *best->record.median_ms
            << " ms, ratio " << times[10] / *best->record.median_ms << "\n";
  cudaEventDestroy(start);
  cudaEventDestroy(stop);

  // A problem nobody tuned: the nearest tuned one's configuration, its geometry computed for this one.
  const runtime::Kernel& other = rt.kernel("gemm_tiled", "333x517x250");
  EXPECT_EQ(other.match(), Match::nearest_size) << other.message();
  EXPECT_EQ(other.params(), tuned.params());
  expect_gemm_correct(other, 333, 517, 250, 2);

  // A buffer left out is an error, not a launch.
  try {
    tuned.launch({{"A", a.p}, {"B", b.p}});
    ADD_FAILURE() << "launched without C";
  } catch (const runtime::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("buffer 'C'"), std::string::npos) << e.what();
  }

  // The same configuration from a bundle: nothing compiled, the same geometry, correct at both sizes.
  const auto bundle = dir.path / "bundle";
  const std::string export_bundle = "TILETUNE_CACHE='" + cache.string() + "' '" +
                                    test::tiletune_binary().string() + "' export --format bundle --db '" +
                                    db.string() + "' -o '" + bundle.string() + "' 2>/dev/null";
  ASSERT_EQ(run(export_bundle), 0) << export_bundle;
  runtime::RuntimeOptions from_bundle;
  from_bundle.database = dir.path / "not-read.db";
  from_bundle.bundle = bundle;
  runtime::Runtime bundled(from_bundle);
  const runtime::Kernel& shipped = bundled.kernel("gemm_tiled", "1000x1000x777");
  EXPECT_EQ(shipped.source(), "bundle");
  EXPECT_EQ(shipped.match(), Match::exact) << shipped.message();
  EXPECT_EQ(shipped.params(), tuned.params());
  EXPECT_EQ(shipped.grid(), tuned.grid());
  EXPECT_EQ(shipped.block(), tuned.block());
  EXPECT_EQ(shipped.stored_median_ms(), tuned.stored_median_ms());
  expect_gemm_correct(shipped, 1000, 1000, 777, 3);
  const runtime::Kernel& shipped_other = bundled.kernel("gemm_tiled", "333x517x250");
  EXPECT_EQ(shipped_other.match(), Match::nearest_size) << shipped_other.message();
  expect_gemm_correct(shipped_other, 333, 517, 250, 4);
  EXPECT_FALSE(std::filesystem::exists(dir.path / "not-read.db"));

  // The template changed since the sweep: reported, never launched.
  const auto changed = dir.path / "families" / "gemm_tiled";
  std::filesystem::create_directories(changed.parent_path());
  std::filesystem::copy(test::templates_dir() / "gemm_tiled", changed,
                        std::filesystem::copy_options::recursive);
  for (const auto& f : std::filesystem::directory_iterator(changed))
    if (f.path().extension() == ".cu") std::ofstream(f.path(), std::ios::app) << "\n// changed\n";
  runtime::Runtime edited({db, {dir.path / "families"}, cache, {}, {}, false});
  try {
    edited.kernel("gemm_tiled", "1000x1000x777");
    ADD_FAILURE() << "a changed template was used";
  } catch (const runtime::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("changed since it was tuned"), std::string::npos) << e.what();
  }
}

// A family with a tensor map and a cluster through the runtime: the map is encoded at launch over the
// caller's pointer (again for another pointer, not for the same one), the kernel runs as a cluster of two,
// and a pointer TMA cannot take is refused in one line.
TEST(Runtime, EncodesTensorMapsOverTheCallersPointersAndLaunchesClusters) {
  if (const std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
  cudaDeviceProp props{};
  ASSERT_EQ(cudaGetDeviceProperties(&props, 0), cudaSuccess);
  if (props.major < 9) GTEST_SKIP() << "tensor maps and clusters need sm_90; this is " << props.name;
  TempDir dir;
  const auto db = dir.path / "t.db";
  { Store created = Store::open(db); }  // nothing tuned: the family's defaults
  runtime::Runtime rt({db, {test::fixtures_dir() / "families"}, dir.path / "cache", {}, {}, false});
  const runtime::Kernel& k = rt.kernel("tma_tile", "100x36");
  EXPECT_EQ(k.match(), Match::not_found);
  EXPECT_EQ(k.cluster(), (std::array<unsigned, 3>{2, 1, 1}));
  EXPECT_EQ(k.grid(), (std::array<unsigned, 3>{2, 13, 1}));
  EXPECT_EQ(k.buffers(), (std::vector<std::string>{"in", "out"}));  // the map is no buffer
  ASSERT_EQ(k.buffer_info().size(), 2u);
  const std::size_t n = 100 * 36;
  auto check_copy = [&](const DeviceArray& in, float offset) {
    std::vector<float> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i) + offset;
    ASSERT_EQ(cudaMemcpy(in.p, host.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    DeviceArray out(n);
    ASSERT_EQ(cudaMemset(out.p, 0xff, n * 4), cudaSuccess);
    k.launch({{"in", in.p}, {"out", out.p}});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(n);
    ASSERT_EQ(cudaMemcpy(got.data(), out.p, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, host) << "offset " << offset;
  };
  DeviceArray first(n), second(n);
  check_copy(first, 0);
  check_copy(first, 0.5f);  // the same pointer: its map again
  check_copy(second, 7);    // another pointer: a map over it
  try {
    DeviceArray out(n);
    k.launch(std::vector<void*>{first.p + 1,
                                out.p});  // 4 bytes past the allocation's start: TMA needs 16-byte alignment
    ADD_FAILURE() << "launched with an unaligned tensor";
  } catch (const runtime::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor map tma_in over in"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuTensorMapEncodeTiled returned CUresult"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

// The capture loop: an application asks for sizes it was not tuned for, the runtime records each once,
// `sweep --captured` tunes exactly those, and the application's next run gets exact matches.
TEST(Runtime, CapturedProblemsAreTunedAndThenMatchExactly) {
  if (const std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const auto db = dir.path / "app.db", cache = dir.path / "cache", capture = dir.path / "app.capture.jsonl";
  const std::string bin =
      "TILETUNE_CACHE='" + cache.string() + "' '" + test::tiletune_binary().string() + "' ";
  const std::string log = " >> '" + (dir.path / "sweep.log").string() + "' 2>&1";
  ASSERT_EQ(run(bin + "sweep --family gemm_tiled --size 1000x1000x777 --strategy random --budget 6 --db '" +
                db.string() + "'" + log),
            0);
  {
    runtime::Runtime rt({db, {}, cache, {}, capture});
    for (const char* size : {"512x512x512", "300x200x100", "512x512x512"})
      EXPECT_EQ(rt.kernel("gemm_tiled", size).match(), Match::nearest_size) << size;
    EXPECT_EQ(rt.kernel("gemm_tiled", "1000x1000x777").match(), Match::exact);
  }
  const auto captured = read_capture(capture);
  ASSERT_EQ(captured.size(), 2u) << "each size once, the exact match not at all";
  EXPECT_EQ(captured[0].size, "512x512x512");
  EXPECT_EQ(captured[0].match, "nearest_size");
  ASSERT_EQ(run(bin + "sweep --captured '" + capture.string() + "' --strategy random --budget 6 --db '" +
                db.string() + "'" + log),
            0);
  runtime::Runtime again({db, {}, cache, {}, capture});
  for (const char* size : {"512x512x512", "300x200x100"}) {
    const runtime::Kernel& k = again.kernel("gemm_tiled", size);
    EXPECT_EQ(k.match(), Match::exact) << size << ": " << k.message();
  }
  EXPECT_EQ(read_capture(capture).size(), 2u) << "exact matches are not captured";
}

// With capture_inputs, the first launch of a new problem saves its inputs (A and B, not the output C) as
// .npy files that hold exactly what the application gave; sweep --captured tunes on them (its sweep carries
// their data's template hash, not the family's own), and the next run gets exact matches.
TEST(Runtime, CapturedInputsAreSavedAndTheSweepIsKeyedToThem) {
  if (const std::string why = gpu_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const auto db = dir.path / "app.db", cache = dir.path / "cache", capture = dir.path / "app.capture.jsonl";
  const std::string bin =
      "TILETUNE_CACHE='" + cache.string() + "' '" + test::tiletune_binary().string() + "' ";
  const std::string log = " >> '" + (dir.path / "sweep.log").string() + "' 2>&1";
  ASSERT_EQ(run(bin + "sweep --family gemm_tiled --size 1000x1000x777 --strategy random --budget 4 --db '" +
                db.string() + "'" + log),
            0);
  std::vector<float> a(300 * 100), b(100 * 200);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 17) - 8;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * static_cast<float>(i % 5);
  {
    runtime::Runtime rt({db, {}, cache, {}, capture, true});
    rt.kernel("gemm_tiled", "512x512x512");  // asked for, never launched: recorded without inputs
    const runtime::Kernel& k = rt.kernel("gemm_tiled", "300x200x100");
    ASSERT_EQ(k.match(), Match::nearest_size);
    DeviceArray da(a.size()), dbuf(b.size()), dc(300 * 200);
    ASSERT_EQ(cudaMemcpy(da.p, a.data(), a.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dbuf.p, b.data(), b.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    for (int twice = 0; twice < 2; ++twice) k.launch({{"A", da.p}, {"B", dbuf.p}, {"C", dc.p}});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  const auto captured = read_capture(capture);
  ASSERT_EQ(captured.size(), 2u);
  const CapturedProblem& p = captured[1].size == "300x200x100" ? captured[1] : captured[0];
  EXPECT_TRUE((captured[1].size == "300x200x100" ? captured[0] : captured[1]).inputs.empty());
  ASSERT_EQ(p.inputs.size(), 2u) << "A and B, not the output C";
  const auto saved = [&](const std::string& name) {
    const auto file = capture.parent_path() / p.inputs.at(name);
    const InputLayout layout = inspect_input(file, InputFormat::npy, ElementType::f32, std::nullopt);
    std::vector<float> out;
    stream_input(file, layout, ElementType::f32, 1 << 16, [&](const char* d, std::size_t n) {
      out.insert(out.end(), reinterpret_cast<const float*>(d), reinterpret_cast<const float*>(d + n));
    });
    return out;
  };
  EXPECT_EQ(saved("A"), a);
  EXPECT_EQ(saved("B"), b);
  ASSERT_EQ(run(bin + "sweep --captured '" + capture.string() + "' --strategy random --budget 4 --db '" +
                db.string() + "'" + log),
            0);
  auto families = load_families({builtin_templates_dir()});
  KernelFamily filled = find_family(families, "gemm_tiled");
  for (const auto& [name, file] : p.inputs) use_input_file(filled, name, capture.parent_path() / file);
  const Store store = Store::open(db, Store::Mode::read_only);
  const auto best = store.best("gemm_tiled", p.device, ProblemKey{{300, 200, 100}, {}});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(store.sweep(best->sweep_id)->template_hash, filled.template_hash);
  EXPECT_NE(filled.template_hash, find_family(families, "gemm_tiled").template_hash);
  runtime::Runtime again({db, {}, cache, {}, capture});
  const runtime::Kernel& k = again.kernel("gemm_tiled", "300x200x100");
  EXPECT_EQ(k.match(), Match::exact) << k.message();
  EXPECT_EQ(k.params(), best->record.params);
}
