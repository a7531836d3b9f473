// Running the measured kernel from an application: the best stored configuration of a family for the
// current GPU and a problem, compiled exactly as its sweep compiled it (or its CUBIN taken from the compile
// cache), launched with the caller's device pointers on the caller's stream. Talks to the GPU through the
// CUDA runtime only.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
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
  // Whether the CUBIN came from the compile cache, and NVRTC's time when it was compiled.
  bool from_cache() const { return from_cache_; }
  double compile_ms() const { return compile_ms_; }
  std::array<unsigned, 3> grid() const { return grid_; }
  std::array<unsigned, 3> block() const { return block_; }
  std::size_t dynamic_smem() const { return dynamic_smem_; }
  // The family's buffers, in the kernel's argument order.
  const std::vector<std::string>& buffers() const { return buffer_names_; }

  // Launches on `stream` with a device pointer for each of the family's buffers, by name; the problem's
  // scalars are the kernel's own. Throws RuntimeError when a buffer is missing or the launch is refused.
  void launch(const std::map<std::string, void*>& buffers, cudaStream_t stream = nullptr) const;
  // Copies `bytes` bytes into a __constant__ symbol the family declares (a convolution's mask, say).
  void set_constant(const std::string& name, const void* data, std::size_t bytes) const;

 private:
  friend class Runtime;
  Kernel() = default;

  struct Arg {
    std::string buffer;  // non-empty: the caller's buffer of this name
    std::uint64_t bits = 0;
  };
  std::string family_;
  ProblemKey problem_;
  Lookup lookup_;
  bool from_cache_ = false;
  double compile_ms_ = 0;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
  std::array<unsigned, 3> grid_{1, 1, 1}, block_{1, 1, 1};
  std::size_t dynamic_smem_ = 0;
  std::vector<Arg> args_;
  std::vector<std::string> buffer_names_, constant_names_;
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
  // tuned it is the family's defaults, and match() says so.
  const Kernel& kernel(const std::string& family, const std::string& size, const std::string& args = "");

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tiletune::runtime
