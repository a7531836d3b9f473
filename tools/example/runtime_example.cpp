// An application that launches the kernel a tiletune sweep measured: the best gemm_regtile configuration
// for this GPU and problem, from the database the sweep wrote (compiled as the sweep compiled it, or taken
// from the compile cache) or from a bundle (nothing compiled, no NVRTC needed).
//   tiletune sweep --family gemm_regtile --size 4096x4096x4096 --db app.db      (once per GPU)
//   tiletune_runtime_example --db app.db 4096x4096x4096                          (every run after)
//   tiletune_runtime_example --bundle app_bundle 4096x4096x4096
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tiletune/runtime.hpp"

namespace {

int usage(const char* self) {
  std::fprintf(stderr, "usage: %s (--db FILE | --bundle DIR) [--family FAMILY] MxNxK\n", self);
  return 2;
}

// Exits with the CUDA error in one line.
void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  tiletune::runtime::RuntimeOptions options;
  std::string family = "gemm_regtile", size;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--db" || a == "--bundle" || a == "--family") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--db") options.database = v;
      if (a == "--bundle") options.bundle = v;
      if (a == "--family") family = v;
    } else if (size.empty() && a[0] != '-') {
      size = a;
    } else {
      return usage(argv[0]);
    }
  }
  if (size.empty()) return usage(argv[0]);
  long m = 0, n = 0, k = 0;
  try {
    const auto dims = tiletune::parse_size_text(size);
    if (dims.size() != 3) return usage(argv[0]);
    m = dims[0], n = dims[1], k = dims[2];
  } catch (const std::invalid_argument&) {
    return usage(argv[0]);
  }

  check(cudaFree(nullptr), "CUDA context");  // created up front, so that the load time below is the kernel's
  tiletune::runtime::Runtime runtime(options);
  try {
    const tiletune::runtime::Kernel& gemm = runtime.kernel(family, size);
    std::printf("%s %s: %s\n", family.c_str(), size.c_str(), gemm.message().c_str());
    std::printf("configuration: %s\n", tiletune::params_to_text(gemm.params()).c_str());
    std::printf("loaded from %s in %.1f ms; grid %ux%ux%u, block %u, %zu bytes of dynamic shared memory\n",
                gemm.source().c_str(), gemm.load_ms(), gemm.grid()[0], gemm.grid()[1], gemm.grid()[2],
                gemm.block()[0], gemm.dynamic_smem());

    // The application's own data: C = A B, row-major.
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
    for (auto& x : a) x = dist(rng);
    for (auto& x : b) x = dist(rng);
    float *da = nullptr, *db = nullptr, *dc = nullptr;
    check(cudaMalloc(reinterpret_cast<void**>(&da), a.size() * 4), "cudaMalloc");
    check(cudaMalloc(reinterpret_cast<void**>(&db), b.size() * 4), "cudaMalloc");
    check(cudaMalloc(reinterpret_cast<void**>(&dc), static_cast<std::size_t>(m * n) * 4), "cudaMalloc");
    check(cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice), "copy A");
    check(cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice), "copy B");
    check(cudaMemset(dc, 0xff, static_cast<std::size_t>(m * n) * 4), "poison C");
    cudaStream_t stream;
    check(cudaStreamCreate(&stream), "stream");

    gemm.launch({{"A", da}, {"B", db}, {"C", dc}}, stream);
    check(cudaStreamSynchronize(stream), "first launch");
    std::vector<float> c(static_cast<std::size_t>(m * n));
    check(cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost), "copy C");
    // 1,000 elements (or all, when fewer) against a float64 dot product on the host.
    long wrong = 0, checked = 0;
    std::uniform_int_distribution<long> row(0, m - 1), col(0, n - 1);
    for (long s = 0; s < std::min(1000L, m * n); ++s, ++checked) {
      const long i = m * n <= 1000 ? s / n : row(rng), j = m * n <= 1000 ? s % n : col(rng);
      double sum = 0, scale = 0;
      for (long p = 0; p < k; ++p) {
        sum += static_cast<double>(a[i * k + p]) * b[p * n + j];
        scale += std::fabs(static_cast<double>(a[i * k + p]) * b[p * n + j]);
      }
      if (!(std::fabs(c[static_cast<std::size_t>(i * n + j)] - sum) <= 1e-4 * std::max(scale, 1.0))) ++wrong;
    }
    std::printf("checked %ld elements of C against the host: %ld wrong\n", checked, wrong);

    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    std::vector<float> times;
    for (int r = 0; r < 30; ++r) {
      cudaEventRecord(start, stream);
      gemm.launch({{"A", da}, {"B", db}, {"C", dc}}, stream);
      cudaEventRecord(stop, stream);
      check(cudaEventSynchronize(stop), "timed launch");
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    std::printf("median of 30 launches %.4f ms (%.0f GFLOP/s)", median, 2.0 * m * n * k / median / 1e6);
    if (gemm.stored_median_ms())
      std::printf("; the sweep measured %.4f ms (ratio %.3f)", *gemm.stored_median_ms(),
                  median / *gemm.stored_median_ms());
    std::printf("\n");
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    return wrong == 0 ? 0 : 1;
  } catch (const tiletune::runtime::RuntimeError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
