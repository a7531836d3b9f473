// The families that read the application's data: spmv_csr (and its naive baseline) over CSR arrays from
// files, and pnpoly, whose slopes a setup kernel derives. They load and plan on the H100 profile, their
// configurations compile with NVRTC for sm_90, and their references (run on the CPU) agree with a CPU
// computation on their own data.
#include <gtest/gtest.h>

#include <random>

#include "../test_paths.hpp"
#include "kernel_emulation.hpp"
#include "requests.hpp"
#include "tiletune/input_file.hpp"
#include "tiletune/plan.hpp"

namespace ref_spmv {
#include "spmv_csr/spmv_reference.cu"
}
namespace ref_pnpoly {
#include "pnpoly/pnpoly_reference.cu"
#include "pnpoly/slopes.cu"
}  // namespace ref_pnpoly

using namespace tiletune;

namespace {

std::vector<KernelFamily> builtin() { return load_families({test::templates_dir()}); }

template <typename T>
std::vector<T> read_file_fill(const Fill& fill, ElementType type) {
  const InputLayout layout = inspect_input(fill.path, fill.format, type, std::nullopt);
  std::vector<T> out;
  stream_input(fill.path, layout, type, 4096, [&](const char* p, std::size_t n) {
    const auto* t = reinterpret_cast<const T*>(p);
    out.insert(out.end(), t, t + n / sizeof(T));
  });
  return out;
}

// Every configuration's plan on the H100 profile, and NVRTC on the given ones.
void plans_and_compiles(const KernelFamily& f, const ProblemKey& p, const std::vector<Params>& changes) {
  const DeviceLimits h100 = load_profile("h100");
  int runnable = 0;
  for (const Params& params : enumerate_space(f))
    runnable += prune_before_compile(f, h100, p, params).outcome == Outcome::ok;
  EXPECT_EQ(runnable, static_cast<int>(enumerate_space(f).size())) << f.name << ": all run on an H100";
  for (const Params& change : changes) {
    Params params = f.default_params();
    for (const auto& [k, v] : change) params[k] = v;
    const CompileResult r = compile(compile_job(f, h100, params));
    const auto* k = std::get_if<CompiledKernel>(&r);
    ASSERT_NE(k, nullptr) << f.name << " " << params_to_text(params) << ": "
                          << std::get<CompileError>(r).log.substr(0, 2000);
    EXPECT_EQ(k->usage.spill_stores, 0) << f.name << " " << params_to_text(params);
  }
}

}  // namespace

TEST(DataFamilies, SpmvPlansCompilesAndItsReferenceAgreesOnItsOwnMatrix) {
  const auto fams = builtin();
  const KernelFamily& f = find_family(fams, "spmv_csr");
  EXPECT_EQ(find_family(fams, "spmv_csr_naive").template_hash.empty(), false);
  const ProblemKey p = f.make_problem({2048, 2048, 16360}, {});
  plans_and_compiles(f, p, {{}, {{"TPR", 1}, {"XLDG", 0}}, {{"TPR", 32}, {"UNROLL", 4}, {"BLOCK", 512}}});
  const auto row_ptr = read_file_fill<int>(find_argument(f, "row_ptr")->fill, ElementType::i32);
  const auto col_idx = read_file_fill<int>(find_argument(f, "col_idx")->fill, ElementType::i32);
  const auto values = read_file_fill<float>(find_argument(f, "values")->fill, ElementType::f32);
  ASSERT_EQ(row_ptr.size(), 2049u);
  ASSERT_EQ(values.size(), 16360u);
  ASSERT_EQ(row_ptr.back(), 16360) << "the committed matrix is a valid CSR";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(2048);
  for (auto& v : x) v = u(rng);
  std::vector<double> y(2048, std::nan(""));
  tiletune::emulation::launch(dim3(16), dim3(128), ref_spmv::spmv_reference, row_ptr.data(), col_idx.data(),
                              values.data(), x.data(), y.data(), 2048);
  for (int r = 0; r < 2048; ++r) {
    double want = 0;
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) want += double(values[j]) * x[col_idx[j]];
    ASSERT_EQ(y[r], want) << "row " << r;
  }
  // A matrix of another shape than the problem says stops before the GPU, naming the file.
  test::TempDir dir;
  const CompileCache cache(dir.path / "cache");
  EXPECT_THROW(setup_request(f, f.make_problem({2048, 2048, 16361}, {}), load_profile("h100"), cache, {}),
               SweepError);
}

TEST(DataFamilies, PnpolyPlansCompilesAndItsReferenceReadsTheSetupKernelsSlopes) {
  const auto fams = builtin();
  const KernelFamily& f = find_family(fams, "pnpoly");
  ASSERT_EQ(f.setup.size(), 1u);
  ASSERT_EQ(f.baselines, std::vector<std::string>{"pnpoly_naive"});
  const KernelFamily& naive = find_family(fams, "pnpoly_naive");
  EXPECT_EQ(naive.setup.size(), 1u) << "the baseline derives its slopes too";
  EXPECT_EQ(enumerate_space(naive).size(), 1u);
  const ProblemKey p = f.make_problem({4096, 600}, {});
  plans_and_compiles(f, p, {{}, {{"SHARED", 1}, {"PPT", 8}, {"SLOPES", 0}}, {{"BLOCK", 1024}, {"PPT", 4}}});
  test::TempDir dir;
  const auto req = setup_request(f, p, load_profile("h100"), CompileCache(dir.path / "cache"), {});
  ASSERT_EQ(req.setup_kernels.size(), 1u);
  EXPECT_EQ(req.setup_kernels[0].kernel, "slopes");
  // A square with a triangular notch: the setup kernel's slopes, then the reference, against a CPU test.
  const std::vector<float> vertices = {-1, -1, 1, -1, 1, 1, 0, 0.2f, -1, 1};
  const int nv = 5;
  std::vector<float> slopes(nv, std::nanf(""));
  tiletune::emulation::launch(dim3(1), dim3(256), ref_pnpoly::slopes, vertices.data(), slopes.data(), nv);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.2f, 1.2f);
  const int n = 5000;
  std::vector<float> points(2 * n);
  for (auto& v : points) v = u(rng);
  std::vector<int> inside(n, -1);
  tiletune::emulation::launch(dim3(20), dim3(256), ref_pnpoly::pnpoly_reference, points.data(),
                              vertices.data(), slopes.data(), inside.data(), n, nv);
  int in = 0;
  for (int i = 0; i < n; ++i) {
    const double x = points[2 * i], y = points[2 * i + 1];
    const bool in_square = x > -1 && x < 1 && y > -1 && y < 1;
    // The notch: the triangle (1, 1), (0, 0.2), (-1, 1) is outside.
    const bool in_notch = y > 0.2 + 0.8 * std::abs(x);
    if (std::abs(std::abs(x) - 1) < 1e-4 || std::abs(std::abs(y) - 1) < 1e-4 ||
        std::abs(y - 0.2 - 0.8 * std::abs(x)) < 1e-4)
      continue;  // on an edge either answer is right
    ASSERT_EQ(inside[i], in_square && !in_notch ? 1 : 0) << "point (" << x << ", " << y << ")";
    in += inside[i];
  }
  EXPECT_GT(in, n / 4);
}
