#include "tiletune/loaded_kernel.hpp"

#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "tiletune/cluster_launch.hpp"

namespace tiletune {

namespace {

void check(cudaError_t e, const std::string& call) {
  if (e != cudaSuccess) throw LaunchError(e, cuda_error_text(e, call));
}

std::string read_cubin(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LaunchError(cudaErrorInvalidValue, "cannot read " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

dim3 to_dim3(const std::array<std::int64_t, 3>& v) {
  return dim3(static_cast<unsigned>(v[0]), static_cast<unsigned>(v[1]), static_cast<unsigned>(v[2]));
}

}  // namespace

std::string cuda_error_text(cudaError_t e, const std::string& call) {
  return call + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
}

Module::Module(const std::string& cubin) {
  check(cudaLibraryLoadData(&lib_, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
        "cudaLibraryLoadData");
}

Module Module::from_file(const std::string& path) { return Module(read_cubin(path)); }

Module::Module(Module&& o) noexcept : lib_(std::exchange(o.lib_, nullptr)) {}

Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (lib_) cudaLibraryUnload(lib_);
    lib_ = std::exchange(o.lib_, nullptr);
  }
  return *this;
}

Module::~Module() {
  if (lib_) cudaLibraryUnload(lib_);
}

cudaKernel_t Module::kernel(const std::string& name) const {
  cudaKernel_t k = nullptr;
  check(cudaLibraryGetKernel(&k, lib_, name.c_str()), "cudaLibraryGetKernel(" + name + ")");
  return k;
}

void* Module::global(const std::string& name, std::size_t* bytes) const {
  void* p = nullptr;
  check(cudaLibraryGetGlobal(&p, bytes, lib_, name.c_str()), "cudaLibraryGetGlobal(" + name + ")");
  return p;
}

LoadedKernel::LoadedKernel(const std::string& cubin, const wire::KernelSpec& spec)
    : module_(cubin),
      kernel_(module_.kernel(spec.kernel)),
      grid_(to_dim3(spec.grid)),
      block_(to_dim3(spec.block)),
      cluster_(to_dim3(spec.cluster)),
      dynamic_smem_(static_cast<std::size_t>(spec.dynamic_smem)) {
  cudaFuncAttributes attrs{};
  const void* k = reinterpret_cast<const void*>(kernel_);
  check(cudaFuncGetAttributes(&attrs, k), "cudaFuncGetAttributes");
  if (dynamic_smem_ + attrs.sharedSizeBytes > 48 * 1024)
    check(
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dynamic_smem_)),
        "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
}

LoadedKernel LoadedKernel::from_file(const wire::KernelSpec& spec) {
  return LoadedKernel(read_cubin(spec.cubin_path), spec);
}

cudaError_t LoadedKernel::launch(void** args, cudaStream_t stream) const {
  return launch_kernel(reinterpret_cast<const void*>(kernel_), grid_, block_, cluster_, args, dynamic_smem_,
                       stream);
}

ArgumentSlots::ArgumentSlots(std::size_t count) : storage_(count), pointers_(count) {
  for (std::size_t i = 0; i < count; ++i) pointers_[i] = &storage_[i];
}

void ArgumentSlots::set_pointer(std::size_t i, const void* pointer) {
  std::memcpy(&storage_[i], &pointer, sizeof pointer);
}

void ArgumentSlots::set_scalar(std::size_t i, std::uint64_t bits) {
  std::memcpy(&storage_[i], &bits, sizeof bits);
}

}  // namespace tiletune
