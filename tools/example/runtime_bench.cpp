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
#include <optional>
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

using tiletune::runtime::Kernel;
using tiletune::runtime::Runtime;
using Buffers = std::map<std::string, void*>;

struct BenchArgs {
  tiletune::runtime::RuntimeOptions options;
  std::string family, size, args, json_out;
  int reps = 50;
};

// The command line, options in pairs; nullopt (after saying why) where it is not one.
std::optional<BenchArgs> read_args(int argc, char** argv) {
  BenchArgs a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i], v = argv[i + 1];
    if (name == "--db")
      a.options.database = v;
    else if (name == "--bundle")
      a.options.bundle = v;
    else if (name == "--family")
      a.family = v;
    else if (name == "--size")
      a.size = v;
    else if (name == "--args")
      a.args = v;
    else if (name == "--reps")
      a.reps = std::max(5, std::atoi(v.c_str()));
    else if (name == "--json")
      a.json_out = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", name.c_str());
      return std::nullopt;
    }
  }
  if (a.family.empty() || a.size.empty()) {
    std::fprintf(stderr,
                 "usage: %s (--db FILE | --bundle DIR) --family F --size S [--args A] [--reps N] "
                 "[--json OUT]\n",
                 argv[0]);
    return std::nullopt;
  }
  return a;
}

// The kernel's buffers (float ones random, others zero) and its constants, random.
struct Inputs {
  Buffers buffers;
  std::map<std::string, std::uint64_t> counts;  // elements of each buffer
};

Inputs random_inputs(const Kernel& kernel) {
  Inputs in;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const auto& b : kernel.buffer_info()) {
    void* p = nullptr;
    check(cudaMalloc(&p, b.count * b.element_bytes), "cudaMalloc");
    std::vector<float> host(b.count * b.element_bytes / 4);
    for (auto& x : host) x = b.type == "float" ? dist(rng) : 0.0f;
    check(cudaMemcpy(p, host.data(), host.size() * 4, cudaMemcpyHostToDevice), "fill");
    in.buffers[b.name] = p;
    in.counts[b.name] = b.count;
  }
  for (const auto& c : kernel.constant_info()) {
    std::vector<float> host(c.count);
    for (auto& x : host) x = dist(rng);
    kernel.set_constant(c.name, host.data(), host.size() * 4);
  }
  return in;
}

void set_constants(const Kernel& kernel, float value) {
  for (const auto& c : kernel.constant_info()) {
    std::vector<float> host(c.count, value);
    kernel.set_constant(c.name, host.data(), host.size() * 4);
  }
}

// A second runtime, as a fresh application would have: the time from asking to the first launch's end (`ms`).
const Kernel& first_launch(Runtime& fresh, const BenchArgs& a, const Buffers& buffers, cudaStream_t stream,
                           double& ms) {
  const auto t0 = Clock::now();
  const Kernel& first = fresh.kernel(a.family, a.size, a.args);
  set_constants(first, 0.1f);
  first.launch(buffers, stream);
  check(cudaStreamSynchronize(stream), "first launch");
  ms = ms_since(t0);
  return first;
}

// The vendor's baseline on the kernel's buffers: cuBLAS SGEMM for a GEMM (buffers A, B, C), the
// device-to-device copy for a 1D convolution (in, out), else none.
struct Baseline {
  Baseline(const Inputs& inputs, cudaStream_t on) : in(inputs), stream(on) {}

  const Inputs& in;
  cudaStream_t stream;
  bool gemm = false, conv = false;
  long m = 0, n = 0, k = 0;
  Cublas cublas;
  std::string name = "none";

  void run() {
    const float one = 1, zero = 0;
    if (gemm)  // row-major C = A B is column-major C^T = B^T A^T
      cublas.sgemm(cublas.handle, 0, 0, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &one,
                   static_cast<float*>(in.buffers.at("B")), static_cast<int>(n),
                   static_cast<float*>(in.buffers.at("A")), static_cast<int>(k), &zero,
                   static_cast<float*>(in.buffers.at("C")), static_cast<int>(n));
    else if (conv)
      cudaMemcpyAsync(in.buffers.at("out"), in.buffers.at("in"), in.counts.at("in") * 4,
                      cudaMemcpyDeviceToDevice, stream);
  }
};

// Picks the baseline, sized by the problem as the runtime read it (sizes, and arguments with the family's
// defaults filled in); false where a GEMM's cuBLAS cannot be opened.
bool choose_baseline(Baseline& base, const Kernel& kernel) {
  const Buffers& buffers = base.in.buffers;
  base.gemm = buffers.count("A") && buffers.count("B") && buffers.count("C");
  base.conv = buffers.count("in") && buffers.count("out");
  const auto& dims = kernel.problem().dims;
  base.m = dims[0];
  base.n = base.gemm ? dims[1] : 0;
  base.k = base.gemm ? dims[2] : 0;
  if (base.gemm) {
    if (!base.cublas.open()) {
      std::fprintf(stderr, "cuBLAS cannot be opened\n");
      return false;
    }
    base.cublas.set_stream(base.cublas.handle, base.stream);
    base.name = "cublas_sgemm";
  } else if (base.conv) {
    base.name = "d2d_copy";
  }
  return true;
}

struct LaunchTimes {
  Stats runtime, baseline;  // the baseline's all zero where there is none
};

// Warm-up, then runtime and baseline alternating, each alone between two events.
LaunchTimes time_launches(const Kernel& kernel, Baseline& base, const cudaDeviceProp& props, int reps) {
  const cudaStream_t stream = base.stream;
  for (int i = 0; i < 5; ++i) {
    kernel.launch(base.in.buffers, stream);
    base.run();
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
    rt_times.push_back(timed([&] { kernel.launch(base.in.buffers, stream); }));
    if (base.name != "none") base_times.push_back(timed([&] { base.run(); }));
  }
  return {stats(rt_times), base.name != "none" ? stats(base_times) : Stats{}};
}

// Microseconds of host time per call of `fn`, 500 calls back to back (the kernel runs while the host queues
// the next).
template <typename Launch>
double host_us(Launch&& fn, cudaStream_t stream) {
  check(cudaStreamSynchronize(stream), "sync");
  const auto start = Clock::now();
  for (int i = 0; i < 500; ++i) fn();
  const double us = ms_since(start) * 1000.0 / 500;
  check(cudaStreamSynchronize(stream), "sync");
  return us;
}

// A small problem's buffers, zeroed, by name and in the family's order.
struct SmallBuffers {
  Buffers by_name;
  std::vector<void*> ordered;
};

SmallBuffers zeroed_buffers(const Kernel& small) {
  SmallBuffers out;
  for (const auto& info : small.buffer_info()) {
    void* p = nullptr;
    check(cudaMalloc(&p, info.count * info.element_bytes), "cudaMalloc");
    check(cudaMemset(p, 0, info.count * info.element_bytes), "cudaMemset");
    out.by_name[info.name] = p;
    out.ordered.push_back(p);
  }
  return out;
}

// The problem's int scalars in the families' order: GEMM's M, N, K; a 1D convolution's n, mask_width,
// boundary.
std::vector<int> int_scalars(const tiletune::ProblemKey& problem, bool conv) {
  std::vector<int> scalars;
  for (const auto d : problem.dims) scalars.push_back(static_cast<int>(d));
  if (conv)
    scalars = {scalars[0], static_cast<int>(problem.args.at("mask_width")),
               static_cast<int>(problem.args.at("boundary"))};
  return scalars;
}

struct HostTimes {
  std::string small_size;
  double bare_us = 0, vector_us = 0, map_us = 0;
};

// Host time of a launch on a small problem of the family: a bare cudaLaunchKernel of the runtime's kernel
// with the family's arguments (buffers, then the problem's int scalars), and the runtime's two launches.
HostTimes time_host_launches(Runtime& runtime, const BenchArgs& a, const Baseline& base) {
  const cudaStream_t stream = base.stream;
  HostTimes t;
  t.small_size = base.gemm ? "256x256x256" : "65536";
  const Kernel& small = runtime.kernel(a.family, t.small_size, a.args);
  SmallBuffers buffers = zeroed_buffers(small);
  set_constants(small, 0.1f);
  std::vector<int> scalars = int_scalars(small.problem(), base.conv);
  std::vector<void*> bare_args;
  for (auto& p : buffers.ordered) bare_args.push_back(&p);
  for (auto& v : scalars) bare_args.push_back(&v);
  const auto g = small.grid(), b = small.block();
  host_us([&] { small.launch(buffers.ordered, stream); }, stream);  // warm-up
  t.bare_us = host_us(
      [&] {
        cudaLaunchKernel(reinterpret_cast<const void*>(small.handle()), dim3(g[0], g[1], g[2]),
                         dim3(b[0], b[1], b[2]), bare_args.data(), small.dynamic_smem(), stream);
      },
      stream);
  t.vector_us = host_us([&] { small.launch(buffers.ordered, stream); }, stream);
  t.map_us = host_us([&] { small.launch(buffers.by_name, stream); }, stream);
  check(cudaGetLastError(), "bare launches");
  return t;
}

// What the run measured, for the report and the JSON file.
struct Measured {
  std::string device;
  double context_ms = 0, kernel_ms = 0, first_launch_ms = 0;
  std::string baseline = "none";
  LaunchTimes times;
  HostTimes host;
};

void print_report(const BenchArgs& a, const Kernel& kernel, const Kernel& first, const Measured& m) {
  const Stats& rt = m.times.runtime;
  const Stats& base = m.times.baseline;
  const double stored = kernel.stored_median_ms().value_or(0);
  std::printf("%s %s%s on %s: %s (%s)\n", a.family.c_str(), a.size.c_str(),
              a.args.empty() ? "" : (" " + a.args).c_str(), m.device.c_str(),
              tiletune::params_to_text(kernel.params()).c_str(),
              kernel.match() == tiletune::Match::exact ? "exact" : kernel.message().c_str());
  std::printf("runtime launch median %.4f ms (spread %.3f), the sweep's median %.4f ms: ratio %.4f\n",
              rt.median, rt.spread(), stored, stored > 0 ? rt.median / stored : 0);
  if (m.baseline != "none")
    std::printf("%s median %.4f ms (spread %.3f): runtime / %s %.4f (baseline / runtime %.4f)\n",
                m.baseline.c_str(), base.median, base.spread(), m.baseline.c_str(), rt.median / base.median,
                base.median / rt.median);
  std::printf(
      "first launch from a fresh Runtime (%s): %.2f ms to the end of the first launch (loading %.2f ms); "
      "context %.1f ms, first kernel() %.2f ms\n",
      first.source().c_str(), m.first_launch_ms, first.load_ms(), m.context_ms, m.kernel_ms);
  std::printf(
      "host time per launch: bare cudaLaunchKernel %.2f us, Kernel::launch(vector) %.2f us, "
      "Kernel::launch(map) %.2f us\n",
      m.host.bare_us, m.host.vector_us, m.host.map_us);
}

void write_json(const BenchArgs& a, const Kernel& kernel, const Kernel& first, const Measured& m) {
  const Stats& rt = m.times.runtime;
  const Stats& base = m.times.baseline;
  const double stored = kernel.stored_median_ms().value_or(0);
  std::ofstream out(a.json_out);
  out << "{\"family\": \"" << a.family << "\", \"size\": \"" << a.size << "\", \"args\": \"" << a.args
      << "\", \"device\": \"" << m.device << "\", \"params\": \"" << tiletune::params_to_text(kernel.params())
      << "\", \"source\": \"" << first.source() << "\", \"reps\": " << a.reps
      << ", \"stored_median_ms\": " << stored << ", \"runtime\": " << json_stats(rt) << ", \"baseline\": \""
      << m.baseline << "\", \"baseline_time\": " << json_stats(base)
      << ", \"runtime_over_stored\": " << (stored > 0 ? rt.median / stored : 0)
      << ", \"runtime_over_baseline\": " << (base.median > 0 ? rt.median / base.median : 0)
      << ", \"first_launch_ms\": " << m.first_launch_ms << ", \"load_ms\": " << first.load_ms()
      << ", \"context_ms\": " << m.context_ms << ", \"host_us\": {\"small_size\": \"" << m.host.small_size
      << "\", \"bare\": " << m.host.bare_us << ", \"launch_vector\": " << m.host.vector_us
      << ", \"launch_map\": " << m.host.map_us << "}}\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<BenchArgs> args = read_args(argc, argv);
  if (!args) return 2;
  const BenchArgs& a = *args;
  Measured m;
  auto t0 = Clock::now();
  check(cudaFree(nullptr), "CUDA context");
  m.context_ms = ms_since(t0);
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");

  Runtime runtime(a.options);
  try {
    cudaDeviceProp props{};
    check(cudaGetDeviceProperties(&props, 0), "properties");
    m.device = props.name;
    t0 = Clock::now();
    const Kernel& kernel = runtime.kernel(a.family, a.size, a.args);
    m.kernel_ms = ms_since(t0);
    const Inputs inputs = random_inputs(kernel);
    Runtime fresh(a.options);
    const Kernel& first = first_launch(fresh, a, inputs.buffers, stream, m.first_launch_ms);
    Baseline base(inputs, stream);
    if (!choose_baseline(base, kernel)) return 1;
    m.baseline = base.name;
    m.times = time_launches(kernel, base, props, a.reps);
    m.host = time_host_launches(runtime, a, base);
    print_report(a, kernel, first, m);
    if (!a.json_out.empty()) write_json(a, kernel, first, m);
    return 0;
  } catch (const tiletune::runtime::RuntimeError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
