// The worker side: owns the CUDA context and the problem's buffers; fills, poisons, restores, launches the
// kernels a request describes, compares outputs with the reference's truth element by element, and times.
// It knows no family: buffers, types, fills, references and library operands all come in the requests.
// Talks to the GPU through the CUDA runtime only (no direct link to the driver library); cuBLAS is opened
// here, on first use, so that no other tiletune process loads it.
#include "tiletune/worker_main.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>
#include <thread>

#include "cublas.hpp"
#include "cuda_failure.hpp"
#include "support_kernels_source.hpp"
#include "tiletune/compiler.hpp"
#include "tiletune/device.hpp"
#include "tiletune/dynamic_library.hpp"
#include "tiletune/input_file.hpp"
#include "tiletune/library_calls.hpp"
#include "tiletune/loaded_kernel.hpp"
#include "tiletune/tensor_map.hpp"
#include "tiletune/worker_protocol.hpp"

namespace tiletune {

using nlohmann::json;

namespace {

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

// Owns one device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) TILETUNE_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
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

// Milliseconds of wall time since t0.
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The launch layer's errors, reported as the worker reports every CUDA failure.
template <typename F>
auto as_cuda_failure(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const LaunchError& e) {
    throw CudaFailure{e.code(), e.what()};
  }
}

// Reads the SM clock through NVML when the library is there; 0 otherwise.
class SmClock {
 public:
  explicit SmClock(int gpu) : nvml_({"libnvidia-ml.so.1"}, /*close=*/true) {
    int (*init)() = nullptr;
    int (*by_uuid)(const char*, void**) = nullptr;
    if (!nvml_.get(init, "nvmlInit_v2") || !nvml_.get(by_uuid, "nvmlDeviceGetHandleByUUID") ||
        !nvml_.get(get_clock_, "nvmlDeviceGetClockInfo") || init() != 0) {
      get_clock_ = nullptr;
      return;
    }
    std::string why;
    for (const auto& d : present_devices(&why))
      if (d.ordinal == gpu && by_uuid(d.uuid.c_str(), &device_) != 0) device_ = nullptr;
  }
  SmClock(const SmClock&) = delete;
  SmClock& operator=(const SmClock&) = delete;
  double mhz() const {
    unsigned value = 0;
    if (!get_clock_ || !device_ || get_clock_(device_, 1 /* NVML_CLOCK_SM */, &value) != 0) return 0;
    return value;
  }

 private:
  DynamicLibrary nvml_;
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

// CUDA events around one enqueued piece of work, after an optional L2 flush (writing twice the L2 leaves
// none of the previous run's data in it).
class Timer {
 public:
  Timer(cudaStream_t stream, long long l2_bytes) : stream_(stream) {
    TILETUNE_CUDA_CHECK(cudaEventCreate(&start_));
    TILETUNE_CUDA_CHECK(cudaEventCreate(&stop_));
    flush_ = DeviceBuffer(static_cast<std::size_t>(std::max<long long>(l2_bytes * 2, 64LL << 20)));
  }
  ~Timer() {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  float time(const std::function<void()>& enqueue, bool flush_l2) {
    if (flush_l2) TILETUNE_CUDA_CHECK(cudaMemsetAsync(flush_.get(), 0, flush_.bytes(), stream_));
    TILETUNE_CUDA_CHECK(cudaEventRecord(start_, stream_));
    enqueue();
    TILETUNE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    TILETUNE_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    TILETUNE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  DeviceBuffer flush_;
};

struct LaunchRefused {
  cudaError_t code;
  const char* call;  // the launch call that refused
};

// One buffer of the problem: its data, the saved input of an inout buffer, and an output's truth.
struct Buffer {
  wire::BufferSpec spec;
  DeviceBuffer mem, saved, truth;
  double floor = 0;  // the scale floor of the tolerance, once the truth is known
  std::size_t bytes() const { return spec.count * size_of(spec.type); }
};

struct Constant {
  wire::ConstantSpec spec;
  DeviceBuffer data;
};

// A loaded kernel with its arguments bound to slots that stay put while it runs.
struct BoundKernel {
  LoadedKernel kernel;
  ArgumentSlots args;

  void launch(cudaStream_t stream) {
    const cudaError_t e = kernel.launch(args.data(), stream);
    if (e != cudaSuccess) throw LaunchRefused{e, kernel.launch_call()};
  }
};

class GpuSide;

class GpuSide {
 public:
  explicit GpuSide(int gpu) : clock_(gpu) {
    TILETUNE_CUDA_CHECK(cudaSetDevice(gpu));
    std::string why;
    for (auto& d : present_devices(&why))
      if (d.ordinal == gpu) device_ = d;
    if (device_.ordinal < 0)
      throw CudaFailure{cudaErrorNoDevice,
                        "no CUDA GPU " + std::to_string(gpu) + (why.empty() ? "" : ": " + why)};
    TILETUNE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    timer_ = std::make_unique<Timer>(stream_, device_.l2_bytes);
    CompileCache cache(CompileCache::default_dir());
    CompileJob job{kSupportKernelsSource, "tiletune_support.cu", "tt_fill_float", device_.arch(), {}};
    // value_or(compile(job)) would compile on every start, cached or not.
    CompileResult r = cache.load_or_compile(cache.key(job), job);
    if (auto* err = std::get_if<CompileError>(&r))
      throw CudaFailure{cudaErrorUnknown, "support kernels: " + err->log};
    support_ = as_cuda_failure([&] { return Module(std::get<CompiledKernel>(r).cubin); });
    scratch_ = DeviceBuffer(4 * sizeof(double) + 4 * sizeof(unsigned long long));
  }

  ~GpuSide() {
    cublas_.reset();
    timer_.reset();
    if (stream_) cudaStreamDestroy(stream_);
  }

  wire::Reply hello() const {
    wire::Reply r;
    r.summary = device_.to_json();
    return r;
  }

  wire::Reply setup(const json& m) {
    const std::string signature = m.dump();
    wire::Reply reply;
    if (signature == setup_signature_) {
      reply.summary = "cached";
      return reply;
    }
    setup_signature_.clear();
    buffers_.clear();
    constants_.clear();
    const auto t0 = std::chrono::steady_clock::now();
    const auto req = m.get<wire::SetupRequest>();
    fill_all(req);
    for (const auto& k : req.setup_kernels) run_plain(k, "the setup kernel ", /*truth=*/false);
    prepare_outputs();
    run_plain(req.reference, "the reference kernel ", /*truth=*/true);
    std::ostringstream summary;
    summary << "truth from " << req.reference.kernel;
    for (auto& [name, b] : buffers_) {
      if (b.spec.role == BufferRole::input) continue;
      b.floor = b.spec.scale_floor >= 0 ? b.spec.scale_floor : truth_rms(b);
      summary << "; " << name << ": " << to_string(b.spec.truth) << ", scale floor " << b.floor;
    }
    setup_signature_ = signature;
    reply.setup_ms = ms_since(t0);
    reply.summary = summary.str();
    return reply;
  }

  // Allocates the buffers and constants and fills the inputs (outputs are poisoned per run).
  void fill_all(const wire::SetupRequest& req) {
    std::uint64_t stream_index = 0;
    for (const auto& spec : req.buffers) {
      Buffer b;
      b.spec = spec;
      b.mem = DeviceBuffer(std::max<std::size_t>(b.bytes(), 1));
      const std::uint64_t seed = req.seed * 1000003ULL + (++stream_index);
      if (spec.role != BufferRole::output) fill(spec.type, b.mem.get(), spec.count, seed, spec.fill);
      buffers_[spec.name] = std::move(b);
    }
    for (const auto& spec : req.constants) {
      Constant c{spec, DeviceBuffer(std::max<std::size_t>(spec.count * size_of(spec.type), 1))};
      fill(spec.type, c.data.get(), spec.count, req.seed * 1000003ULL + (++stream_index), spec.fill);
      constants_[spec.name] = std::move(c);
    }
  }

  // After the setup kernels: inout buffers saved for restoring, and each output's truth made ready for the
  // reference (an inout's from its input; what the reference leaves unwritten stays NaN or a byte pattern
  // and fails every configuration).
  void prepare_outputs() {
    for (auto& [name, b] : buffers_) {
      const auto& spec = b.spec;
      if (spec.role == BufferRole::inout) {
        b.saved = DeviceBuffer(std::max<std::size_t>(b.bytes(), 1));
        TILETUNE_CUDA_CHECK(
            cudaMemcpyAsync(b.saved.get(), b.mem.get(), b.bytes(), cudaMemcpyDeviceToDevice, stream_));
      }
      if (spec.role != BufferRole::input) {
        b.truth = DeviceBuffer(std::max<std::size_t>(spec.count * size_of(spec.truth), 1));
        if (spec.role == BufferRole::inout)
          launch_support("tt_convert_" + to_string(spec.type) + "_" + to_string(spec.truth), spec.count,
                         b.mem.get(), b.truth.get(), static_cast<unsigned long long>(spec.count));
        else
          TILETUNE_CUDA_CHECK(cudaMemsetAsync(b.truth.get(), 0xFF, b.truth.bytes(), stream_));
      }
    }
  }

  // Runs a setup or reference kernel once and waits for it; a failure names the kernel.
  void run_plain(const wire::KernelSpec& spec, const std::string& what, bool truth) {
    try {
      BoundKernel k = bind(spec, truth);
      k.launch(stream_);
      TILETUNE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    } catch (const LaunchRefused& f) {
      throw CudaFailure{f.code, what + spec.kernel + ": " + cuda_text(f.code, "launch")};
    } catch (const CudaFailure& f) {
      throw CudaFailure{f.code, what + spec.kernel + ": " + f.text};
    }
  }

  // Runs one configuration: load, then warm-up, check, timed runs, check again.
  wire::Reply measure(const json& m) {
    const auto req = m.get<wire::MeasureRequest>();
    BoundKernel k;
    try {
      k = bind(req.kernel, /*truth=*/false);
    } catch (const CudaFailure& f) {
      return failure("launch_failed", f);
    }
    std::vector<Buffer*> checked;
    for (auto& [name, b] : buffers_)
      if (b.spec.role != BufferRole::input) checked.push_back(&b);
    return timed_loop(req.reps, checked, [&] { k.launch(stream_); });
  }

  wire::Reply baseline(const json& m);

  cudaStream_t stream() const { return stream_; }
  const Cublas& cublas() {
    if (!cublas_) cublas_ = std::make_unique<Cublas>(stream_);
    return *cublas_;
  }
  Buffer& operand(const wire::BaselineRequest& req, const std::string& op) {
    const auto name = req.buffers.find(op);
    if (name == req.buffers.end())
      throw CudaFailure{cudaErrorInvalidValue, req.library + " needs operand " + op};
    const auto it = buffers_.find(name->second);
    if (it == buffers_.end()) throw CudaFailure{cudaErrorInvalidValue, "no buffer '" + name->second + "'"};
    return it->second;
  }
  DeviceBuffer& scratch_copy(std::size_t bytes) {
    if (copy_scratch_.bytes() < bytes) copy_scratch_ = DeviceBuffer(bytes);
    return copy_scratch_;
  }

 private:
  cudaKernel_t support_kernel(const std::string& name) const {
    return as_cuda_failure([&] { return support_.kernel(name); });
  }

  template <typename... Args>
  void launch_support(const std::string& name, std::uint64_t n, Args... values) {
    void* args[] = {&values...};
    const unsigned grid = static_cast<unsigned>(std::clamp<std::uint64_t>((n + 255) / 256, 1, 65535ULL * 16));
    TILETUNE_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(support_kernel(name)), dim3(grid),
                                         dim3(256), args, 0, stream_));
  }

  void fill(ElementType type, void* p, std::uint64_t n, std::uint64_t seed, const wire::FillSpec& f) {
    if (f.kind == wire::FillKind::file) return upload_file(type, p, n, f);
    launch_support("tt_fill_" + to_string(type), n, p, static_cast<unsigned long long>(n),
                   static_cast<unsigned long long>(seed), static_cast<int>(f.kind), f.lo, f.hi);
  }

  // Streams a file to the GPU in pieces: from pageable memory cudaMemcpyAsync returns once the piece is
  // staged, so one host piece is reused. The file is checked again: it may have changed since the sweep
  // began.
  void upload_file(ElementType type, void* p, std::uint64_t n, const wire::FillSpec& f) {
    try {
      const auto format = input_format_from_string(f.format).value_or(InputFormat::raw);
      const InputLayout layout = inspect_input(f.path, format, type, n);
      if (file_content_hash(f.path) != f.hash)
        throw InputFileError(f.path + ": changed since the sweep began");
      auto* at = static_cast<char*>(p);
      stream_input(f.path, layout, type, 64u << 20, [&](const char* piece, std::size_t bytes) {
        TILETUNE_CUDA_CHECK(cudaMemcpyAsync(at, piece, bytes, cudaMemcpyHostToDevice, stream_));
        at += bytes;
      });
    } catch (const InputFileError& e) {
      throw CudaFailure{cudaErrorInvalidValue, e.what()};
    }
  }

  double truth_rms(const Buffer& b) {
    auto* stats = static_cast<double*>(scratch_.get());
    TILETUNE_CUDA_CHECK(cudaMemsetAsync(stats, 0, 2 * sizeof(double), stream_));
    launch_support("tt_sumsq_" + to_string(b.spec.truth), std::min<std::uint64_t>(b.spec.count, 1 << 20),
                   b.truth.get(), static_cast<unsigned long long>(b.spec.count), stats);
    double host[2] = {0, 0};
    TILETUNE_CUDA_CHECK(cudaMemcpyAsync(host, stats, sizeof host, cudaMemcpyDeviceToHost, stream_));
    TILETUNE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host[1] > 0 ? std::sqrt(host[0] / host[1]) : 0.0;
  }

  // Loads a kernel and binds its arguments: buffers by name (the reference gets each output's truth),
  // scalars by value; fills its __constant__ symbols.
  BoundKernel bind(const wire::KernelSpec& spec, bool truth) {
    BoundKernel k{as_cuda_failure([&] { return LoadedKernel::from_file(spec); }),
                  ArgumentSlots(spec.args.size())};
    for (const auto& name : spec.constants) upload_constant(k.kernel.module(), name);
    for (std::size_t i = 0; i < spec.args.size(); ++i) {
      const auto& a = spec.args[i];
      if (a.is_tensor_map()) {
        bind_tensor_map(a.tensor_map, truth, k.args.tensor_map(i));
      } else if (!a.buffer.empty()) {
        const auto it = buffers_.find(a.buffer);
        if (it == buffers_.end()) throw CudaFailure{cudaErrorInvalidValue, "no buffer '" + a.buffer + "'"};
        k.args.set_pointer(i, truth && it->second.spec.role != BufferRole::input ? it->second.truth.get()
                                                                                 : it->second.mem.get());
      } else {
        k.args.set_scalar(i, wire::scalar_bits(a));
      }
    }
    return k;
  }

  // Encodes a tensor map over its buffer. The reference side (truth) gets each output's truth buffer, which a
  // map describes only where it has the output's own type (a family's configuration as the reference);
  // over a double truth it would be wrong, so that is refused.
  void bind_tensor_map(const wire::TensorMapSpec& spec, bool truth, EncodedTensorMap& slot) {
    const auto it = buffers_.find(spec.buffer);
    if (it == buffers_.end())
      throw CudaFailure{cudaErrorInvalidValue,
                        "tensor map " + spec.name + ": no buffer '" + spec.buffer + "'"};
    const Buffer& b = it->second;
    const bool over_truth = truth && b.spec.role != BufferRole::input;
    if (over_truth && b.spec.truth != b.spec.type)
      throw CudaFailure{cudaErrorInvalidValue,
                        "tensor map " + spec.name + " over the output " + spec.buffer +
                            ": the reference receives its truth as " + to_string(b.spec.truth) + ", not " +
                            to_string(b.spec.type) + ", which the map does not describe"};
    const std::string error = encode_tensor_map(spec, over_truth ? b.truth.get() : b.mem.get(), slot);
    if (!error.empty()) throw CudaFailure{cudaErrorInvalidValue, error};
  }

  void upload_constant(const Module& lib, const std::string& name) {
    const auto it = constants_.find(name);
    if (it == constants_.end())
      throw CudaFailure{cudaErrorInvalidValue, "no data for constant '" + name + "'"};
    std::size_t bytes = 0;
    void* p = as_cuda_failure([&] { return lib.global(name, &bytes); });
    const std::size_t need = it->second.spec.count * size_of(it->second.spec.type);
    if (bytes < need)
      throw CudaFailure{cudaErrorInvalidValue, "__constant__ " + name + " holds " + std::to_string(bytes) +
                                                   " bytes, the problem needs " + std::to_string(need)};
    TILETUNE_CUDA_CHECK(cudaMemcpyAsync(p, it->second.data.get(), need, cudaMemcpyDeviceToDevice, stream_));
  }

  // Before every run: outputs poisoned (NaN for floating types; for integers a byte pattern that changes from
  // run to run, so that no true value can hide an unwritten element twice), inout buffers restored.
  void prepare(const std::vector<Buffer*>& outputs) {
    ++runs_;
    for (Buffer* b : outputs) {
      if (b->spec.role == BufferRole::inout)
        TILETUNE_CUDA_CHECK(
            cudaMemcpyAsync(b->mem.get(), b->saved.get(), b->bytes(), cudaMemcpyDeviceToDevice, stream_));
      else
        TILETUNE_CUDA_CHECK(cudaMemsetAsync(
            b->mem.get(), is_floating(b->spec.type) ? 0xFF : (runs_ % 2 ? 0xA5 : 0x5A), b->bytes(), stream_));
    }
  }

  std::string coordinates(const Buffer& b, std::uint64_t index) const {
    std::string out = b.spec.name;
    if (b.spec.dims.empty()) return out + "[" + std::to_string(index) + "]";
    std::vector<std::uint64_t> at(b.spec.dims.size());
    for (std::size_t d = b.spec.dims.size(); d-- > 0;) {
      const auto extent = static_cast<std::uint64_t>(std::max<std::int64_t>(b.spec.dims[d], 1));
      at[d] = index % extent;
      index /= extent;
    }
    for (auto v : at) out.append("[").append(std::to_string(v)).append("]");
    return out;
  }

  // Every element of every output against its truth. Returns the largest relative L2 error, or throws the
  // wrong_result reason.
  struct WrongResult {
    std::string reason;
    double l2;
  };
  double check(const std::vector<Buffer*>& outputs) {
    double worst_l2 = 0;
    for (Buffer* b : outputs) {
      const std::string pair = to_string(b->spec.type) + "_" + to_string(b->spec.truth);
      auto* stats = static_cast<double*>(scratch_.get());
      auto* counts = reinterpret_cast<unsigned long long*>(stats + 4);
      TILETUNE_CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, scratch_.bytes(), stream_));
      const auto n = static_cast<unsigned long long>(b->spec.count);
      launch_support("tt_compare_" + pair, std::min<std::uint64_t>(n, 1 << 20), b->mem.get(), b->truth.get(),
                     n, b->spec.rtol, b->spec.atol, b->floor, stats, counts, counts + 1);
      double host[2];
      unsigned long long bad[2];
      TILETUNE_CUDA_CHECK(cudaMemcpyAsync(host, stats, sizeof host, cudaMemcpyDeviceToHost, stream_));
      TILETUNE_CUDA_CHECK(cudaMemcpyAsync(bad, counts, sizeof bad, cudaMemcpyDeviceToHost, stream_));
      TILETUNE_CUDA_CHECK(cudaStreamSynchronize(stream_));
      const double l2 = host[1] > 0 ? std::sqrt(host[0] / host[1]) : std::sqrt(host[0]);
      worst_l2 = std::max(worst_l2, l2);
      if (bad[0] <= b->spec.max_differing) continue;
      // Find the first element that is out by the most, and show it.
      TILETUNE_CUDA_CHECK(cudaMemsetAsync(counts + 2, 0xFF, sizeof(unsigned long long), stream_));
      launch_support("tt_locate_" + pair, std::min<std::uint64_t>(n, 1 << 20), b->mem.get(), b->truth.get(),
                     n, b->spec.rtol, b->spec.atol, b->floor,
                     static_cast<const unsigned long long*>(counts + 1), counts + 2);
      void* args[] = {nullptr, nullptr, nullptr, nullptr};
      void* out = b->mem.get();
      void* truth = b->truth.get();
      const unsigned long long* index = counts + 2;
      double* values = stats + 2;
      args[0] = &out;
      args[1] = &truth;
      args[2] = &index;
      args[3] = &values;
      TILETUNE_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(support_kernel("tt_pick_" + pair)),
                                           dim3(1), dim3(1), args, 0, stream_));
      double picked[2];
      unsigned long long where = 0;
      TILETUNE_CUDA_CHECK(cudaMemcpyAsync(picked, values, sizeof picked, cudaMemcpyDeviceToHost, stream_));
      TILETUNE_CUDA_CHECK(cudaMemcpyAsync(&where, index, sizeof where, cudaMemcpyDeviceToHost, stream_));
      TILETUNE_CUDA_CHECK(cudaStreamSynchronize(stream_));
      std::ostringstream why;
      why << std::setprecision(7) << bad[0] << " of " << n << " elements of " << b->spec.name << " differ";
      if (b->spec.max_differing) why << " (" << b->spec.max_differing << " may)";
      if (is_floating(b->spec.type))
        why << " (|out - ref| > " << b->spec.atol << " + " << b->spec.rtol << " * max(|ref|, " << b->floor
            << "))";
      why << "; worst " << coordinates(*b, where) << " = " << picked[0] << ", expected " << picked[1];
      if (!std::isfinite(picked[0]) && std::isfinite(picked[1])) why << " (not written, or not finite)";
      why << "; relative L2 error " << l2;
      throw WrongResult{why.str(), l2};
    }
    return worst_l2;
  }

  static wire::Reply failure(const char* outcome, const CudaFailure& f) {
    wire::Reply r;
    r.outcome = outcome;
    r.reason = f.text;
    r.fatal = is_sticky(f.code);
    return r;
  }

  // Back-to-back runs for `ms` of wall time, in batches of about 20 ms between two events, with no
  // poisoning, L2 flush or check between them (an inout buffer is not restored): the GPU settles at the clock
  // its power limit allows, as under an application's steady load. r gets the time per run and the mean SM
  // clock of the second half. Then a second's rest, so that what is measured next starts from an idle GPU.
  void sustain(wire::Reply& r, const std::function<void()>& enqueue, double ms) {
    const int batch =
        static_cast<int>(std::clamp(std::ceil(20.0 / std::max(r.median_ms, 1e-3)), 1.0, 1000.0));
    const auto run_batch = [&] {
      for (int i = 0; i < batch; ++i) enqueue();
    };
    const auto wall0 = std::chrono::steady_clock::now();
    double run_ms = 0, mhz = 0;
    int samples = 0;
    r.sustained_runs = 0;
    for (double spent = 0; spent < ms; spent = ms_since(wall0)) {
      const float batch_ms = timer_->time(run_batch, false);
      if (spent < ms / 2) continue;
      run_ms += batch_ms;
      r.sustained_runs += batch;
      mhz += clock_.mhz();
      ++samples;
    }
    r.sustained_run_ms = r.sustained_runs > 0 ? run_ms / r.sustained_runs : 0;
    r.sustained_clock_mhz = samples > 0 ? mhz / samples : 0;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }

 public:
  // Warm-up and check, then timed repetitions until the spread is small or the budget is spent; the last
  // timed run is checked again; then, if asked, the back-to-back runs of sustain().
  wire::Reply timed_loop(const wire::Repetitions& reps, const std::vector<Buffer*>& checked,
                         const std::function<void()>& enqueue) {
    try {
      prepare(checked);
      timer_->time(enqueue, false);
      double err = 0;
      err = check(checked);
      std::vector<double> times;
      double clock_mhz = 0;
      const auto wall0 = std::chrono::steady_clock::now();
      while (static_cast<int>(times.size()) < reps.max_reps) {
        prepare(checked);
        times.push_back(timer_->time(enqueue, true));
        const double spent = ms_since(wall0);
        if (times.size() == 3) clock_mhz = clock_.mhz();
        if (static_cast<int>(times.size()) >= reps.min_reps &&
            (summarize(times).spread <= reps.target_spread || spent >= reps.budget_ms))
          break;
      }
      if (clock_mhz == 0) clock_mhz = clock_.mhz();
      err = std::max(err, check(checked));
      const TimingStats s = summarize(times);
      wire::Reply r;
      r.outcome = "ok";
      r.median_ms = s.median;
      r.min_ms = s.min;
      r.p25_ms = s.p25;
      r.p75_ms = s.p75;
      r.spread = s.spread;
      r.reps = s.reps;
      r.times_ms = std::move(times);
      r.error_l2 = err;
      r.sm_clock_mhz = clock_mhz;
      if (reps.sustained_ms > 0) sustain(r, enqueue, reps.sustained_ms);
      return r;
    } catch (const WrongResult& w) {
      wire::Reply r;
      r.outcome = "wrong_result";
      r.reason = w.reason;
      r.error_l2 = w.l2;
      return r;
    } catch (const LaunchRefused& f) {
      cudaGetLastError();
      wire::Reply r = failure("launch_failed", CudaFailure{f.code, cuda_text(f.code, f.call)});
      return r;
    } catch (const CudaFailure& f) {
      return failure("runtime_failed", f);
    }
  }

 private:
  DeviceLimits device_;
  SmClock clock_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Timer> timer_;
  std::unique_ptr<Cublas> cublas_;
  Module support_;
  DeviceBuffer scratch_, copy_scratch_;
  std::map<std::string, Buffer> buffers_;
  std::map<std::string, Constant> constants_;
  std::string setup_signature_;
  std::uint64_t runs_ = 0;
};

int scalar(const wire::BaselineRequest& req, const char* op) {
  const auto it = req.scalars.find(op);
  if (it == req.scalars.end()) throw CudaFailure{cudaErrorInvalidValue, req.library + " needs operand " + op};
  return static_cast<int>(it->second);
}

cudaDataType cuda_data_type(ElementType t, const std::string& library) {
  switch (t) {
    case ElementType::f32:
      return CUDA_R_32F;
    case ElementType::f16:
      return CUDA_R_16F;
    case ElementType::bf16:
      return CUDA_R_16BF;
    default:
      throw CudaFailure{cudaErrorInvalidValue,
                        library + " takes float, half or bfloat16 buffers, not " + to_string(t)};
  }
}

std::function<void()> bind_sgemm(GpuSide& w, const wire::BaselineRequest& req, bool tf32) {
  Buffer &A = w.operand(req, "A"), &B = w.operand(req, "B"), &C = w.operand(req, "C");
  for (const Buffer* b : {&A, &B, &C})
    if (b->spec.type != ElementType::f32)
      throw CudaFailure{cudaErrorInvalidValue, req.library + " takes float buffers; " + b->spec.name +
                                                   " is " + to_string(b->spec.type)};
  const Cublas& blas = w.cublas();
  const int M = scalar(req, "M"), N = scalar(req, "N"), K = scalar(req, "K");
  return [&blas, &A, &B, &C, M, N, K, tf32] {
    blas.sgemm(tf32, static_cast<const float*>(A.mem.get()), static_cast<const float*>(B.mem.get()),
               static_cast<float*>(C.mem.get()), M, N, K);
  };
}

std::function<void()> bind_gemm_ex(GpuSide& w, const wire::BaselineRequest& req, bool b_transposed,
                                   cublasComputeType_t compute) {
  Buffer &A = w.operand(req, "A"), &B = w.operand(req, "B"), &C = w.operand(req, "C");
  if (A.spec.type != B.spec.type)
    throw CudaFailure{cudaErrorInvalidValue, req.library + ": A and B must have one type"};
  if (compute == CUBLAS_COMPUTE_32F_FAST_TF32 &&
      (A.spec.type != ElementType::f32 || C.spec.type != ElementType::f32))
    throw CudaFailure{cudaErrorInvalidValue, req.library + " takes float buffers"};
  const cudaDataType ab = cuda_data_type(A.spec.type, req.library),
                     c = cuda_data_type(C.spec.type, req.library);
  const Cublas& blas = w.cublas();
  const int M = scalar(req, "M"), N = scalar(req, "N"), K = scalar(req, "K");
  return [&blas, &A, &B, &C, ab, c, M, N, K, b_transposed, compute] {
    blas.gemm_ex(A.mem.get(), B.mem.get(), C.mem.get(), ab, c, M, N, K, b_transposed, compute);
  };
}

std::function<void()> bind_copy(GpuSide& w, const wire::BaselineRequest& req) {
  Buffer& src = w.operand(req, "src");
  std::size_t bytes = src.bytes();
  void* dst = nullptr;
  if (req.buffers.count("dst")) {
    Buffer& d = w.operand(req, "dst");
    bytes = std::min(bytes, d.bytes());
    dst = d.mem.get();
  } else {
    dst = w.scratch_copy(bytes).get();
  }
  const void* from = src.mem.get();
  cudaStream_t stream = w.stream();
  return [=] { TILETUNE_CUDA_CHECK(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyDeviceToDevice, stream)); };
}

// The binders of the library routines; tiletune/library_calls.hpp registers each call with its operands and
// the routine that runs it.
std::function<void()> bind_library_call(GpuSide& w, const wire::BaselineRequest& req,
                                        const LibraryBinding& b) {
  switch (b.routine) {
    case LibraryRoutine::cublas_sgemm:
      if (b.b_transposed)
        throw CudaFailure{cudaErrorInvalidValue, req.library + ": cublas_sgemm has no transposed B"};
      return bind_sgemm(w, req, b.tf32);
    case LibraryRoutine::cublas_gemm_ex:
      return bind_gemm_ex(w, req, b.b_transposed, b.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
    case LibraryRoutine::device_copy:
      return bind_copy(w, req);
  }
  throw CudaFailure{cudaErrorInvalidValue, "unknown library routine of '" + req.library + "'"};
}

wire::Reply GpuSide::baseline(const json& m) {
  const auto req = m.get<wire::BaselineRequest>();
  const LibraryCallInfo* info = find_library_call(req.library);
  if (!info)
    return failure("launch_failed", {cudaErrorInvalidValue, "unknown library '" + req.library + "'"});
  std::function<void()> run;
  std::vector<Buffer*> checked;
  try {
    run = bind_library_call(*this, req, info->binding);
    if (!info->output.empty()) checked.push_back(&operand(req, info->output));
  } catch (const CudaFailure& f) {
    return failure("launch_failed", f);
  }
  wire::Reply r = timed_loop(req.reps, checked, run);
  if (info->binding.routine == LibraryRoutine::device_copy) {
    const Buffer& src = operand(req, "src");
    const std::size_t dst = req.buffers.count("dst") ? operand(req, "dst").bytes() : src.bytes();
    r.bytes = 2.0 * static_cast<double>(std::min(src.bytes(), dst));
  }
  return r;
}

wire::Reply request_failed(std::string error, bool fatal) {
  wire::Reply r;
  r.ok = false;
  r.error = std::move(error);
  r.fatal = fatal;
  return r;
}

bool write_line(int fd, const json& j) {
  const std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
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
  std::unique_ptr<GpuSide> worker;
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
    wire::Reply reply;
    try {
      const json m = json::parse(line);
      const std::string op = m.at("op").get<std::string>();
      if (op == "quit") return 0;
      if (!worker) worker = std::make_unique<GpuSide>(gpu);
      if (op == "hello")
        reply = worker->hello();
      else if (op == "setup")
        reply = worker->setup(m);
      else if (op == "measure")
        reply = worker->measure(m);
      else if (op == "baseline")
        reply = worker->baseline(m);
      else
        reply = request_failed("unknown op '" + op + "'", false);
    } catch (const CudaFailure& f) {
      reply = request_failed(f.text, is_sticky(f.code));
    } catch (const std::exception& e) {
      reply = request_failed(e.what(), false);
    }
    if (!write_line(out_fd, json(reply)) || reply.fatal) return reply.fatal ? 3 : 0;
  }
}

}  // namespace tiletune
