// The worker side: owns the CUDA context, the buffers and the references; measures one configuration per
// request. Talks to the GPU through the CUDA runtime only (no direct link to the driver library).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "gpu_support_kernels.hpp"
#include "tiletune/compiler.hpp"
#include "tiletune/device.hpp"
#include "tiletune/worker.hpp"

namespace tiletune {

using nlohmann::json;

namespace {

struct CudaFailure {
  cudaError_t code;
  std::string text;
};

std::string cuda_text(cudaError_t e, const char* call, const char* file, int line) {
  return std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + " (" + file + ":" +
         std::to_string(line) + ")";
}

#define TILETUNE_CUDA_CHECK(call)                                                 \
  do {                                                                            \
    const cudaError_t cuda_status_ = (call);                                      \
    if (cuda_status_ != cudaSuccess)                                              \
      throw CudaFailure{cuda_status_, cuda_text(cuda_status_, #call, __FILE__, __LINE__)}; \
  } while (0)

// Owns one device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) TILETUNE_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Owns one loaded module (a CUBIN) through the runtime's library API.
class Library {
 public:
  Library() = default;
  explicit Library(const std::string& cubin) {
    TILETUNE_CUDA_CHECK(cudaLibraryLoadData(&lib_, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  }
  Library(Library&& o) noexcept : lib_(std::exchange(o.lib_, nullptr)) {}
  Library& operator=(Library&& o) noexcept {
    if (this != &o) {
      if (lib_) cudaLibraryUnload(lib_);
      lib_ = std::exchange(o.lib_, nullptr);
    }
    return *this;
  }
  ~Library() {
    if (lib_) cudaLibraryUnload(lib_);
  }
  cudaKernel_t kernel(const std::string& name) const {
    cudaKernel_t k = nullptr;
    TILETUNE_CUDA_CHECK(cudaLibraryGetKernel(&k, lib_, name.c_str()));
    return k;
  }
  void* global(const std::string& name, std::size_t* bytes) const {
    void* p = nullptr;
    TILETUNE_CUDA_CHECK(cudaLibraryGetGlobal(&p, bytes, lib_, name.c_str()));
    return p;
  }

 private:
  cudaLibrary_t lib_ = nullptr;
};

// Reads the SM clock through NVML when the library is there; 0 otherwise.
class SmClock {
 public:
  explicit SmClock(int gpu) {
    handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle_) return;
    auto init = reinterpret_cast<int (*)()>(dlsym(handle_, "nvmlInit_v2"));
    auto by_uuid = reinterpret_cast<int (*)(const char*, void**)>(dlsym(handle_, "nvmlDeviceGetHandleByUUID"));
    get_clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(handle_, "nvmlDeviceGetClockInfo"));
    if (!init || !by_uuid || !get_clock_ || init() != 0) {
      get_clock_ = nullptr;
      return;
    }
    std::string why;
    for (const auto& d : present_devices(&why))
      if (d.ordinal == gpu && by_uuid(d.uuid.c_str(), &device_) != 0) device_ = nullptr;
  }
  ~SmClock() {
    if (handle_) dlclose(handle_);
  }
  double mhz() const {
    unsigned value = 0;
    if (!get_clock_ || !device_ || get_clock_(device_, 1 /* NVML_CLOCK_SM */, &value) != 0) return 0;
    return value;
  }

 private:
  void* handle_ = nullptr;
  void* device_ = nullptr;
  int (*get_clock_)(void*, int, unsigned*) = nullptr;
};

struct TimingStats {
  double median = 0, min = 0, p25 = 0, p75 = 0, spread = 0;
  int reps = 0;
};

TimingStats summarize(std::vector<double> t) {
  TimingStats s;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  auto q = [&](double f) {
    const double pos = f * static_cast<double>(t.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, t.size() - 1);
    return t[lo] + (t[hi] - t[lo]) * (pos - static_cast<double>(lo));
  };
  s.median = q(0.5);
  s.min = t.front();
  s.p25 = q(0.25);
  s.p75 = q(0.75);
  s.spread = s.median > 0 ? (s.p75 - s.p25) / s.median : 0;
  s.reps = static_cast<int>(t.size());
  return s;
}

json timing_json(const TimingStats& s) {
  return {{"median_ms", s.median}, {"min_ms", s.min}, {"p25_ms", s.p25}, {"p75_ms", s.p75}, {"spread", s.spread}, {"reps", s.reps}};
}

// Errors that leave the context unusable: the worker reports them and exits.
bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

class Runner {
 public:
  explicit Runner(int gpu) : gpu_(gpu), clock_(gpu) {
    TILETUNE_CUDA_CHECK(cudaSetDevice(gpu));
    std::string why;
    for (auto& d : present_devices(&why))
      if (d.ordinal == gpu) device_ = d;
    if (device_.ordinal < 0) throw CudaFailure{cudaErrorNoDevice, "no CUDA GPU " + std::to_string(gpu) + (why.empty() ? "" : ": " + why)};
    TILETUNE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TILETUNE_CUDA_CHECK(cudaEventCreate(&start_));
    TILETUNE_CUDA_CHECK(cudaEventCreate(&stop_));
    // Writing twice the L2 between timed runs leaves none of the previous run's data in it.
    flush_ = DeviceBuffer(static_cast<std::size_t>(std::max<long long>(device_.l2_bytes * 2, 64LL << 20)));
    CompileCache cache(CompileCache::default_dir());
    CompileJob job{kSupportKernels, "tiletune_support.cu", "tt_fill", device_.arch(), {}};
    const std::string key = cache.key(job);
    CompileResult r = cache.load(key).value_or(compile(job));
    cache.store(key, r);
    if (auto* err = std::get_if<CompileError>(&r)) throw CudaFailure{cudaErrorUnknown, "support kernels: " + err->log};
    support_ = Library(std::get<CompiledKernel>(r).cubin);
    acc_ = DeviceBuffer(2 * sizeof(double) + sizeof(unsigned long long));
  }

  ~Runner() {
    if (cublas_) cublasDestroy(cublas_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  json hello() const { return {{"ok", true}, {"device", json::parse(device_.to_json())}}; }

  json setup(const json& m) {
    const std::string signature = m.dump();
    if (signature == setup_signature_) return {{"ok", true}, {"cached", true}};
    setup_signature_.clear();
    buffers_.clear();
    ref_ = DeviceBuffer();
    const auto t0 = std::chrono::steady_clock::now();
    reference_ = m.at("reference").get<std::string>();
    tolerance_ = m.at("tolerance").get<double>();
    seed_ = m.at("seed").get<unsigned long long>();
    vars_ = m.at("vars").get<std::map<std::string, long long>>();
    output_name_.clear();
    unsigned long long stream_index = 0;
    for (const auto& b : m.at("buffers")) {
      Buffer buf;
      buf.count = b.at("count").get<unsigned long long>();
      buf.output = b.at("role").get<std::string>() == "output";
      buf.seed = seed_ * 1000003ULL + (++stream_index);
      buf.mem = DeviceBuffer(std::max<unsigned long long>(buf.count, 1) * sizeof(float));
      if (!buf.output) launch_support("tt_fill", grid_for(buf.count), 256, buf.mem.get(), buf.count, buf.seed);
      else output_name_ = b.at("name").get<std::string>();
      buffers_[b.at("name").get<std::string>()] = std::move(buf);
    }
    if (output_name_.empty()) throw CudaFailure{cudaErrorInvalidValue, "the family has no output buffer"};
    constants_.clear();
    for (const auto& c : m.at("constants")) {
      std::vector<float> host(c.at("count").get<std::size_t>());
      const unsigned long long cseed = seed_ * 1000003ULL + (++stream_index);
      for (std::size_t i = 0; i < host.size(); ++i) host[i] = support_value(cseed, i);
      constants_[c.at("name").get<std::string>()] = {host, cseed};
    }
    compute_reference();
    const std::string check = check_reference_on_cpu();
    TILETUNE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    setup_signature_ = signature;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return {{"ok", true}, {"setup_ms", ms}, {"reference_check", check}};
  }

  // Runs one configuration: load, poison, launch, validate, then time.
  json measure(const json& m) {
    Library lib;
    cudaKernel_t kernel = nullptr;
    std::vector<void*> args;
    dim3 grid, block;
    std::size_t dyn = 0;
    try {
      std::ifstream in(m.at("cubin_path").get<std::string>(), std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      lib = Library(bytes.str());
      kernel = lib.kernel(m.at("kernel").get<std::string>());
      for (const auto& name : m.at("constants")) upload_constant(lib, name.get<std::string>());
      const auto g = m.at("grid").get<std::vector<long long>>();
      const auto b = m.at("block").get<std::vector<long long>>();
      grid = dim3(static_cast<unsigned>(g[0]), static_cast<unsigned>(g[1]), static_cast<unsigned>(g[2]));
      block = dim3(static_cast<unsigned>(b[0]), static_cast<unsigned>(b[1]), static_cast<unsigned>(b[2]));
      dyn = m.at("dynamic_smem").get<std::size_t>();
      // Past 48 KB of shared memory per block (static and dynamic together) the kernel must opt in.
      cudaFuncAttributes attrs{};
      TILETUNE_CUDA_CHECK(cudaFuncGetAttributes(&attrs, reinterpret_cast<const void*>(kernel)));
      if (dyn + attrs.sharedSizeBytes > 48 * 1024)
        TILETUNE_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dyn)));
      // Kernel arguments point at storage that stays put for the whole measurement.
      const auto& list = m.at("args");
      ptr_store_.assign(list.size(), nullptr);
      int_store_.assign(list.size(), 0);
      long_store_.assign(list.size(), 0);
      args.resize(list.size());
      for (std::size_t i = 0; i < list.size(); ++i) {
        const auto& a = list[i];
        if (a.contains("buffer")) {
          const auto it = buffers_.find(a.at("buffer").get<std::string>());
          if (it == buffers_.end()) throw CudaFailure{cudaErrorInvalidValue, "no buffer '" + a.at("buffer").get<std::string>() + "'"};
          ptr_store_[i] = it->second.mem.get();
          args[i] = &ptr_store_[i];
        } else if (a.contains("int")) {
          int_store_[i] = static_cast<int>(a.at("int").get<long long>());
          args[i] = &int_store_[i];
        } else {
          long_store_[i] = a.at("long").get<long long>();
          args[i] = &long_store_[i];
        }
      }
    } catch (const CudaFailure& f) {
      return {{"outcome", "launch_failed"}, {"reason", f.text}, {"fatal", is_sticky(f.code)}};
    }

    auto run_once = [&](bool timed) -> float {
      poison_output();
      if (timed) TILETUNE_CUDA_CHECK(cudaMemsetAsync(flush_.get(), 0, flush_.bytes(), stream_));
      TILETUNE_CUDA_CHECK(cudaEventRecord(start_, stream_));
      const cudaError_t launch = cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args.data(), dyn, stream_);
      if (launch != cudaSuccess) throw LaunchRefused{launch};
      TILETUNE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      TILETUNE_CUDA_CHECK(cudaEventSynchronize(stop_));
      float ms = 0;
      TILETUNE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      return ms;
    };
    return timed_loop(m, run_once);
  }

  // The library baselines: cuBLAS SGEMM for GEMM (with TF32 tensor-core math for "cublas_tf32"), the
  // device-to-device copy for convolutions.
  json baseline(const json& m) {
    const std::string kind = m.at("kind").get<std::string>();
    std::function<float(bool)> run_once;
    if (kind == "cublas" || kind == "cublas_tf32") {
      if (!cublas_) {
        if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) return {{"outcome", "launch_failed"}, {"reason", "cublasCreate failed"}};
        cublasSetStream(cublas_, stream_);
      }
      const int M = static_cast<int>(vars_.at("M")), N = static_cast<int>(vars_.at("N")), K = static_cast<int>(vars_.at("K"));
      const float* A = static_cast<const float*>(buffers_.at("A").mem.get());
      const float* B = static_cast<const float*>(buffers_.at("B").mem.get());
      float* C = static_cast<float*>(buffers_.at("C").mem.get());
      // Default math is FP32 SGEMM; TF32 lets cuBLAS round the inputs to TF32 and use the tensor cores.
      cublasSetMathMode(cublas_, kind == "cublas_tf32" ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
      run_once = [=, this](bool timed) -> float {
        poison_output();
        if (timed) TILETUNE_CUDA_CHECK(cudaMemsetAsync(flush_.get(), 0, flush_.bytes(), stream_));
        const float alpha = 1.0f, beta = 0.0f;
        TILETUNE_CUDA_CHECK(cudaEventRecord(start_, stream_));
        // Row-major C = A B is column-major C^T = B^T A^T.
        const cublasStatus_t st = cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N);
        if (st != CUBLAS_STATUS_SUCCESS) throw CudaFailure{cudaErrorUnknown, "cublasSgemm failed with status " + std::to_string(st)};
        TILETUNE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
        TILETUNE_CUDA_CHECK(cudaEventSynchronize(stop_));
        float ms = 0;
        TILETUNE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        return ms;
      };
      return timed_loop(m, run_once);
    }
    if (kind == "copy") {
      const Buffer* in = nullptr;
      for (const auto& [name, b] : buffers_)
        if (!b.output) in = &b;
      Buffer& out = buffers_.at(output_name_);
      const std::size_t bytes = std::min(in->count, out.count) * sizeof(float);
      run_once = [&, bytes](bool timed) -> float {
        if (timed) TILETUNE_CUDA_CHECK(cudaMemsetAsync(flush_.get(), 0, flush_.bytes(), stream_));
        TILETUNE_CUDA_CHECK(cudaEventRecord(start_, stream_));
        TILETUNE_CUDA_CHECK(cudaMemcpyAsync(out.mem.get(), in->mem.get(), bytes, cudaMemcpyDeviceToDevice, stream_));
        TILETUNE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
        TILETUNE_CUDA_CHECK(cudaEventSynchronize(stop_));
        float ms = 0;
        TILETUNE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        return ms;
      };
      json r = timed_loop(m, run_once, /*validate=*/false);
      r["bytes"] = 2.0 * static_cast<double>(bytes);
      return r;
    }
    return {{"outcome", "launch_failed"}, {"reason", "unknown baseline '" + kind + "'"}};
  }

 private:
  struct LaunchRefused {
    cudaError_t code;
  };

  struct Buffer {
    DeviceBuffer mem;
    unsigned long long count = 0;
    unsigned long long seed = 0;
    bool output = false;
  };

  struct Constant {
    std::vector<float> host;
    unsigned long long seed = 0;
  };

  template <typename... Args>
  void launch_support(const char* name, unsigned grid, unsigned block, Args... values) {
    void* args[] = {&values...};
    TILETUNE_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(support_.kernel(name)), dim3(grid), dim3(block), args, 0, stream_));
  }
  template <typename... Args>
  void launch_support2d(const char* name, dim3 grid, dim3 block, Args... values) {
    void* args[] = {&values...};
    TILETUNE_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(support_.kernel(name)), grid, block, args, 0, stream_));
  }
  static unsigned grid_for(unsigned long long n) {
    return static_cast<unsigned>(std::min<unsigned long long>((n + 255) / 256, 65535ULL * 16));
  }

  void poison_output() {
    Buffer& out = buffers_.at(output_name_);
    // 0xFF bytes are a NaN: an output the kernel never writes fails validation.
    TILETUNE_CUDA_CHECK(cudaMemsetAsync(out.mem.get(), 0xFF, out.count * sizeof(float), stream_));
  }

  void upload_constant(const Library& lib, const std::string& name) {
    const auto it = constants_.find(name);
    if (it == constants_.end()) throw CudaFailure{cudaErrorInvalidValue, "no data for constant '" + name + "'"};
    std::size_t bytes = 0;
    void* p = lib.global(name, &bytes);
    const std::size_t need = it->second.host.size() * sizeof(float);
    if (bytes < need)
      throw CudaFailure{cudaErrorInvalidValue, "__constant__ " + name + " holds " + std::to_string(bytes) + " bytes, the problem needs " + std::to_string(need)};
    TILETUNE_CUDA_CHECK(cudaMemcpyAsync(p, it->second.host.data(), need, cudaMemcpyHostToDevice, stream_));
  }

  DeviceBuffer constant_on_device(const std::string& name) {
    const auto& host = constants_.at(name).host;
    DeviceBuffer d(host.size() * sizeof(float));
    TILETUNE_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    return d;
  }

  long long var(const char* name, long long fallback = -1) const {
    const auto it = vars_.find(name);
    if (it != vars_.end()) return it->second;
    if (fallback >= 0) return fallback;
    throw CudaFailure{cudaErrorInvalidValue, std::string("the reference needs problem variable '") + name + "'"};
  }

  const Buffer& buffer(const char* name) const {
    const auto it = buffers_.find(name);
    if (it == buffers_.end())
      throw CudaFailure{cudaErrorInvalidValue, "reference '" + reference_ + "' needs a buffer named '" + name + "'"};
    return it->second;
  }

  void compute_reference() {
    const Buffer& out = buffers_.at(output_name_);
    ref_ = DeviceBuffer(out.count * sizeof(double));
    if (reference_ == "gemm") {
      const int M = static_cast<int>(var("M")), N = static_cast<int>(var("N")), K = static_cast<int>(var("K"));
      launch_support2d("tt_gemm_ref", dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), buffer("A").mem.get(),
                       buffer("B").mem.get(), ref_.get(), M, N, K);
    } else if (reference_ == "conv1d") {
      mask_dev_ = constant_on_device("mask");
      launch_support("tt_conv1d_ref", grid_for(out.count), 256, buffer("in").mem.get(), mask_dev_.get(), ref_.get(),
                     var("n"), static_cast<int>(var("mask_width")), static_cast<int>(var("boundary", 0)));
    } else if (reference_ == "conv2d") {
      mask_dev_ = constant_on_device("mask");
      const int H = static_cast<int>(var("H")), W = static_cast<int>(var("W"));
      launch_support2d("tt_conv2d_ref", dim3((W + 15) / 16, (H + 15) / 16), dim3(16, 16), buffer("in").mem.get(),
                       mask_dev_.get(), ref_.get(), H, W, static_cast<int>(var("mask_width")), static_cast<int>(var("boundary", 0)));
    } else {
      throw CudaFailure{cudaErrorInvalidValue, "unknown reference '" + reference_ + "'"};
    }
    TILETUNE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // Recomputes outputs of the float64 GPU reference on the CPU from the same generator: every output for
  // small problems, a random sample of them for large ones.
  std::string check_reference_on_cpu() {
    const Buffer& out = buffers_.at(output_name_);
    std::vector<double> gpu(out.count);
    TILETUNE_CUDA_CHECK(cudaMemcpy(gpu.data(), ref_.get(), out.count * sizeof(double), cudaMemcpyDeviceToHost));
    auto in_value = [&](const char* name, unsigned long long i) { return static_cast<double>(support_value(buffer(name).seed, i)); };
    std::function<double(unsigned long long)> cpu;
    double work_per_output = 1;
    if (reference_ == "gemm") {
      const long long N = var("N"), K = var("K");
      work_per_output = static_cast<double>(K);
      cpu = [&, N, K](unsigned long long o) {
        const long long r = static_cast<long long>(o) / N, c = static_cast<long long>(o) % N;
        double acc = 0;
        for (long long k = 0; k < K; ++k) acc += in_value("A", r * K + k) * in_value("B", k * N + c);
        return acc;
      };
    } else if (reference_ == "conv1d") {
      const long long n = var("n");
      const int w = static_cast<int>(var("mask_width")), boundary = static_cast<int>(var("boundary", 0));
      const auto& mask = constants_.at("mask").host;
      work_per_output = w;
      cpu = [&, n, w, boundary](unsigned long long o) {
        double acc = 0;
        for (int j = 0; j < w; ++j) {
          long long p = static_cast<long long>(o) - w / 2 + j;
          if (p < 0 || p >= n) {
            if (boundary == 0) continue;
            p = std::clamp<long long>(p, 0, n - 1);
          }
          acc += static_cast<double>(mask[j]) * in_value("in", static_cast<unsigned long long>(p));
        }
        return acc;
      };
    } else {  // conv2d
      const long long H = var("H"), W = var("W");
      const int w = static_cast<int>(var("mask_width")), boundary = static_cast<int>(var("boundary", 0));
      const auto& mask = constants_.at("mask").host;
      work_per_output = static_cast<double>(w) * w;
      cpu = [&, H, W, w, boundary](unsigned long long o) {
        const long long y = static_cast<long long>(o) / W, x = static_cast<long long>(o) % W;
        double acc = 0;
        for (int dy = 0; dy < w; ++dy)
          for (int dx = 0; dx < w; ++dx) {
            long long yy = y - w / 2 + dy, xx = x - w / 2 + dx;
            if (yy < 0 || yy >= H || xx < 0 || xx >= W) {
              if (boundary == 0) continue;
              yy = std::clamp<long long>(yy, 0, H - 1);
              xx = std::clamp<long long>(xx, 0, W - 1);
            }
            acc += static_cast<double>(mask[dy * w + dx]) * in_value("in", static_cast<unsigned long long>(yy * W + xx));
          }
        return acc;
      };
    }
    // All outputs when that is at most ~2e9 multiply-adds spread over the cores; otherwise a sample.
    std::vector<unsigned long long> picks;
    const bool full = static_cast<double>(out.count) * work_per_output <= 2e9;
    if (full) {
      picks.resize(out.count);
      for (unsigned long long i = 0; i < out.count; ++i) picks[i] = i;
    } else {
      std::mt19937_64 rng(seed_);
      std::uniform_int_distribution<unsigned long long> pick(0, out.count - 1);
      const std::size_t samples = static_cast<std::size_t>(std::clamp(2e8 / work_per_output, 512.0, 65536.0));
      for (std::size_t i = 0; i < samples; ++i) picks.push_back(pick(rng));
      for (unsigned long long e = 0; e < std::min<unsigned long long>(64, out.count); ++e) {
        picks.push_back(e);
        picks.push_back(out.count - 1 - e);
      }
    }
    const unsigned threads = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<double> worst(threads, 0.0);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (std::size_t i = t; i < picks.size(); i += threads) {
          const double want = cpu(picks[i]);
          const double diff = std::fabs(want - gpu[picks[i]]) / std::max(1.0, std::fabs(want));
          worst[t] = std::max(worst[t], diff);
        }
      });
    for (auto& th : pool) th.join();
    const double max_diff = *std::max_element(worst.begin(), worst.end());
    if (!(max_diff <= 1e-9))
      throw CudaFailure{cudaErrorUnknown, "the GPU float64 reference disagrees with the CPU by " + std::to_string(max_diff)};
    return std::string(full ? "all " : "a sample of ") + std::to_string(picks.size()) + " outputs checked against a CPU float64 reference";
  }

  // Relative L2 error of the output against the reference, and the count of non-finite outputs.
  std::pair<double, unsigned long long> compare_output() {
    const Buffer& out = buffers_.at(output_name_);
    TILETUNE_CUDA_CHECK(cudaMemsetAsync(acc_.get(), 0, acc_.bytes(), stream_));
    double* acc = static_cast<double*>(acc_.get());
    auto* bad = reinterpret_cast<unsigned long long*>(acc + 2);
    launch_support("tt_compare", std::min<unsigned>(grid_for(out.count), 4096), 256, static_cast<const float*>(out.mem.get()),
                   static_cast<const double*>(ref_.get()), out.count, acc, bad);
    double host[2];
    unsigned long long nbad = 0;
    TILETUNE_CUDA_CHECK(cudaMemcpyAsync(host, acc, sizeof host, cudaMemcpyDeviceToHost, stream_));
    TILETUNE_CUDA_CHECK(cudaMemcpyAsync(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost, stream_));
    TILETUNE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const double err = host[1] > 0 ? std::sqrt(host[0] / host[1]) : std::sqrt(host[0]);
    return {err, nbad};
  }

  json validation_failure(double err, unsigned long long nbad) const {
    std::ostringstream why;
    if (nbad) why << nbad << " outputs not written or not finite";
    else why << "relative L2 error " << err << " > tolerance " << tolerance_;
    return {{"outcome", "wrong_result"}, {"reason", why.str()}, {"error", err}};
  }

  // Warm-up and validation, then timed repetitions until the spread is small or the budget is spent; the
  // last timed run is validated again.
  template <typename Run>
  json timed_loop(const json& m, Run& run_once, bool validate = true) {
    const int min_reps = m.value("min_reps", 5), max_reps = m.value("max_reps", 50);
    const double budget_ms = m.value("budget_ms", 300.0), target = m.value("target_spread", 0.02);
    try {
      run_once(false);
      double err = 0;
      if (validate) {
        auto [e, nbad] = compare_output();
        err = e;
        if (nbad || !(e <= tolerance_)) return validation_failure(e, nbad);
      }
      std::vector<double> times;
      double spent = 0;
      double clock_mhz = 0;
      const auto wall0 = std::chrono::steady_clock::now();
      while (static_cast<int>(times.size()) < max_reps) {
        const float ms = run_once(true);
        times.push_back(ms);
        spent = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count();
        if (times.size() == 3) clock_mhz = clock_.mhz();
        if (static_cast<int>(times.size()) >= min_reps && (summarize(times).spread <= target || spent >= budget_ms)) break;
      }
      if (clock_mhz == 0) clock_mhz = clock_.mhz();
      if (validate) {
        auto [e2, nbad2] = compare_output();
        if (nbad2 || !(e2 <= tolerance_)) return validation_failure(e2, nbad2);
        err = std::max(err, e2);
      }
      json r = timing_json(summarize(times));
      r["outcome"] = "ok";
      r["error"] = err;
      r["sm_clock_mhz"] = clock_mhz;
      return r;
    } catch (const LaunchRefused& f) {
      cudaGetLastError();
      return {{"outcome", "launch_failed"}, {"reason", std::string("cudaLaunchKernel: ") + cudaGetErrorName(f.code) + ": " + cudaGetErrorString(f.code)},
              {"fatal", is_sticky(f.code)}};
    } catch (const CudaFailure& f) {
      return {{"outcome", "runtime_failed"}, {"reason", f.text}, {"fatal", is_sticky(f.code)}};
    }
  }

  int gpu_;
  DeviceLimits device_;
  SmClock clock_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer flush_, ref_, acc_, mask_dev_;
  Library support_;
  std::map<std::string, Buffer> buffers_;
  std::map<std::string, Constant> constants_;
  std::map<std::string, long long> vars_;
  std::string reference_, output_name_, setup_signature_;
  double tolerance_ = 1e-4;
  unsigned long long seed_ = 1;
  std::vector<void*> ptr_store_;
  std::vector<int> int_store_;
  std::vector<long long> long_store_;
};

bool write_line(int fd, const json& j) {
  const std::string line = j.dump() + "\n";
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::write(fd, line.data() + sent, line.size() - sent);
    if (n <= 0) {
      if (errno == EINTR) continue;
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int worker_main(int gpu, int in_fd, int out_fd) {
  std::unique_ptr<Runner> runner;
  std::string pending;
  char chunk[65536];
  for (;;) {
    std::size_t nl;
    while ((nl = pending.find('\n')) == std::string::npos) {
      const ssize_t n = ::read(in_fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return 0;
      pending.append(chunk, static_cast<std::size_t>(n));
    }
    const std::string line = pending.substr(0, nl);
    pending.erase(0, nl + 1);
    json reply;
    bool fatal = false;
    try {
      const json m = json::parse(line);
      const std::string op = m.at("op").get<std::string>();
      if (op == "quit") return 0;
      if (!runner) runner = std::make_unique<Runner>(gpu);
      if (op == "hello") reply = runner->hello();
      else if (op == "setup") reply = runner->setup(m);
      else if (op == "measure") reply = runner->measure(m);
      else if (op == "baseline") reply = runner->baseline(m);
      else reply = {{"ok", false}, {"error", "unknown op '" + op + "'"}};
    } catch (const CudaFailure& f) {
      reply = {{"ok", false}, {"error", f.text}, {"fatal", is_sticky(f.code)}};
    } catch (const std::exception& e) {
      reply = {{"ok", false}, {"error", e.what()}};
    }
    fatal = reply.value("fatal", false);
    if (!write_line(out_fd, reply) || fatal) return fatal ? 3 : 0;
  }
}

}  // namespace tiletune
