// Setup kernels: read from family.json with one-line errors, part of the template hash, compiled into the
// setup request in the order they run.
#include <gtest/gtest.h>

#include <fstream>

#include "../test_paths.hpp"
#include "requests.hpp"
#include "tiletune/device.hpp"
#include "tiletune/family.hpp"

using namespace tiletune;

namespace {

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// Slopes of a polyline: the kernel reads the vertices, the reference the slopes a setup kernel derived.
const char* kSlopes = R"J({
  "name": "slopes", "source": "slopes.cu", "kernel": "slopes",
  "problem": {"dims": ["n"], "default_sizes": ["1000"]},
  "parameters": {"B": {"values": [32, 64], "default": 64}},
  "launch": {"block": ["B"], "grid": ["ceil_div(n, B)"]},
  "arguments": [{"name": "v", "buffer": "float", "count": "n + 1", "role": "input"},
                {"name": "d", "buffer": "float", "count": "n", "role": "input"},
                {"name": "y", "buffer": "float", "count": "n", "role": "output"},
                {"name": "n", "scalar": "int", "value": "n"}],
  "metric": {"unit": "GB/s", "work": "8 * n"},
  "setup": SETUP,
  "reference": {"kernel": "slopes_ref.cu", "block": ["64"], "grid": ["ceil_div(n, 64)"],
                "arguments": ["d", "y", "n"]}
})J";

const char* kGoodSetup =
    R"X([{"kernel": "derive.cu", "arguments": ["v", "d", {"scalar": "int", "value": "n"}],
         "block": ["128"], "grid": ["ceil_div(n, 128)"]
}])X";

std::filesystem::path slopes_family(const std::filesystem::path& root, const std::string& setup,
                                    const std::string& derive_source) {
  std::string json = kSlopes;
  json.replace(json.find("SETUP"), 5, setup);
  const auto dir = root / "slopes";
  write(dir / "family.json", json);
  write(dir / "slopes.cu",
        "extern \"C\" __global__ void slopes(const float* v, const float* d, float* y, int n) {\n"
        "  int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = 2 * (v[i + 1] - v[i]); }\n");
  write(dir / "slopes_ref.cu",
        "extern \"C\" __global__ void slopes_ref(const float* d, double* y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0 * d[i]; }\n");
  write(dir / "derive.cu", derive_source);
  return dir;
}

const char* kDerive =
    "extern \"C\" __global__ void derive(const float* v, float* d, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] = v[i + 1] - v[i]; }\n";

std::string setup_error(const std::string& setup) {
  test::TempDir dir;
  try {
    load_families({slopes_family(dir.path, setup, kDerive)});
    return "";
  } catch (const FamilyError& e) {
    return e.what();
  }
}

}  // namespace

TEST(SetupKernel, IsReadAndCompiledIntoTheSetupRequest) {
  test::TempDir dir;
  const KernelFamily f = load_families({slopes_family(dir.path, kGoodSetup, kDerive)}).at(0);
  ASSERT_EQ(f.setup.size(), 1u);
  EXPECT_EQ(f.setup[0].kernel.name, "derive");
  const DeviceLimits h100 = load_profile("h100");
  const CompileCache cache(dir.path / "cache");
  const auto req = setup_request(f, f.make_problem({1000}, {}), h100, cache, MeasureSettings{});
  ASSERT_EQ(req.setup_kernels.size(), 1u);
  const auto& k = req.setup_kernels[0];
  EXPECT_EQ(k.kernel, "derive");
  EXPECT_TRUE(std::filesystem::exists(k.cubin_path));
  EXPECT_EQ(k.block[0], 128);
  EXPECT_EQ(k.grid[0], 8);  // ceil(1000 / 128)
  ASSERT_EQ(k.args.size(), 3u);
  EXPECT_EQ(k.args[0].buffer, "v");
  EXPECT_EQ(k.args[1].buffer, "d");
  EXPECT_EQ(k.args[2].integer, 1000);
}

TEST(SetupKernel, ItsSourceIsPartOfTheTemplateHash) {
  test::TempDir a, b;
  const auto fa = load_families({slopes_family(a.path, kGoodSetup, kDerive)}).at(0);
  const auto fb = load_families({slopes_family(b.path, kGoodSetup, std::string(kDerive) + "// v2\n")}).at(0);
  EXPECT_NE(fa.template_hash, fb.template_hash);
}

TEST(SetupKernel, MalformedSetupGivesOneLineNamingTheField) {
  const auto expect = [](const std::string& setup, const std::string& part) {
    const std::string e = setup_error(setup);
    EXPECT_NE(e.find(part), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  expect(R"({"kernel": "derive.cu"})", "'setup' must be a list");
  expect(R"([{"kernel": "derive.cu", "arguments": ["v"], "block": ["1"], "grid": ["1"], "shared": 4}])",
         "setup[0]: unknown field 'shared'");
  expect(R"([{"kernel": "nope.cu", "arguments": ["v"], "block": ["1"], "grid": ["1"]}])",
         "setup[0].kernel: cannot read");
  expect(R"([{"kernel": "../derive.cu", "arguments": ["v"], "block": ["1"], "grid": ["1"]}])",
         "must be a file name in the family's folder");
  expect(R"([{"kernel": "derive.cu", "arguments": ["v", "w"], "block": ["1"], "grid": ["1"]}])",
         "setup[0].arguments: 'w' is not one of the family's arguments");
  expect(R"([{"kernel": "derive.cu", "arguments": ["v", "y"], "block": ["1"], "grid": ["1"]}])",
         "setup[0].arguments: 'y' is an output");
  expect(R"([{"kernel": "derive.cu", "arguments": ["v"], "grid": ["1"]}])", "block");
  expect(R"([{"kernel": "derive.cu", "arguments": ["v"], "block": ["Q"], "grid": ["1"]}])",
         "setup kernel derive block");
  EXPECT_EQ(setup_error(kGoodSetup), "");
}

TEST(SetupKernel, OneThatDoesNotCompileStopsTheSweepBeforeMeasuring) {
  test::TempDir dir;
  const auto f = load_families({slopes_family(dir.path, kGoodSetup, "this is not CUDA")}).at(0);
  const CompileCache cache(dir.path / "cache");
  try {
    setup_request(f, f.make_problem({1000}, {}), load_profile("h100"), cache, MeasureSettings{});
    ADD_FAILURE();
  } catch (const SweepError& e) {
    EXPECT_NE(std::string(e.what()).find("setup kernel derive.cu does not compile"), std::string::npos)
        << e.what();
  }
}
