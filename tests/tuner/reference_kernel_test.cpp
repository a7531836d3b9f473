// The families' reference kernels, run on the CPU through kernel_emulation.hpp with the launch geometry their
// family.json declares, against float64 computations written here. Every output element is checked; outputs
// are poisoned (NaN) before each launch, with a poisoned guard past the end that must stay untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../test_paths.hpp"
#include "kernel_emulation.hpp"

// The reference kernels, each in its own namespace (two of them declare a __constant__ "mask").
namespace ref_gemm {
#include "gemm_naive/gemm_reference.cu"
}
namespace ref_gemm_abt {
#include "gemm_bf16_wgmma/gemm_abt_reference.cu"
}
namespace ref_gemm_ab {
#include "gemm_bf16_wgmma_ab/gemm_ab_reference.cu"
}
namespace ref_conv1d {
#include "conv1d_naive/conv1d_reference.cu"
}
namespace ref_conv2d {
#include "conv2d_naive/conv2d_reference.cu"
}
namespace ref_transpose {
#include "transpose_naive/transpose_reference.cu"
}
namespace ref_histogram {
#include "histogram_u8/histogram_reference.cu"
}
namespace ref_softmax {
#include "softmax_half/softmax_reference.cu"
}
// Their CPU tests, on the families' own data, are in data_families_test.cpp.
namespace ref_spmv {
#include "spmv_csr/spmv_reference.cu"
}
namespace ref_pnpoly {
#include "pnpoly/pnpoly_reference.cu"
}

namespace {

using tiletune::emulation::ceil_div;
using tiletune::emulation::launch;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kGuard = 37;  // poisoned elements past the end of every output

// The masks the families allow: odd widths up to 63 (conv1d_*) and up to 15 x 15 (conv2d_*).
static_assert(std::size(ref_conv1d::mask) >= 63, "conv1d_reference.cu: mask must hold 63 taps");
static_assert(std::size(ref_conv2d::mask) >= 15 * 15, "conv2d_reference.cu: mask must hold 15 x 15 taps");

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// An output buffer of n elements plus the guard, all NaN.
std::vector<double> poisoned(size_t n) { return std::vector<double>(n + kGuard, kNaN); }

// Every element of got[0, want.size()) within rtol of want (exactly equal for rtol 0; NaN never passes), and
// the guard past the end still NaN. Reports the first few mismatches with their coordinates (row-major, cols
// per row) and the count.
void expect_matches(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                    size_t cols) {
  ASSERT_EQ(got.size(), want.size() + kGuard);
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool ok = std::abs(got[i] - want[i]) <= rtol * std::abs(want[i]);  // false for NaN
    if (ok) continue;
    if (bad++ < 5)
      first << "\n  [" << i / cols << "][" << i % cols << "]: got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << bad << " of " << want.size() << " elements differ; the first:" << first.str();
  for (size_t i = want.size(); i < got.size(); ++i)
    ASSERT_TRUE(std::isnan(got[i])) << "element " << i << " written past the end (" << want.size() << ")";
}

// ---------------------------------------------------------------------------------------------------------
// gemm_naive/gemm_reference.cu; launch geometry of the gemm families' "reference" block: block 16 x 16, grid
// ceil(N / 16) x ceil(M / 16).

struct GemmCase {
  int M, N, K;
};
void PrintTo(const GemmCase& c, std::ostream* os) { *os << "M " << c.M << ", N " << c.N << ", K " << c.K; }

class GemmReference : public testing::TestWithParam<GemmCase> {};

TEST_P(GemmReference, EveryElementMatchesFloat64) {
  const auto [M, N, K] = GetParam();
  std::mt19937 rng(1000 + M * 7 + N * 13 + K);
  const std::vector<float> A = random_floats(size_t(M) * K, rng), B = random_floats(size_t(K) * N, rng);

  std::vector<double> want(size_t(M) * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int k = 0; k < K; ++k) acc += double(A[size_t(i) * K + k]) * double(B[size_t(k) * N + j]);
      want[size_t(i) * N + j] = acc;
    }

  std::vector<double> C = poisoned(want.size());
  launch(dim3(ceil_div(N, 16), ceil_div(M, 16)), dim3(16, 16), ref_gemm::gemm_reference, A.data(), B.data(),
         C.data(), M, N, K);
  // Products of two floats are exact in float64 and both sum over k in order: equal to the last bit.
  expect_matches(C, want, 0.0, N);
}

std::string gemm_name(const testing::TestParamInfo<GemmCase>& info) {
  return std::to_string(info.param.M) + "x" + std::to_string(info.param.N) + "x" +
         std::to_string(info.param.K);
}

INSTANTIATE_TEST_SUITE_P(Sizes, GemmReference,
                         testing::Values(GemmCase{1, 1, 1}, GemmCase{37, 53, 29}, GemmCase{64, 16, 100},
                                         GemmCase{16, 17, 1}, GemmCase{1, 300, 5}, GemmCase{45, 1, 33},
                                         GemmCase{5, 7, 0}),
                         gemm_name);

// gemm_bf16_wgmma/gemm_abt_reference.cu, for the A B^T families (B given as N x K): the same geometry, one
// kernel per input type, the inputs rounded to that type first.
// b_kn: B is given K x N (C = A B) rather than N x K (C = A B^T).
template <typename T>
void check_gemm_abt(const GemmCase& c, T convert(float),
                    void kernel(const T*, const T*, double*, int, int, int), bool b_kn = false) {
  const auto [M, N, K] = c;
  std::mt19937 rng((b_kn ? 3000 : 2000) + M * 7 + N * 13 + K);
  std::vector<T> A, B;
  std::vector<double> a, b;  // the same values, widened
  for (float x : random_floats(size_t(M) * K, rng)) {
    A.push_back(convert(x));
    a.push_back(double(float(A.back())));
  }
  for (float x : random_floats(size_t(N) * K, rng)) {
    B.push_back(convert(x));
    b.push_back(double(float(B.back())));
  }
  std::vector<double> want(size_t(M) * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int k = 0; k < K; ++k)
        acc += a[size_t(i) * K + k] * b[b_kn ? size_t(k) * N + j : size_t(j) * K + k];
      want[size_t(i) * N + j] = acc;
    }
  std::vector<double> C = poisoned(want.size());
  launch(dim3(ceil_div(N, 16), ceil_div(M, 16)), dim3(16, 16), kernel, A.data(), B.data(), C.data(), M, N, K);
  expect_matches(C, want, 0.0, N);
}

class GemmAbtReference : public testing::TestWithParam<GemmCase> {};

TEST_P(GemmAbtReference, EveryElementMatchesFloat64ForEachInputType) {
  check_gemm_abt<__nv_bfloat16>(
      GetParam(), [](float x) { return __float2bfloat16(x); }, ref_gemm_abt::gemm_abt_reference_bf16);
  check_gemm_abt<__half>(
      GetParam(), [](float x) { return __float2half(x); }, ref_gemm_abt::gemm_abt_reference_f16);
  check_gemm_abt<float>(
      GetParam(), [](float x) { return x; }, ref_gemm_abt::gemm_abt_reference_f32);
}

INSTANTIATE_TEST_SUITE_P(Sizes, GemmAbtReference,
                         testing::Values(GemmCase{1, 1, 8}, GemmCase{37, 53, 24}, GemmCase{64, 16, 100},
                                         GemmCase{1, 300, 8}, GemmCase{45, 1, 32}, GemmCase{130, 67, 64}),
                         gemm_name);

// gemm_bf16_wgmma_ab/gemm_ab_reference.cu, for the 16-bit C = A B tensor-core families (B given as K x N):
// the same check with B's elements read as K x N.

class GemmAbReference : public testing::TestWithParam<GemmCase> {};

TEST_P(GemmAbReference, EveryElementMatchesFloat64ForEachInputType) {
  check_gemm_abt<__nv_bfloat16>(
      GetParam(), [](float x) { return __float2bfloat16(x); }, ref_gemm_ab::gemm_ab_reference_bf16, true);
  check_gemm_abt<__half>(
      GetParam(), [](float x) { return __float2half(x); }, ref_gemm_ab::gemm_ab_reference_f16, true);
}

INSTANTIATE_TEST_SUITE_P(Sizes, GemmAbReference,
                         testing::Values(GemmCase{1, 8, 8}, GemmCase{37, 56, 24}, GemmCase{64, 16, 100},
                                         GemmCase{1, 304, 8}, GemmCase{45, 8, 32}, GemmCase{130, 72, 64}),
                         gemm_name);

// ---------------------------------------------------------------------------------------------------------
// conv1d_naive/conv1d_reference.cu; launch geometry of the conv1d families' "reference" block: block 256,
// grid ceil(n / 256).

struct Conv1dCase {
  int n, mask_width, boundary;
};
void PrintTo(const Conv1dCase& c, std::ostream* os) {
  *os << "n " << c.n << ", mask_width " << c.mask_width << ", boundary " << c.boundary;
}

// Sizes below, at and past a block of 256, every mask width from the smallest to the largest the families
// allow, both boundaries.
std::vector<Conv1dCase> conv1d_cases() {
  std::vector<Conv1dCase> cases;
  for (int n : {1, 7, 256, 257, 1000})
    for (int mask_width : {1, 5, 63})
      for (int boundary : {0, 1}) cases.push_back({n, mask_width, boundary});
  return cases;
}

std::string conv1d_name(const testing::TestParamInfo<Conv1dCase>& info) {
  return "n" + std::to_string(info.param.n) + "_mask" + std::to_string(info.param.mask_width) + "_boundary" +
         std::to_string(info.param.boundary);
}

class Conv1dReference : public testing::TestWithParam<Conv1dCase> {};

TEST_P(Conv1dReference, EveryElementMatchesFloat64) {
  const auto [n, mask_width, boundary] = GetParam();
  std::mt19937 rng(2000 + n * 3 + mask_width * 5 + boundary);
  const std::vector<float> in = random_floats(n, rng), taps = random_floats(mask_width, rng);
  // Taps past mask_width are NaN: a kernel that read them would produce NaN.
  std::fill(std::begin(ref_conv1d::mask), std::end(ref_conv1d::mask),
            std::numeric_limits<float>::quiet_NaN());
  std::copy(taps.begin(), taps.end(), ref_conv1d::mask);

  const int r = mask_width / 2;
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) {
    double acc = 0.0;
    for (int j = 0; j < mask_width; ++j) {
      int p = i - r + j;
      if (p < 0 || p >= n) {
        if (boundary == 0) continue;  // a ghost element is 0
        p = std::clamp(p, 0, n - 1);
      }
      acc += double(taps[j]) * double(in[p]);
    }
    want[i] = acc;
  }

  std::vector<double> out = poisoned(n);
  launch(dim3(ceil_div(n, 256)), dim3(256), ref_conv1d::conv1d_reference, in.data(), out.data(), n,
         mask_width, boundary);
  expect_matches(out, want, 0.0, n);
}

INSTANTIATE_TEST_SUITE_P(Sizes, Conv1dReference, testing::ValuesIn(conv1d_cases()), conv1d_name);

// A ghost element is 0 under boundary 0 and the edge element under boundary 1: a hand-checked case.
TEST(Conv1dReferenceByHand, ZeroAndClampedGhosts) {
  const std::vector<float> in = {1, 2, 3, 4};
  const float taps[3] = {1, 10, 100};
  std::copy(std::begin(taps), std::end(taps), ref_conv1d::mask);
  for (int boundary : {0, 1}) {
    std::vector<double> out = poisoned(4);
    launch(dim3(1), dim3(256), ref_conv1d::conv1d_reference, in.data(), out.data(), 4, 3, boundary);
    // out[i] = in[i-1] + 10 in[i] + 100 in[i+1]
    const std::vector<double> want =
        boundary == 0 ? std::vector<double>{210, 321, 432, 43} : std::vector<double>{211, 321, 432, 443};
    expect_matches(out, want, 0.0, 4);
  }
}

// ---------------------------------------------------------------------------------------------------------
// conv2d_naive/conv2d_reference.cu; launch geometry of the conv2d families' "reference" block: block 16 x 16,
// grid ceil(W / 16) x ceil(H / 16).

struct Conv2dCase {
  int H, W, mask_width, boundary;
};
void PrintTo(const Conv2dCase& c, std::ostream* os) {
  *os << "H " << c.H << ", W " << c.W << ", mask_width " << c.mask_width << ", boundary " << c.boundary;
}

std::vector<Conv2dCase> conv2d_cases() {
  std::vector<Conv2dCase> cases;
  for (auto [H, W] :
       {std::pair{1, 1}, std::pair{5, 3}, std::pair{3, 5}, std::pair{37, 29}, std::pair{17, 33}})
    for (int mask_width : {1, 3, 15})
      for (int boundary : {0, 1}) cases.push_back({H, W, mask_width, boundary});
  return cases;
}

std::string conv2d_name(const testing::TestParamInfo<Conv2dCase>& info) {
  return std::to_string(info.param.H) + "x" + std::to_string(info.param.W) + "_mask" +
         std::to_string(info.param.mask_width) + "_boundary" + std::to_string(info.param.boundary);
}

class Conv2dReference : public testing::TestWithParam<Conv2dCase> {};

TEST_P(Conv2dReference, EveryElementMatchesFloat64) {
  const auto [H, W, mask_width, boundary] = GetParam();
  std::mt19937 rng(3000 + H * 11 + W * 3 + mask_width * 5 + boundary);
  const std::vector<float> in = random_floats(size_t(H) * W, rng);
  const std::vector<float> taps = random_floats(size_t(mask_width) * mask_width, rng);
  std::fill(std::begin(ref_conv2d::mask), std::end(ref_conv2d::mask),
            std::numeric_limits<float>::quiet_NaN());
  std::copy(taps.begin(), taps.end(), ref_conv2d::mask);

  const int r = mask_width / 2;
  std::vector<double> want(size_t(H) * W);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      double acc = 0.0;
      for (int dy = 0; dy < mask_width; ++dy)
        for (int dx = 0; dx < mask_width; ++dx) {
          int yy = y - r + dy, xx = x - r + dx;
          const bool ghost = yy < 0 || yy >= H || xx < 0 || xx >= W;
          if (ghost && boundary == 0) continue;  // a ghost pixel is 0
          yy = std::clamp(yy, 0, H - 1);
          xx = std::clamp(xx, 0, W - 1);
          acc += double(taps[size_t(dy) * mask_width + dx]) * double(in[size_t(yy) * W + xx]);
        }
      want[size_t(y) * W + x] = acc;
    }

  std::vector<double> out = poisoned(want.size());
  launch(dim3(ceil_div(W, 16), ceil_div(H, 16)), dim3(16, 16), ref_conv2d::conv2d_reference, in.data(),
         out.data(), H, W, mask_width, boundary);
  expect_matches(out, want, 0.0, W);
}

INSTANTIATE_TEST_SUITE_P(Sizes, Conv2dReference, testing::ValuesIn(conv2d_cases()), conv2d_name);

// ---------------------------------------------------------------------------------------------------------
// transpose_naive/transpose_reference.cu; launch geometry of transpose_naive/family.json's "reference" block:
// block 16 x 16, grid ceil(cols / 16) x min(ceil(rows / 16), 65535).

struct TransposeCase {
  int rows, cols;
};
void PrintTo(const TransposeCase& c, std::ostream* os) { *os << "rows " << c.rows << ", cols " << c.cols; }

std::string transpose_name(const testing::TestParamInfo<TransposeCase>& info) {
  return std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols);
}

// out (cols x rows) with out[c][r] = in[r][c], and the guard past its end untouched.
void check_transpose(const std::vector<float>& in, const std::vector<double>& out, int rows, int cols) {
  std::vector<double> want(size_t(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) want[size_t(c) * rows + r] = double(in[size_t(r) * cols + c]);
  expect_matches(out, want, 0.0, rows);
}

class TransposeReference : public testing::TestWithParam<TransposeCase> {};

TEST_P(TransposeReference, EveryElementMatches) {
  const auto [rows, cols] = GetParam();
  std::mt19937 rng(4000 + rows * 7 + cols);
  const std::vector<float> in = random_floats(size_t(rows) * cols, rng);
  std::vector<double> out = poisoned(in.size());
  const unsigned int grid_y = std::min(ceil_div(rows, 16), 65535u);
  launch(dim3(ceil_div(cols, 16), grid_y), dim3(16, 16), ref_transpose::transpose_reference, in.data(),
         out.data(), rows, cols);
  check_transpose(in, out, rows, cols);
}

INSTANTIATE_TEST_SUITE_P(Sizes, TransposeReference,
                         testing::Values(TransposeCase{1, 1}, TransposeCase{37, 53}, TransposeCase{53, 37},
                                         TransposeCase{16, 17}, TransposeCase{1, 300}, TransposeCase{300, 1},
                                         TransposeCase{64, 64}),
                         transpose_name);

// Past 16 * 65535 rows the grid's height is capped and each thread steps down the rows by the grid's height.
// That many rows is too slow to emulate, so the same loop is run here on a grid far shorter than the matrix.
TEST(TransposeReferenceGridStride, RowsPastTheGridsHeight) {
  const int rows = 100, cols = 37;
  std::mt19937 rng(4100);
  const std::vector<float> in = random_floats(size_t(rows) * cols, rng);
  for (unsigned int grid_y : {1u, 3u}) {
    std::vector<double> out = poisoned(in.size());
    launch(dim3(ceil_div(cols, 16), grid_y), dim3(16, 16), ref_transpose::transpose_reference, in.data(),
           out.data(), rows, cols);
    check_transpose(in, out, rows, cols);
  }
}

// ---------------------------------------------------------------------------------------------------------
// histogram_u8/histogram_reference.cu; launch geometry of histogram_u8/family.json's "reference" block:
// block 256, grid min(ceil(n / 256), 4096). Its bins are "inout" with native outputs: they arrive holding
// the original counts (uint32 in [0, 1000]) and the reference adds to them.

enum class Bytes { uniform, one_value, low_and_high };

struct HistogramCase {
  long long n;
  Bytes bytes;
};
void PrintTo(const HistogramCase& c, std::ostream* os) { *os << "n " << c.n << ", bytes " << int(c.bytes); }

std::string histogram_name(const testing::TestParamInfo<HistogramCase>& info) {
  const char* bytes[] = {"uniform", "one_value", "low_and_high"};
  return "n" + std::to_string(info.param.n) + "_" + bytes[int(info.param.bytes)];
}

class HistogramReference : public testing::TestWithParam<HistogramCase> {};

TEST_P(HistogramReference, AddsEveryByteToItsBin) {
  const auto [n, kind] = GetParam();
  std::mt19937 rng(5000 + unsigned(n) + int(kind));
  std::uniform_int_distribution<int> byte(0, 255), count(0, 1000);
  std::vector<unsigned char> data(n);
  for (auto& d : data) {
    const int b = byte(rng);
    d = kind == Bytes::uniform ? b : kind == Bytes::one_value ? 201 : (b & 1 ? 255 : 0);
  }
  constexpr unsigned int kSentinel = 0xDEADBEEFu;
  std::vector<unsigned int> bins(256 + kGuard, kSentinel);
  for (int b = 0; b < 256; ++b) bins[b] = count(rng);

  std::vector<unsigned long long> want(256);
  for (int b = 0; b < 256; ++b) want[b] = bins[b];
  for (unsigned char d : data) ++want[d];

  const unsigned int grid = std::min(ceil_div(n, 256), 4096u);
  launch(dim3(grid), dim3(256), ref_histogram::histogram_reference, data.data(), bins.data(), n);
  size_t bad = 0;
  for (int b = 0; b < 256; ++b) {
    if (bins[b] == want[b]) continue;
    if (bad++ < 5) ADD_FAILURE() << "bin " << b << ": got " << bins[b] << ", want " << want[b];
  }
  EXPECT_EQ(bad, 0u) << "bins that differ";
  for (size_t i = 256; i < bins.size(); ++i) ASSERT_EQ(bins[i], kSentinel) << "bin " << i << " written";
}

INSTANTIATE_TEST_SUITE_P(Sizes, HistogramReference,
                         testing::Values(HistogramCase{1, Bytes::uniform}, HistogramCase{255, Bytes::uniform},
                                         HistogramCase{257, Bytes::uniform},
                                         HistogramCase{100000, Bytes::uniform},
                                         // past 256 * 4096 bytes, so that the capped grid strides
                                         HistogramCase{256 * 4096 + 1001, Bytes::uniform},
                                         HistogramCase{3000, Bytes::one_value},
                                         HistogramCase{3001, Bytes::low_and_high}),
                         histogram_name);

// ---------------------------------------------------------------------------------------------------------
// softmax_half/softmax_reference.cu; launch geometry of softmax_half/family.json's "reference" block:
// block 128, grid ceil(rows / 128). Its x is "inout" with double outputs: it arrives holding the half inputs
// (uniform in [-4, 4)) converted to double, and the reference overwrites each row with its softmax.

struct SoftmaxCase {
  int rows, cols;
  float lo, hi;  // input range
};
void PrintTo(const SoftmaxCase& c, std::ostream* os) {
  *os << "rows " << c.rows << ", cols " << c.cols << ", inputs in [" << c.lo << ", " << c.hi << ")";
}

std::string softmax_name(const testing::TestParamInfo<SoftmaxCase>& info) {
  return std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols) +
         (info.param.lo == info.param.hi ? "_constant"
          : info.param.hi > 1000         ? "_large"
                                         : "");
}

class SoftmaxReference : public testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxReference, EveryElementMatchesFloat64) {
  const auto [rows, cols, lo, hi] = GetParam();
  std::mt19937 rng(6000 + rows * 3 + cols);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<double> x(size_t(rows) * cols + kGuard, kNaN);
  for (size_t i = 0; i < size_t(rows) * cols; ++i)
    x[i] = double(__half2float(__float2half(lo == hi ? lo : dist(rng))));

  std::vector<double> want(size_t(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    const double* row = x.data() + size_t(r) * cols;
    const double m = *std::max_element(row, row + cols);
    double sum = 0.0;
    for (int c = 0; c < cols; ++c) sum += std::exp(row[c] - m);
    for (int c = 0; c < cols; ++c) want[size_t(r) * cols + c] = std::exp(row[c] - m) / sum;
  }

  launch(dim3(ceil_div(rows, 128)), dim3(128), ref_softmax::softmax_reference, x.data(), rows, cols);
  expect_matches(x, want, 1e-12, cols);
  for (int r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (int c = 0; c < cols; ++c) sum += x[size_t(r) * cols + c];
    ASSERT_NEAR(sum, 1.0, 1e-12) << "row " << r;
  }
  if (lo == hi) {  // equal inputs: every output exactly 1 / cols
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(x[i], 1.0 / cols) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, SoftmaxReference,
                         testing::Values(SoftmaxCase{1, 1, -4, 4}, SoftmaxCase{3, 7, -4, 4},
                                         SoftmaxCase{129, 5, -4, 4}, SoftmaxCase{2, 1000, -4, 4},
                                         SoftmaxCase{300, 33, -4, 4}, SoftmaxCase{5, 64, 4, 4},
                                         SoftmaxCase{130, 2, -4, -4},
                                         // inputs near the largest halves: exp overflows without the row max
                                         SoftmaxCase{4, 50, -65000, 65000}),
                         softmax_name);

// Rows whose largest element comes last or first, far above the rest: exact one-hot outputs.
TEST(SoftmaxReferenceByHand, LargestElementAnywhereInTheRow) {
  std::vector<double> x = {0, 0, 1000, 1000, -1000, 0, 0, 0, 0};
  x.resize(x.size() + kGuard, kNaN);
  launch(dim3(1), dim3(128), ref_softmax::softmax_reference, x.data(), 3, 3);
  expect_matches(x, {0, 0, 1, 1, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 0.0, 3);
}

// ---------------------------------------------------------------------------------------------------------
// The launch geometry and outputs used above are those the families' "reference" blocks declare, and every
// family passes its reference kernel the parameters that kernel takes, in order and of the right types.

// A C type's name, for the reference kernels' parameter types.
template <class T>
std::string type_name() {
  if constexpr (std::is_pointer_v<T>) {
    using P = std::remove_pointer_t<T>;
    return (std::is_const_v<P> ? "const " : "") + type_name<std::remove_const_t<P>>() + "*";
  } else if constexpr (std::is_same_v<T, float>) {
    return "float";
  } else if constexpr (std::is_same_v<T, double>) {
    return "double";
  } else if constexpr (std::is_same_v<T, __half>) {
    return "__half";
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return "__nv_bfloat16";
  } else if constexpr (std::is_same_v<T, signed char>) {
    return "signed char";
  } else if constexpr (std::is_same_v<T, unsigned char>) {
    return "unsigned char";
  } else if constexpr (std::is_same_v<T, int>) {
    return "int";
  } else if constexpr (std::is_same_v<T, unsigned int>) {
    return "unsigned int";
  } else if constexpr (std::is_same_v<T, long long>) {
    return "long long";
  } else {
    static_assert(!sizeof(T), "a parameter type no family argument has");
  }
}

template <class... P>
std::vector<std::string> parameter_types(void (*)(P...)) {
  return {type_name<P>()...};
}

struct DeclaredReference {
  const char* family;  // the folder that holds the kernel
  const char* kernel;
  const char* name;
  std::vector<std::string> block, grid;
  const char* outputs;
  std::vector<std::string> parameters;  // the kernel's parameter types, as compiled above
};
void PrintTo(const DeclaredReference& r, std::ostream* os) { *os << r.family << "/" << r.kernel; }

const std::vector<DeclaredReference>& declared_references() {
  static const std::vector<DeclaredReference> all = {
      {"gemm_naive",
       "gemm_reference.cu",
       "gemm_reference",
       {"16", "16"},
       {"ceil_div(N, 16)", "ceil_div(M, 16)"},
       "double",
       parameter_types(ref_gemm::gemm_reference)},
      {"gemm_bf16_wgmma",
       "gemm_abt_reference.cu",
       "gemm_abt_reference_bf16",
       {"16", "16"},
       {"ceil_div(N, 16)", "ceil_div(M, 16)"},
       "double",
       parameter_types(ref_gemm_abt::gemm_abt_reference_bf16)},
      {"gemm_bf16_wgmma_ab",
       "gemm_ab_reference.cu",
       "gemm_ab_reference_bf16",
       {"16", "16"},
       {"ceil_div(N, 16)", "ceil_div(M, 16)"},
       "double",
       parameter_types(ref_gemm_ab::gemm_ab_reference_bf16)},
      {"conv1d_naive",
       "conv1d_reference.cu",
       "conv1d_reference",
       {"256"},
       {"ceil_div(n, 256)"},
       "double",
       parameter_types(ref_conv1d::conv1d_reference)},
      {"conv2d_naive",
       "conv2d_reference.cu",
       "conv2d_reference",
       {"16", "16"},
       {"ceil_div(W, 16)", "ceil_div(H, 16)"},
       "double",
       parameter_types(ref_conv2d::conv2d_reference)},
      {"transpose_naive",
       "transpose_reference.cu",
       "transpose_reference",
       {"16", "16"},
       {"ceil_div(cols, 16)", "min(ceil_div(rows, 16), 65535)"},
       "double",
       parameter_types(ref_transpose::transpose_reference)},
      {"histogram_u8",
       "histogram_reference.cu",
       "histogram_reference",
       {"256"},
       {"min(ceil_div(n, 256), 4096)"},
       "native",
       parameter_types(ref_histogram::histogram_reference)},
      {"softmax_half",
       "softmax_reference.cu",
       "softmax_reference",
       {"128"},
       {"ceil_div(rows, 128)"},
       "double",
       parameter_types(ref_softmax::softmax_reference)},
      {"spmv_csr",
       "spmv_reference.cu",
       "spmv_reference",
       {"128"},
       {"ceil_div(rows, 128)"},
       "double",
       parameter_types(ref_spmv::spmv_reference)},
      {"pnpoly",
       "pnpoly_reference.cu",
       "pnpoly_reference",
       {"256"},
       {"ceil_div(n, 256)"},
       "native",
       parameter_types(ref_pnpoly::pnpoly_reference)},
  };
  return all;
}

// The other kernels of a reference file that families name with "from" and "name": their parameter types.
const std::map<std::string, std::vector<std::string>>& other_reference_kernels() {
  static const std::map<std::string, std::vector<std::string>> all = {
      {"gemm_abt_reference_f16", parameter_types(ref_gemm_abt::gemm_abt_reference_f16)},
      {"gemm_abt_reference_f32", parameter_types(ref_gemm_abt::gemm_abt_reference_f32)},
      {"gemm_ab_reference_f16", parameter_types(ref_gemm_ab::gemm_ab_reference_f16)},
  };
  return all;
}

nlohmann::json read_family(const std::string& family) {
  const auto path = tiletune::test::templates_dir() / family / "family.json";
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path.string());
  return nlohmann::json::parse(file);
}

std::vector<std::string> without_spaces(const nlohmann::json& array) {
  std::vector<std::string> out;
  for (const auto& e : array) {
    std::string s = e.is_string() ? e.get<std::string>() : e.dump();
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
    out.push_back(s);
  }
  return out;
}

class ReferenceDeclaration : public testing::TestWithParam<DeclaredReference> {};

TEST_P(ReferenceDeclaration, GeometryAndOutputsAreThoseTestedHere) {
  const DeclaredReference& want = GetParam();
  const nlohmann::json family = read_family(want.family);
  const nlohmann::json reference = family.value("reference", nlohmann::json::object());
  if (!reference.contains("kernel")) GTEST_SKIP() << want.family << " declares no reference kernel yet";
  EXPECT_EQ(reference["kernel"], want.kernel);
  const std::string stem = std::string(want.kernel).substr(0, std::string(want.kernel).find('.'));
  EXPECT_EQ(reference.value("name", stem), want.name);
  EXPECT_EQ(without_spaces(reference["block"]), without_spaces(nlohmann::json(want.block)));
  EXPECT_EQ(without_spaces(reference["grid"]), without_spaces(nlohmann::json(want.grid)));
  EXPECT_EQ(reference.value("outputs", "double"), want.outputs);
}

INSTANTIATE_TEST_SUITE_P(Families, ReferenceDeclaration, testing::ValuesIn(declared_references()),
                         [](const testing::TestParamInfo<DeclaredReference>& info) {
                           return std::string(info.param.family);
                         });

// The C type a reference kernel receives for one of its "arguments" entries (spec: input buffers in their own
// type, floating outputs as double under "outputs": "double", scalars as they are).
std::string passed_type(const nlohmann::json& family, const nlohmann::json& entry,
                        const std::string& outputs) {
  auto scalar = [](const std::string& type) { return type == "long" ? std::string("long long") : type; };
  if (entry.is_object())
    return scalar(entry.value("scalar", "?"));  // a literal {"scalar": ..., "value": ...}
  for (const auto& a : family["arguments"]) {
    if (a["name"] != entry) continue;
    if (a.contains("scalar")) return scalar(a["scalar"]);
    const std::map<std::string, std::string> c_types = {
        {"float", "float"},      {"double", "double"},
        {"half", "__half"},      {"bfloat16", "__nv_bfloat16"},
        {"int8", "signed char"}, {"uint8", "unsigned char"},
        {"int32", "int"},        {"uint32", "unsigned int"},
        {"int64", "long long"}};
    const std::string type = a["buffer"];
    const bool floating = type == "float" || type == "double" || type == "half" || type == "bfloat16";
    const auto it = c_types.find(type);
    const std::string c_type = it == c_types.end() ? "?" + type : it->second;
    if (a.value("role", "input") == "input") return "const " + c_type + "*";
    return (outputs == "double" && floating ? "double" : c_type) + "*";
  }
  return "? no argument " + entry.dump();
}

TEST(ReferenceArguments, EveryFamilyPassesWhatItsReferenceKernelTakes) {
  std::map<std::string, const DeclaredReference*> tested;
  for (const auto& d : declared_references()) tested[d.family] = &d;
  int checked = 0;
  for (const auto& dir : std::filesystem::directory_iterator(tiletune::test::templates_dir())) {
    if (!std::filesystem::exists(dir.path() / "family.json")) continue;
    const std::string name = dir.path().filename().string();
    SCOPED_TRACE(name + "/family.json");
    const nlohmann::json family = read_family(name);
    const nlohmann::json reference = family.value("reference", nlohmann::json::object());
    const std::string owner = reference.contains("kernel") ? name : reference.value("from", "");
    if (owner.empty()) continue;  // runs another family's configuration, or not converted yet
    const nlohmann::json owner_reference = read_family(owner)["reference"];
    if (!owner_reference.contains("kernel")) continue;  // not converted yet
    const auto it = tested.find(owner);
    if (it == tested.end()) {
      ADD_FAILURE() << owner << "/" << owner_reference["kernel"] << " has no CPU test in this file";
      continue;
    }
    // A family may name another kernel of the owner's file.
    const std::string kernel = reference.value("name", std::string(it->second->name));
    const std::vector<std::string>* parameters = &it->second->parameters;
    if (kernel != it->second->name) {
      const auto other = other_reference_kernels().find(kernel);
      if (other == other_reference_kernels().end()) {
        ADD_FAILURE() << owner << "/" << owner_reference["kernel"] << ": kernel " << kernel
                      << " has no CPU test in this file";
        continue;
      }
      parameters = &other->second;
    }
    nlohmann::json entries = reference.contains("arguments")         ? reference["arguments"]
                             : owner_reference.contains("arguments") ? owner_reference["arguments"]
                                                                     : nlohmann::json::array();
    if (entries.empty())  // the family's arguments but its tensor maps, which reference kernels never get
      for (const auto& a : family["arguments"])
        if (!a.contains("tensor_map")) entries.push_back(a["name"]);
    std::vector<std::string> passed;
    for (const auto& e : entries)
      passed.push_back(passed_type(family, e, owner_reference.value("outputs", "double")));
    EXPECT_EQ(passed, *parameters) << "what " << name << " passes to " << kernel;
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no family.json declares a reference kernel";
}

// ---------------------------------------------------------------------------------------------------------
// The emulation itself.

namespace emu_probe {
// Records, for each thread of a 3D launch, how often it ran and its global linear index.
__global__ void visit(unsigned int* count, unsigned int* order, unsigned int* next) {
  const unsigned int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
                     z = blockIdx.z * blockDim.z + threadIdx.z;
  const unsigned int width = gridDim.x * blockDim.x, height = gridDim.y * blockDim.y;
  const unsigned int i = (z * height + y) * width + x;
  atomicAdd(&count[i], 1u);
  order[i] = atomicAdd(next, 1u);
}
}  // namespace emu_probe

TEST(KernelEmulation, RunsEveryThreadOfEveryBlockOnce) {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  const size_t threads = 3 * 2 * 2 * 4 * 3 * 2;
  std::vector<unsigned int> count(threads, 0), order(threads, 0);
  unsigned int next = 0;
  launch(grid, block, emu_probe::visit, count.data(), order.data(), &next);
  EXPECT_EQ(next, threads);
  for (size_t i = 0; i < threads; ++i) EXPECT_EQ(count[i], 1u) << "thread " << i;
  // Block (0, 0, 0) runs first, its threads x fastest.
  EXPECT_EQ(order[0], 0u);
  EXPECT_EQ(order[1], 1u);
  EXPECT_EQ(order[3 * 4], 4u);  // x = 0, y = 1 of block 0 follows its first row of 4 threads
}

TEST(KernelEmulation, AtomicAddReturnsTheOldValue) {
  int i = -3;
  unsigned int u = 4294967295u;
  unsigned long long ull = 5;
  float f = 1.5f;
  double d = 0.25;
  EXPECT_EQ(atomicAdd(&i, 5), -3);
  EXPECT_EQ(i, 2);
  EXPECT_EQ(atomicAdd(&u, 2u), 4294967295u);
  EXPECT_EQ(u, 1u);  // wraps around
  EXPECT_EQ(atomicAdd(&ull, 7ull), 5ull);
  EXPECT_EQ(ull, 12ull);
  EXPECT_EQ(atomicAdd(&f, 0.5f), 1.5f);
  EXPECT_EQ(f, 2.0f);
  EXPECT_EQ(atomicAdd(&d, 0.5), 0.25);
  EXPECT_EQ(d, 0.75);
}

TEST(KernelEmulation, RejectsLaunchesAGpuWouldRefuse) {
  std::vector<double> out(1);
  const float in = 0.0f;
  auto run = [&](dim3 grid, dim3 block) {
    launch(grid, block, ref_conv1d::conv1d_reference, &in, out.data(), 1, 1, 0);
  };
  EXPECT_THROW(run(dim3(1), dim3(1025)), std::invalid_argument);
  EXPECT_THROW(run(dim3(1), dim3(64, 32)), std::invalid_argument);
  EXPECT_THROW(run(dim3(1, 65536), dim3(1)), std::invalid_argument);
  EXPECT_THROW(run(dim3(0), dim3(32)), std::invalid_argument);
  EXPECT_NO_THROW(run(dim3(1), dim3(1024)));
}

TEST(KernelEmulation, HalfAndBfloat16ConvertOnTheHost) {
  const __half h = __float2half(1.5f);
  const __nv_bfloat16 b = __float2bfloat16(-2.0f);
  EXPECT_EQ(__half2float(h), 1.5f);
  EXPECT_EQ(__bfloat162float(b), -2.0f);
}

}  // namespace
