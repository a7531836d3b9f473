// GPU tests (label gpu) of the application's own data: inputs read from files, setup kernels that derive
// inputs, and integer outputs that may differ in a few elements. Each skips, saying why, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "../test_paths.hpp"
#include "require_gpu.hpp"
#include "tiletune/sweep.hpp"

using namespace tiletune;
using tiletune::test::TempDir;

namespace {

void write(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A version 1 .npy file of float32 values.
std::string npy_f32(const std::vector<float>& v) {
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(v.size()) + ",), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + bytes_of(v);
}

std::vector<StoredResult> sweep(const KernelFamily& f, const ProblemKey& p, const std::filesystem::path& db) {
  Store store = Store::open(db);
  WorkerProcess worker(0);
  const CompileCache cache(CompileCache::default_dir());
  SweepOptions o;
  o.measure.min_reps = 2;
  o.measure.max_reps = 3;
  o.measure.budget_ms = 20;
  std::ostringstream log;
  const SweepSummary s = run_sweep(f, p, store, worker, cache, o, log);
  return store.results(s.sweep_id);
}

// Differences of a polyline: y[i] = 2 (v[i+1] - v[i]). KERNEL, REF, SETUP, FILL and EXTRA are replaced.
const char* kFamily = R"J({
  "name": "diffs", "source": "diffs.cu", "kernel": "diffs",
  "problem": {"dims": ["n"], "default_sizes": ["1000"]},
  "parameters": {"B": {"values": [32, 128], "default": 128}},
  "launch": {"block": ["B"], "grid": ["ceil_div(n, B)"]},
  "arguments": [{"name": "v", "buffer": "float", "count": "n + 1", "role": "input" FILL},
                {"name": "d", "buffer": "double", "count": "n", "role": "input" EXTRA},
                {"name": "y", "buffer": "float", "count": "n", "role": "output"},
                {"name": "n", "scalar": "int", "value": "n"}],
  "metric": {"unit": "GB/s", "work": "8 * n"},
  SETUP
  "reference": {"kernel": "diffs_ref.cu", "block": ["64"], "grid": ["ceil_div(n, 64)"],
                "arguments": ["d", "y", "n"]}
})J";

const char* kKernel =
    "extern \"C\" __global__ void diffs(const float* v, const double* d, float* y, int n) {\n"
    "  int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = 2.0f * (v[i + 1] - v[i]); }\n";
const char* kReference =
    "extern \"C\" __global__ void diffs_ref(const double* d, double* y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0 * d[i]; }\n";

KernelFamily diffs_family(const std::filesystem::path& dir, const std::string& fill, const std::string& extra,
                          const std::string& setup) {
  std::string json = kFamily;
  for (const auto& [key, value] : {std::pair{"FILL", fill}, {"EXTRA", extra}, {"SETUP", setup}})
    json.replace(json.find(key), std::strlen(key), value);
  write(dir / "family.json", json);
  write(dir / "diffs.cu", kKernel);
  write(dir / "diffs_ref.cu", kReference);
  write(dir / "derive.cu",
        "extern \"C\" __global__ void derive(const float* v, double* d, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) d[i] = (double)v[i + 1] - (double)v[i]; }\n");
  return load_families({dir}).at(0);
}

}  // namespace

// v from an .npy file and the reference's d from a raw file of float64 differences computed here: every
// configuration agrees only if both files reached the GPU whole and in order.
TEST(GpuData, AFamilyFilledFromFiles) {
  REQUIRE_GPU();
  TempDir dir;
  const int n = 100000;
  std::vector<float> v(n + 1);
  std::vector<double> d(n);
  for (int i = 0; i <= n; ++i) v[i] = static_cast<float>(std::sin(i * 0.001) * 100 + i % 7);
  for (int i = 0; i < n; ++i) d[i] = static_cast<double>(v[i + 1]) - static_cast<double>(v[i]);
  write(dir.path / "diffs" / "data" / "v.npy", npy_f32(v));
  write(dir.path / "diffs" / "data" / "d.bin", bytes_of(d));
  const KernelFamily f = diffs_family(dir.path / "diffs", R"(, "fill": {"npy": "data/v.npy"})",
                                      R"(, "fill": {"raw": "data/d.bin"})", "");
  const auto results = sweep(f, f.make_problem({n}, {}), dir.path / "files.db");
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) EXPECT_EQ(r.record.outcome, Outcome::ok) << r.record.reason;
  // Another file under the same name: a new template hash, and wrong d makes every configuration wrong.
  KernelFamily other = f;
  std::vector<double> zeros(n, 0.0);
  write(dir.path / "zeros.bin", bytes_of(zeros));
  use_input_file(other, "d", dir.path / "zeros.bin");
  EXPECT_NE(other.template_hash, f.template_hash);
  for (const auto& r : sweep(other, other.make_problem({n}, {}), dir.path / "zeros.db"))
    EXPECT_EQ(r.record.outcome, Outcome::wrong_result) << r.record.reason;
}

// d is derived from v by a setup kernel before the reference reads it; without it d is random and every
// configuration is wrong.
TEST(GpuData, ASetupKernelWhoseOutputTheReferenceReads) {
  REQUIRE_GPU();
  TempDir with, without;
  const std::string setup =
      R"X("setup": [{"kernel": "derive.cu", "arguments": ["v", "d", "n"], "block": ["256"],
                    "grid": ["ceil_div(n, 256)"]
}],)X";
  const KernelFamily f = diffs_family(with.path / "diffs", "", "", setup);
  for (const auto& r : sweep(f, f.make_problem({77777}, {}), with.path / "s.db"))
    EXPECT_EQ(r.record.outcome, Outcome::ok) << r.record.reason;
  const KernelFamily g = diffs_family(without.path / "diffs", "", "", "");
  for (const auto& r : sweep(g, g.make_problem({77777}, {}), without.path / "s.db"))
    EXPECT_EQ(r.record.outcome, Outcome::wrong_result);
}

// Integer outputs: configuration TIES=1 gets 3 elements wrong. Three may differ: ok; two: wrong_result,
// naming how many differed and the worst.
TEST(GpuData, IntegerOutputsAcceptUpToMaxDiffering) {
  REQUIRE_GPU();
  const auto family = [](const std::filesystem::path& dir, const std::string& allowed) {
    write(dir / "family.json", R"J({
      "name": "ties", "source": "ties.cu", "kernel": "ties",
      "problem": {"dims": ["n"], "default_sizes": ["1000"]},
      "parameters": {"TIES": {"values": [0, 1], "default": 0}},
      "launch": {"block": ["128"], "grid": ["ceil_div(n, 128)"]},
      "arguments": [{"name": "x", "buffer": "int32", "count": "n", "role": "input"},
                    {"name": "h", "buffer": "int32", "count": "n", "role": "output"},
                    {"name": "n", "scalar": "int", "value": "n"}],
      "metric": {"unit": "GB/s", "work": "8 * n"},
      "reference": {"kernel": "ties_ref.cu", "block": ["64"], "grid": ["ceil_div(n, 64)"],
                    "outputs": "native", "max_differing": )J" +
                                   allowed + "}}");
    write(dir / "ties.cu",
          "extern \"C\" __global__ void ties(const int* x, int* h, int n) {\n"
          "  int i = blockIdx.x * 128 + threadIdx.x;\n"
          "  if (i < n) h[i] = x[i] / 2 + (TIES && i % 1000 == 7 ? 5 : 0); }\n");
    write(dir / "ties_ref.cu",
          "extern \"C\" __global__ void ties_ref(const int* x, int* h, int n) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) h[i] = x[i] / 2; }\n");
    return load_families({dir}).at(0);
  };
  TempDir a, b;
  const KernelFamily three = family(a.path / "ties", "3");
  for (const auto& r : sweep(three, three.make_problem({3000}, {}), a.path / "t.db"))
    EXPECT_EQ(r.record.outcome, Outcome::ok) << r.record.reason;
  const KernelFamily two = family(b.path / "ties", "2");
  for (const auto& r : sweep(two, two.make_problem({3000}, {}), b.path / "t.db")) {
    if (r.record.params.at("TIES") == 0) {
      EXPECT_EQ(r.record.outcome, Outcome::ok) << r.record.reason;
      continue;
    }
    EXPECT_EQ(r.record.outcome, Outcome::wrong_result);
    EXPECT_NE(r.record.reason.find("3 of 3000 elements of h differ (2 may)"), std::string::npos)
        << r.record.reason;
    EXPECT_NE(r.record.reason.find("worst h[7]"), std::string::npos) << r.record.reason;
  }
}
