// A shared library opened at run time rather than linked (NVRTC, XGBoost, cuBLAS, NVML), so that tiletune
// starts, and says why, where one is missing: the first of its names that opens, and its functions by name.
#pragma once

#include <string>
#include <vector>

namespace tiletune {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  // Opens the first of `names` that the dynamic loader finds. Otherwise ok() is false and error() says why:
  // the first name and the loader's reason. A library stays loaded for the process unless `close` is set.
  explicit DynamicLibrary(const std::vector<std::string>& names, bool close = false);
  ~DynamicLibrary();
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }  // the one opened, else the first tried

  // The address of `symbol`, nullptr when the library lacks it.
  void* address(const char* symbol) const;
  // Sets `fn` to the function `symbol`; false when the library lacks it.
  template <typename F>
  bool get(F& fn, const char* symbol) const {
    fn = reinterpret_cast<F>(address(symbol));
    return fn != nullptr;
  }

 private:
  void* handle_ = nullptr;
  bool close_ = false;
  std::string name_, error_;
};

}  // namespace tiletune
