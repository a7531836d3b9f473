// Shared pieces of the libFuzzer targets: a scratch folder for the process, and file helpers.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <typeinfo>

namespace tiletune::fuzz {

// The input as text.
inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A folder of this process's own, on tmpfs where there is one (the targets write files at every input),
// removed when the process exits normally. A crash leaves it behind, with the files of the crashing input.
inline const std::filesystem::path& scratch_dir() {
  // Never destroyed, so that the exit handler can still read it.
  static const std::filesystem::path* const dir = [] {
    std::error_code ec;
    std::filesystem::path base = "/dev/shm";
    if (const char* env = std::getenv("TILETUNE_FUZZ_TMP"); env && *env)
      base = env;
    else if (!std::filesystem::is_directory(base, ec) || ::access(base.c_str(), W_OK) != 0)
      base = std::filesystem::temp_directory_path();
    auto* path = new std::filesystem::path(base / ("tiletune-fuzz-" + std::to_string(::getpid())));
    std::filesystem::remove_all(*path, ec);
    std::filesystem::create_directories(*path);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return path;
  }();
  return *dir;
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();  // the harness's own failure, not the target's
}

// With TILETUNE_FUZZ_STRICT=1, an exception of a type that the function called does not document (a JSON
// library's type_error out of a family loader, say) is a finding too; by default it is accepted, as the
// command line catches and prints it in one line like any other error.
inline bool strict() {
  static const bool value = [] {
    const char* env = std::getenv("TILETUNE_FUZZ_STRICT");
    return env && std::string_view(env) == "1";
  }();
  return value;
}

inline void unexpected_exception(const char* call, const std::exception& e) {
  if (!strict()) return;
  std::fprintf(stderr, "%s threw an undocumented %s: %s\n", call, typeid(e).name(), e.what());
  std::abort();
}

}  // namespace tiletune::fuzz
