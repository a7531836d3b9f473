// A configuration's kernel loaded from its CUBIN, as the worker measures it and the runtime launches it: the
// module it lives in, the shared-memory opt-in, its argument slots and the launch (with clusters where the
// launch description asks for them). One implementation for both, so that what is launched is what was
// measured.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tiletune/tensor_map.hpp"
#include "tiletune/worker_protocol.hpp"

namespace tiletune {

// A CUDA call of the launch layer that failed, with its error.
class LaunchError : public std::runtime_error {
 public:
  LaunchError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// "call: cudaErrorName: what it means".
std::string cuda_error_text(cudaError_t e, const std::string& call);

// One loaded module (a CUBIN), unloaded when it goes.
class Module {
 public:
  Module() = default;
  // Throws LaunchError.
  explicit Module(const std::string& cubin);
  static Module from_file(const std::string& path);
  Module(Module&& o) noexcept;
  Module& operator=(Module&& o) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();

  // Throws LaunchError naming the symbol.
  cudaKernel_t kernel(const std::string& name) const;
  // A __constant__ or __device__ symbol's address and size.
  void* global(const std::string& name, std::size_t* bytes) const;

 private:
  cudaLibrary_t lib_ = nullptr;
};

// A kernel of a loaded module with its launch geometry, opted into the dynamic shared memory it asks for
// past 48 KB (static and dynamic together).
class LoadedKernel {
 public:
  LoadedKernel() = default;
  // Loads `cubin` and looks up spec.kernel. Throws LaunchError naming the step that failed.
  LoadedKernel(const std::string& cubin, const wire::KernelSpec& spec);
  // The same, reading spec.cubin_path.
  static LoadedKernel from_file(const wire::KernelSpec& spec);

  cudaKernel_t kernel() const { return kernel_; }
  const Module& module() const { return module_; }
  dim3 grid() const { return grid_; }
  dim3 block() const { return block_; }
  dim3 cluster() const { return cluster_; }
  std::size_t dynamic_smem() const { return dynamic_smem_; }
  bool clustered() const { return cluster_.x * cluster_.y * cluster_.z > 1; }
  // The launch call: cudaLaunchKernelExC for clusters, cudaLaunchKernel otherwise (for error messages).
  const char* launch_call() const { return clustered() ? "cudaLaunchKernelExC" : "cudaLaunchKernel"; }

  // Launches with one pointer per argument (see ArgumentSlots); returns the launch's error.
  cudaError_t launch(void** args, cudaStream_t stream) const;

 private:
  Module module_;
  cudaKernel_t kernel_ = nullptr;
  dim3 grid_, block_, cluster_;
  std::size_t dynamic_smem_ = 0;
};

// One slot per kernel argument, each of a tensor map's size and alignment (128 bytes): enough for every
// pointer, scalar and tensor map, and where they stay put while the kernel runs.
class ArgumentSlots {
 public:
  ArgumentSlots() = default;
  explicit ArgumentSlots(std::size_t count);
  ArgumentSlots(ArgumentSlots&&) noexcept = default;  // the slots stay where they are
  ArgumentSlots& operator=(ArgumentSlots&&) noexcept = default;
  ArgumentSlots(const ArgumentSlots&) = delete;
  ArgumentSlots& operator=(const ArgumentSlots&) = delete;
  std::size_t size() const { return storage_.size(); }
  void set_pointer(std::size_t i, const void* pointer);
  void set_scalar(std::size_t i, std::uint64_t bits);
  EncodedTensorMap& tensor_map(std::size_t i) { return storage_[i]; }
  void** data() { return pointers_.data(); }

 private:
  std::vector<EncodedTensorMap> storage_;
  std::vector<void*> pointers_;
};

}  // namespace tiletune
