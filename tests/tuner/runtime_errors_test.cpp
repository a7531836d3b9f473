// tiletune::runtime's refusals that need no GPU: each is a RuntimeError of one line, and the family and the
// problem are checked before the GPU is asked for.
#include <gtest/gtest.h>

#include "../test_paths.hpp"
#include "tiletune/runtime.hpp"

using namespace tiletune;
using tiletune::test::TempDir;

namespace {

std::string refusal(runtime::Runtime& rt, const std::string& family, const std::string& size,
                    const std::string& args = "") {
  try {
    rt.kernel(family, size, args);
  } catch (const runtime::RuntimeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RuntimeErrors, AreOneLineAndNameWhatIsWrong) {
  TempDir dir;
  runtime::RuntimeOptions options;
  options.database = dir.path / "missing.db";
  options.family_roots = {test::fixtures_dir() / "families"};
  options.cache = dir.path / "cache";
  runtime::Runtime rt(options);
  const std::vector<std::tuple<std::string, std::string, std::string, std::string>> cases = {
      {"nope", "10x10x10", "", "unknown family 'nope' (known: "},
      {"gemm_tiled", "0x10x10", "", "gemm_tiled: "},
      {"gemm_tiled", "10x10", "", "gemm_tiled: "},
      {"gemm_tiled", "10xx10", "", "gemm_tiled: "},
      {"conv1d_tiled", "1000", "mask_width=x", "conv1d_tiled: "},
  };
  for (const auto& [family, size, args, expected] : cases) {
    const std::string e = refusal(rt, family, size, args);
    EXPECT_EQ(e.rfind(expected, 0), 0u) << family << " " << size << ": '" << e << "'";
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // A good request: with no GPU it says so; with one, the database that is not there.
  const std::string e = refusal(rt, "gemm_tiled", "64x64x64");
  EXPECT_TRUE(e.find("no CUDA GPU") != std::string::npos || e.find("missing.db") != std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(dir.path / "missing.db"));
}
