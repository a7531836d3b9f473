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
#include <optional>
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

// What to run: the family, the problem MxNxK and where the tuned configuration comes from.
struct Request {
  tiletune::runtime::RuntimeOptions options;
  std::string family = "gemm_regtile", size;
  long m = 0, n = 0, k = 0;
};

// --db FILE or --bundle DIR, --family NAME, and the size; nullopt where the command line is not that.
std::optional<Request> read_request(int argc, char** argv) {
  Request r;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--db" || a == "--bundle" || a == "--family") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--db") r.options.database = v;
      if (a == "--bundle") r.options.bundle = v;
      if (a == "--family") r.family = v;
    } else if (r.size.empty() && a[0] != '-') {
      r.size = a;
    } else {
      return std::nullopt;
    }
  }
  if (r.size.empty()) return std::nullopt;
  try {
    const auto dims = tiletune::parse_size_text(r.size);
    if (dims.size() != 3) return std::nullopt;
    r.m = dims[0], r.n = dims[1], r.k = dims[2];
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  return r;
}

void print_kernel(const Request& r, const tiletune::runtime::Kernel& gemm) {
  std::printf("%s %s: %s\n", r.family.c_str(), r.size.c_str(), gemm.message().c_str());
  std::printf("configuration: %s\n", tiletune::params_to_text(gemm.params()).c_str());
  std::printf("loaded from %s in %.1f ms; grid %ux%ux%u, block %u, %zu bytes of dynamic shared memory\n",
              gemm.source().c_str(), gemm.load_ms(), gemm.grid()[0], gemm.grid()[1], gemm.grid()[2],
              gemm.block()[0], gemm.dynamic_smem());
}

// The application's own data: C = A B, row-major, A and B random.
struct Inputs {
  std::vector<float> a, b;
};

Inputs random_inputs(const Request& r, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1, 1);
  Inputs in{std::vector<float>(static_cast<std::size_t>(r.m * r.k)),
            std::vector<float>(static_cast<std::size_t>(r.k * r.n))};
  for (auto& x : in.a) x = dist(rng);
  for (auto& x : in.b) x = dist(rng);
  return in;
}

struct DeviceMatrices {
  float *a = nullptr, *b = nullptr, *c = nullptr;
};

// A and B copied to the GPU; C filled with NaNs, so that an element the kernel does not write shows.
DeviceMatrices upload(const Request& r, const Inputs& in) {
  DeviceMatrices d;
  const auto c_bytes = static_cast<std::size_t>(r.m * r.n) * 4;
  check(cudaMalloc(reinterpret_cast<void**>(&d.a), in.a.size() * 4), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&d.b), in.b.size() * 4), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&d.c), c_bytes), "cudaMalloc");
  check(cudaMemcpy(d.a, in.a.data(), in.a.size() * 4, cudaMemcpyHostToDevice), "copy A");
  check(cudaMemcpy(d.b, in.b.data(), in.b.size() * 4, cudaMemcpyHostToDevice), "copy B");
  check(cudaMemset(d.c, 0xff, c_bytes), "poison C");
  return d;
}

void launch(const tiletune::runtime::Kernel& gemm, const DeviceMatrices& d, cudaStream_t stream) {
  gemm.launch({{"A", d.a}, {"B", d.b}, {"C", d.c}}, stream);
}

struct CheckedElements {
  long checked = 0, wrong = 0;
};

// 1,000 elements of C (or all, when fewer) against a float64 dot product on the host.
CheckedElements check_on_host(const Request& r, const Inputs& in, const DeviceMatrices& d,
                              std::mt19937& rng) {
  const long m = r.m, n = r.n, k = r.k;
  std::vector<float> c(static_cast<std::size_t>(m * n));
  check(cudaMemcpy(c.data(), d.c, c.size() * 4, cudaMemcpyDeviceToHost), "copy C");
  CheckedElements result;
  std::uniform_int_distribution<long> row(0, m - 1), col(0, n - 1);
  for (long s = 0; s < std::min(1000L, m * n); ++s, ++result.checked) {
    const long i = m * n <= 1000 ? s / n : row(rng), j = m * n <= 1000 ? s % n : col(rng);
    double sum = 0, scale = 0;
    for (long p = 0; p < k; ++p) {
      sum += static_cast<double>(in.a[i * k + p]) * in.b[p * n + j];
      scale += std::fabs(static_cast<double>(in.a[i * k + p]) * in.b[p * n + j]);
    }
    if (!(std::fabs(c[static_cast<std::size_t>(i * n + j)] - sum) <= 1e-4 * std::max(scale, 1.0)))
      ++result.wrong;
  }
  return result;
}

// The median of `runs` launches, each timed alone between two events.
double median_launch_ms(const tiletune::runtime::Kernel& gemm, const DeviceMatrices& d, cudaStream_t stream,
                        int runs) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int r = 0; r < runs; ++r) {
    cudaEventRecord(start, stream);
    launch(gemm, d, stream);
    cudaEventRecord(stop, stream);
    check(cudaEventSynchronize(stop), "timed launch");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void print_timing(const Request& r, const tiletune::runtime::Kernel& gemm, double median) {
  std::printf("median of 30 launches %.4f ms (%.0f GFLOP/s)", median, 2.0 * r.m * r.n * r.k / median / 1e6);
  if (gemm.stored_median_ms())
    std::printf("; the sweep measured %.4f ms (ratio %.3f)", *gemm.stored_median_ms(),
                median / *gemm.stored_median_ms());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Request> request = read_request(argc, argv);
  if (!request) return usage(argv[0]);
  const Request& r = *request;

  check(cudaFree(nullptr), "CUDA context");  // created up front, so that the load time below is the kernel's
  tiletune::runtime::Runtime runtime(r.options);
  try {
    const tiletune::runtime::Kernel& gemm = runtime.kernel(r.family, r.size);
    print_kernel(r, gemm);

    std::mt19937 rng(7);
    const Inputs inputs = random_inputs(r, rng);
    const DeviceMatrices d = upload(r, inputs);
    cudaStream_t stream;
    check(cudaStreamCreate(&stream), "stream");

    launch(gemm, d, stream);
    check(cudaStreamSynchronize(stream), "first launch");
    const CheckedElements result = check_on_host(r, inputs, d, rng);
    std::printf("checked %ld elements of C against the host: %ld wrong\n", result.checked, result.wrong);

    print_timing(r, gemm, median_launch_ms(gemm, d, stream, 30));
    cudaFree(d.a);
    cudaFree(d.b);
    cudaFree(d.c);
    return result.wrong == 0 ? 0 : 1;
  } catch (const tiletune::runtime::RuntimeError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
