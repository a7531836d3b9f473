// How the kernel an application launches through tiletune::runtime compares with what the sweep measured
// and with the vendor's baseline, in one process: launches through the runtime interleaved with cuBLAS SGEMM
// (GEMM families, buffers A, B, C) or the device-to-device copy (1D convolutions, buffers in, out), each
// timed alone between events after an L2 flush, as the sweep times; the time from asking for the kernel to
// its first launch's end; and the host time of one launch through the runtime against a bare
// cudaLaunchKernel of the same kernel, on a small problem of the family (500 launches, fewer than the
// launch queue holds, so that the host's time is measured and not the GPU's).
//   tiletune_runtime_bench (--db FILE | --bundle DIR) --family F --size S [--args A] [--reps N] [--json OUT]
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tiletune/runtime.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

// cuBLAS, opened at run time as the tuner's worker opens it.
struct Cublas {
  using Create = int (*)(void**);
  using SetStream = int (*)(void*, cudaStream_t);
  using Sgemm = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                        const float*, float*, int);
  Create create = nullptr;
  SetStream set_stream = nullptr;
  Sgemm sgemm = nullptr;
  void* handle = nullptr;
  bool open() {
    void* lib = nullptr;
    for (const char* name : {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13", "libcublas.so"})
      if ((lib = dlopen(name, RTLD_NOW)) != nullptr) break;
    if (!lib) return false;
    create = reinterpret_cast<Create>(dlsym(lib, "cublasCreate_v2"));
    set_stream = reinterpret_cast<SetStream>(dlsym(lib, "cublasSetStream_v2"));
    sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cublasSgemm_v2"));
    return create && set_stream && sgemm && create(&handle) == 0;
  }
};

struct Stats {
  double median = 0, p25 = 0, p75 = 0;
  double spread() const { return median > 0 ? (p75 - p25) / median : 0; }
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) { return v[static_cast<std::size_t>(q * (v.size() - 1) + 0.5)]; };
  return {at(0.5), at(0.25), at(0.75)};
}

std::string json_stats(const Stats& s) {
  char text[160];
  std::snprintf(text, sizeof text,
                "{\"median_ms\": %.6f, \"p25_ms\": %.6f, \"p75_ms\": %.6f, \"spread\": %.4f}", s.median,
                s.p25, s.p75, s.spread());
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  tiletune::runtime::RuntimeOptions options;
  std::string family, size, args, json_out;
  int reps = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--db")
      options.database = v;
    else if (a == "--bundle")
      options.bundle = v;
    else if (a == "--family")
      family = v;
    else if (a == "--size")
      size = v;
    else if (a == "--args")
      args = v;
    else if (a == "--reps")
      reps = std::max(5, std::atoi(v.c_str()));
    else if (a == "--json")
      json_out = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (family.empty() || size.empty()) {
    std::fprintf(stderr,
                 "usage: %s (--db FILE | --bundle DIR) --family F --size S [--args A] [--reps N] "
                 "[--json OUT]\n",
                 argv[0]);
    return 2;
  }
  auto t0 = Clock::now();
  check(cudaFree(nullptr), "CUDA context");
  const double context_ms = ms_since(t0);
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");

  tiletune::runtime::Runtime runtime(options);
  try {
    cudaDeviceProp props{};
    check(cudaGetDeviceProperties(&props, 0), "properties");
    t0 = Clock::now();
    const tiletune::runtime::Kernel& kernel = runtime.kernel(family, size, args);
    const double kernel_ms = ms_since(t0);
    std::map<std::string, void*> buffers;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::map<std::string, std::uint64_t> counts;
    for (const auto& b : kernel.buffer_info()) {
      void* p = nullptr;
      check(cudaMalloc(&p, b.count * b.element_bytes), "cudaMalloc");
      std::vector<float> host(b.count * b.element_bytes / 4);
      for (auto& x : host) x = b.type == "float" ? dist(rng) : 0.0f;
      check(cudaMemcpy(p, host.data(), host.size() * 4, cudaMemcpyHostToDevice), "fill");
      buffers[b.name] = p;
      counts[b.name] = b.count;
    }
    for (const auto& c : kernel.constant_info()) {
      std::vector<float> host(c.count);
      for (auto& x : host) x = dist(rng);
      kernel.set_constant(c.name, host.data(), host.size() * 4);
    }
    // A second runtime, as a fresh application would have: the time from asking to the first launch's end.
    tiletune::runtime::Runtime fresh(options);
    t0 = Clock::now();
    const tiletune::runtime::Kernel& first = fresh.kernel(family, size, args);
    for (const auto& c : first.constant_info()) {
      std::vector<float> host(c.count, 0.1f);
      first.set_constant(c.name, host.data(), host.size() * 4);
    }
    first.launch(buffers, stream);
    check(cudaStreamSynchronize(stream), "first launch");
    const double first_launch_ms = ms_since(t0);

    const bool gemm = buffers.count("A") && buffers.count("B") && buffers.count("C");
    const bool conv = buffers.count("in") && buffers.count("out");
    Cublas cublas;
    // The problem as the runtime read it (sizes, and arguments with the family's defaults filled in).
    const auto& dims = kernel.problem().dims;
    const long m = dims[0], n = gemm ? dims[1] : 0, k = gemm ? dims[2] : 0;
    std::string baseline = "none";
    if (gemm) {
      if (!cublas.open()) {
        std::fprintf(stderr, "cuBLAS cannot be opened\n");
        return 1;
      }
      cublas.set_stream(cublas.handle, stream);
      baseline = "cublas_sgemm";
    } else if (conv) {
      baseline = "d2d_copy";
    }
    const float one = 1, zero = 0;
    const auto run_baseline = [&] {
      if (gemm)  // row-major C = A B is column-major C^T = B^T A^T
        cublas.sgemm(cublas.handle, 0, 0, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &one,
                     static_cast<float*>(buffers["B"]), static_cast<int>(n),
                     static_cast<float*>(buffers["A"]), static_cast<int>(k), &zero,
                     static_cast<float*>(buffers["C"]), static_cast<int>(n));
      else if (conv)
        cudaMemcpyAsync(buffers["out"], buffers["in"], counts["in"] * 4, cudaMemcpyDeviceToDevice, stream);
    };

    // Warm-up, then runtime and baseline alternating, each alone between two events.
    for (int i = 0; i < 5; ++i) {
      kernel.launch(buffers, stream);
      run_baseline();
    }
    check(cudaStreamSynchronize(stream), "warm-up");
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    // Writing twice the L2 before each timed run: cold caches, and a GPU kept busy while the host enqueues.
    void* flush = nullptr;
    const std::size_t flush_bytes =
        std::max<std::size_t>(2 * static_cast<std::size_t>(props.l2CacheSize), 64 << 20);
    check(cudaMalloc(&flush, flush_bytes), "cudaMalloc");
    const auto timed = [&](auto&& fn) {
      cudaMemsetAsync(flush, 0, flush_bytes, stream);
      cudaEventRecord(e0, stream);
      fn();
      cudaEventRecord(e1, stream);
      check(cudaEventSynchronize(e1), "timed run");
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      return static_cast<double>(ms);
    };
    std::vector<double> rt_times, base_times;
    for (int r = 0; r < reps; ++r) {
      rt_times.push_back(timed([&] { kernel.launch(buffers, stream); }));
      if (baseline != "none") base_times.push_back(timed(run_baseline));
    }
    const Stats rt = stats(rt_times);
    const Stats base = baseline != "none" ? stats(base_times) : Stats{};

    // Host time of a launch: a bare cudaLaunchKernel of the same kernel, and the runtime's two launch calls,
    // each 2,000 times back to back (the kernel runs while the host queues the next).
    // Host time of a launch on a small problem of the family: a bare cudaLaunchKernel of the runtime's kernel
    // with the family's arguments (buffers, then the problem's int scalars), and the runtime's two launches.
    const std::string small_size = gemm ? "256x256x256" : "65536";
    const tiletune::runtime::Kernel& small = runtime.kernel(family, small_size, args);
    std::map<std::string, void*> small_buffers;
    std::vector<void*> ordered;
    for (const auto& info : small.buffer_info()) {
      void* p = nullptr;
      check(cudaMalloc(&p, info.count * info.element_bytes), "cudaMalloc");
      check(cudaMemset(p, 0, info.count * info.element_bytes), "cudaMemset");
      small_buffers[info.name] = p;
      ordered.push_back(p);
    }
    for (const auto& c : small.constant_info()) {
      std::vector<float> host(c.count, 0.1f);
      small.set_constant(c.name, host.data(), host.size() * 4);
    }
    const auto host_us = [&](auto&& fn) {
      check(cudaStreamSynchronize(stream), "sync");
      const auto start = Clock::now();
      for (int i = 0; i < 500; ++i) fn();
      const double us = ms_since(start) * 1000.0 / 500;
      check(cudaStreamSynchronize(stream), "sync");
      return us;
    };
    // The problem's int scalars in the families' order: GEMM's M, N, K; a 1D convolution's n, mask_width,
    // boundary.
    const tiletune::ProblemKey& sp = small.problem();
    std::vector<int> scalars;
    for (const auto d : sp.dims) scalars.push_back(static_cast<int>(d));
    if (conv)
      scalars = {scalars[0], static_cast<int>(sp.args.at("mask_width")),
                 static_cast<int>(sp.args.at("boundary"))};
    std::vector<void*> bare_args;
    for (auto& p : ordered) bare_args.push_back(&p);
    for (auto& v : scalars) bare_args.push_back(&v);
    const auto g = small.grid(), b = small.block();
    host_us([&] { small.launch(ordered, stream); });  // warm-up
    const double bare_us = host_us([&] {
      cudaLaunchKernel(reinterpret_cast<const void*>(small.handle()), dim3(g[0], g[1], g[2]),
                       dim3(b[0], b[1], b[2]), bare_args.data(), small.dynamic_smem(), stream);
    });
    const double vector_us = host_us([&] { small.launch(ordered, stream); });
    const double map_us = host_us([&] { small.launch(small_buffers, stream); });
    check(cudaGetLastError(), "bare launches");

    const double stored = kernel.stored_median_ms().value_or(0);
    std::printf("%s %s%s on %s: %s (%s)\n", family.c_str(), size.c_str(),
                args.empty() ? "" : (" " + args).c_str(), props.name,
                tiletune::params_to_text(kernel.params()).c_str(),
                kernel.match() == tiletune::Match::exact ? "exact" : kernel.message().c_str());
    std::printf("runtime launch median %.4f ms (spread %.3f), the sweep's median %.4f ms: ratio %.4f\n",
                rt.median, rt.spread(), stored, stored > 0 ? rt.median / stored : 0);
    if (baseline != "none")
      std::printf("%s median %.4f ms (spread %.3f): runtime / %s %.4f (baseline / runtime %.4f)\n",
                  baseline.c_str(), base.median, base.spread(), baseline.c_str(), rt.median / base.median,
                  base.median / rt.median);
    std::printf(
        "first launch from a fresh Runtime (%s): %.2f ms to the end of the first launch (loading %.2f ms); "
        "context %.1f ms, first kernel() %.2f ms\n",
        first.source().c_str(), first_launch_ms, first.load_ms(), context_ms, kernel_ms);
    std::printf(
        "host time per launch: bare cudaLaunchKernel %.2f us, Kernel::launch(vector) %.2f us, "
        "Kernel::launch(map) %.2f us\n",
        bare_us, vector_us, map_us);
    if (!json_out.empty()) {
      std::ofstream out(json_out);
      out << "{\"family\": \"" << family << "\", \"size\": \"" << size << "\", \"args\": \"" << args
          << "\", \"device\": \"" << props.name << "\", \"params\": \""
          << tiletune::params_to_text(kernel.params()) << "\", \"source\": \"" << first.source()
          << "\", \"reps\": " << reps << ", \"stored_median_ms\": " << stored
          << ", \"runtime\": " << json_stats(rt) << ", \"baseline\": \"" << baseline
          << "\", \"baseline_time\": " << json_stats(base)
          << ", \"runtime_over_stored\": " << (stored > 0 ? rt.median / stored : 0)
          << ", \"runtime_over_baseline\": " << (base.median > 0 ? rt.median / base.median : 0)
          << ", \"first_launch_ms\": " << first_launch_ms << ", \"load_ms\": " << first.load_ms()
          << ", \"context_ms\": " << context_ms << ", \"host_us\": {\"small_size\": \"" << small_size
          << "\", \"bare\": " << bare_us << ", \"launch_vector\": " << vector_us
          << ", \"launch_map\": " << map_us << "}}\n";
    }
    return 0;
  } catch (const tiletune::runtime::RuntimeError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
