#include "tiletune/dynamic_library.hpp"

#include <dlfcn.h>

#include <utility>

namespace tiletune {

DynamicLibrary::DynamicLibrary(const std::vector<std::string>& names, bool close) : close_(close) {
  for (const auto& n : names)
    if ((handle_ = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) {
      name_ = n;
      return;
    }
  const char* why = dlerror();
  name_ = names.empty() ? std::string() : names.front();
  error_ = name_ + ": " + (why ? why : "not found");
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ && close_) dlclose(handle_);
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)),
      close_(o.close_),
      name_(std::move(o.name_)),
      error_(std::move(o.error_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& o) noexcept {
  if (this != &o) {
    if (handle_ && close_) dlclose(handle_);
    handle_ = std::exchange(o.handle_, nullptr);
    close_ = o.close_;
    name_ = std::move(o.name_);
    error_ = std::move(o.error_);
  }
  return *this;
}

void* DynamicLibrary::address(const char* symbol) const { return handle_ ? dlsym(handle_, symbol) : nullptr; }

}  // namespace tiletune
