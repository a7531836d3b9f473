// Where tests find the tiletune binary, the built-in families and the fixtures, both in the build tree and
// in an installed prefix (bin/, share/tiletune/, libexec/tiletune/tests/).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tiletune::test {

inline std::filesystem::path self_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path();
}

inline std::filesystem::path first_existing(std::initializer_list<std::filesystem::path> options) {
  for (const auto& p : options)
    if (!p.empty() && std::filesystem::exists(p)) return p;
  return {};
}

inline std::filesystem::path tiletune_binary() {
  const char* env = std::getenv("TILETUNE_BIN");
  return first_existing({env ? env : "", self_dir() / "../../../bin/tiletune", TILETUNE_BUILD_BINARY});
}

inline std::filesystem::path templates_dir() {
  const char* env = std::getenv("TILETUNE_TEMPLATES");
  return first_existing(
      {env ? env : "", self_dir() / "../../../share/tiletune/kernel_templates", TILETUNE_SOURCE_TEMPLATES});
}

inline std::filesystem::path fixtures_dir() {
  const char* env = std::getenv("TILETUNE_FIXTURES");
  return first_existing(
      {env ? env : "", self_dir() / "../../../share/tiletune/test_fixtures", TILETUNE_SOURCE_FIXTURES});
}

// The reference spaces replay measures strategies on (bench/spaces).
inline std::filesystem::path spaces_dir() {
  const char* env = std::getenv("TILETUNE_SPACES");
  return first_existing({env ? env : "", TILETUNE_SOURCE_SPACES});
}

// A fresh folder under the system temp dir, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tiletune-test-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace tiletune::test
