// Running the measured kernel from an application: the best stored configuration of a family for the
// current GPU and a problem, compiled exactly as its sweep compiled it (or its CUBIN taken from the compile
// cache, or from a bundle written by `tiletune export --format bundle`), launched with the caller's device
// pointers on the caller's stream. Talks to the GPU through the CUDA runtime only; NVRTC is opened only when
// something must be compiled, so an application that runs a bundle needs no NVRTC.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tiletune/client.hpp"
#include "tiletune/records.hpp"

namespace tiletune {
struct DeviceLimits;
struct KernelFamily;
class LoadedKernel;
namespace wire {
struct KernelSpec;
}
}  // namespace tiletune

namespace tiletune::runtime {

// Every failure of the runtime: one line that says what and where (no GPU, an unknown family, a database
// that cannot be read, a template that changed since it was tuned, a configuration that cannot run on this
// GPU or problem, a compile or launch error, a buffer the caller did not give).
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RuntimeOptions {
  std::filesystem::path database = "tiletune.db";
  // Folders of families; empty: the built-in ones.
  std::vector<std::filesystem::path> family_roots;
  // The compile cache the sweeps used; empty: $TILETUNE_CACHE, else ~/.cache/tiletune (as the command).
  std::filesystem::path cache;
  // A bundle folder: configurations, families and CUBINs are taken from it alone; no database is read and
  // nothing is compiled. Problems the bundle does not hold get its nearest one (match() says so).
  std::filesystem::path bundle;
  // Where to record each (family, device, problem) served without an exact match, once each, for
  // `tiletune sweep --captured`; empty: $TILETUNE_CAPTURE ("1": DATABASE.capture.jsonl beside the database,
  // else that path), and no capture where that is unset. Format: tiletune/capture.hpp.
  std::filesystem::path capture;
  // With capture on, also save the input and inout buffers and __constant__ inputs of the first launch of
  // each newly captured problem (copied from the GPU before the kernel runs) as .npy files in
  // CAPTURE.inputs/, named in its capture line, for `sweep --captured` to tune on; false:
  // $TILETUNE_CAPTURE_INPUTS=1 turns it on.
  bool capture_inputs = false;
};

// One of the family's buffers, as its kernel expects it for the problem.
struct BufferInfo {
  std::string name;
  std::string type;  // "float", "double", "half", "bfloat16", "int8", "uint8", "int32", "uint32", "int64"
  std::size_t element_bytes = 0;
  std::uint64_t count = 0;  // elements the kernel may touch
  std::string role;         // "input", "output" or "inout"
};

// One configuration of a family, loaded on one GPU for one problem. Launching is thread-safe.
class Kernel {
 public:
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel();

  const std::string& family() const { return family_; }
  const ProblemKey& problem() const { return problem_; }
  const Params& params() const { return lookup_.params; }
  // How the configuration was found (exact, nearest size, same architecture, or the family's defaults).
  Match match() const { return lookup_.match; }
  const std::string& message() const { return lookup_.message; }
  // The sweep's median for the problem it was tuned for, when it was measured.
  std::optional<double> stored_median_ms() const { return lookup_.median_ms; }
  // The loaded kernel, for launching it some other way (a CUDA graph, cudaLaunchKernelEx): with cluster()
  // where that is more than one block; a family with tensor maps is best launched through launch().
  cudaKernel_t handle() const { return kernel_; }
  // Where the CUBIN came from: "bundle", "cache" (the compile cache) or "compiled" (NVRTC, just now);
  // NVRTC's time when it was compiled; the wall time kernel() took to find, get and load it.
  const std::string& source() const { return source_; }
  bool from_cache() const { return source_ == "cache"; }
  double compile_ms() const { return compile_ms_; }
  double load_ms() const { return load_ms_; }
  std::array<unsigned, 3> grid() const { return grid_; }
  std::array<unsigned, 3> block() const { return block_; }
  // The thread block cluster it is launched with; 1 x 1 x 1: none.
  std::array<unsigned, 3> cluster() const { return cluster_; }
  std::size_t dynamic_smem() const { return dynamic_smem_; }
  // The family's buffers, in the kernel's argument order, with their types and sizes for this problem.
  const std::vector<std::string>& buffers() const { return buffer_names_; }
  const std::vector<BufferInfo>& buffer_info() const { return buffer_info_; }
  // The __constant__ symbols the family declares (set them with set_constant before launching).
  const std::vector<std::string>& constants() const { return constant_names_; }
  const std::vector<BufferInfo>& constant_info() const { return constant_info_; }  // role is empty

  // Launches on `stream` with a device pointer for each of the family's buffers, by name; the problem's
  // scalars are the kernel's own, and its tensor maps are encoded over the buffers' pointers (once per
  // pointer: a launch with pointers seen lately reuses their maps). Throws RuntimeError when a buffer is
  // missing, a tensor map cannot be encoded over its pointer, or the launch is refused.
  void launch(const std::map<std::string, void*>& buffers, cudaStream_t stream = nullptr) const;
  // The same with the pointers in buffers() order: no lookup by name (the Python binding's path).
  void launch(const std::vector<void*>& buffers, cudaStream_t stream = nullptr) const;
  // Copies `bytes` bytes into a __constant__ symbol the family declares (a convolution's mask, say), ordered
  // on `stream` like a launch. The symbol belongs to this kernel's module, which serves every caller of this
  // family and problem on this GPU: set it before the launches that read it, on their stream.
  void set_constant(const std::string& name, const void* data, std::size_t bytes,
                    cudaStream_t stream = nullptr) const;
  // The CUDA device (ordinal) it was loaded on: launches need it to be the current device.
  int device() const { return device_; }

 private:
  friend class Runtime;
  Kernel() = default;

  struct Arg {
    std::string buffer;  // non-empty: the caller's buffer of this name
    std::uint64_t bits = 0;
    int tensor_map = -1;  // >= 0: the tensor map of this index
  };
  struct TensorMaps;      // the tensor maps' values and the maps encoded lately, behind a lock
  struct PendingCapture;  // the capture line the first launch writes, with the inputs it was given
  void save_capture(const std::vector<void*>& buffers, cudaStream_t stream) const;
  // Loads the CUBIN and binds what `spec` describes: the arguments (buffers by name, scalars by value,
  // tensor maps encoded at launch), the constants, and the sizes of both for this problem.
  void load(const KernelFamily& family, const std::string& cubin, const wire::KernelSpec& spec,
            const std::string& config);
  void describe_buffers(const KernelFamily& family, const std::string& config);
  std::string family_;
  ProblemKey problem_;
  Lookup lookup_;
  std::string source_;
  int device_ = 0;
  double compile_ms_ = 0, load_ms_ = 0;
  std::unique_ptr<LoadedKernel> loaded_;  // the module, the opt-in and the launch
  cudaKernel_t kernel_ = nullptr;
  std::array<unsigned, 3> grid_{1, 1, 1}, block_{1, 1, 1}, cluster_{1, 1, 1};
  std::size_t dynamic_smem_ = 0;
  std::vector<Arg> args_;
  std::unique_ptr<TensorMaps> tensor_maps_;          // null: none
  std::unique_ptr<PendingCapture> pending_capture_;  // null: nothing to capture at launch
  std::vector<std::string> buffer_names_, constant_names_;
  std::vector<BufferInfo> buffer_info_, constant_info_;
};

class Runtime {
 public:
  // Reads nothing yet: the database and the families are opened by the first kernel().
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The family's best configuration for the current CUDA device and the problem (size "4096x4096x4096",
  // arguments "mask_width=5"), loaded once per device, family and problem; thread-safe. Where nothing was
  // tuned it is the family's defaults, and match() says so. Throws RuntimeError (one line) on any failure.
  const Kernel& kernel(const std::string& family, const std::string& size, const std::string& args = "");

 private:
  struct State;
  void record_capture(Kernel& k, const std::string& family, const DeviceLimits& device,
                      const ProblemKey& problem);
  std::unique_ptr<State> state_;
};

}  // namespace tiletune::runtime
