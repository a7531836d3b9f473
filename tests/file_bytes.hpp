// A whole file's bytes, for the tests: what a command wrote, a database to compare or damage, a family to
// edit.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tiletune::test {

// The file's bytes as they are; "" where it cannot be read.
inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace tiletune::test
