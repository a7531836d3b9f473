#include <gtest/gtest.h>

#include <fstream>

#include "../test_paths.hpp"
#include "tiletune/family.hpp"

using namespace tiletune;

namespace {

std::vector<KernelFamily> builtin() { return load_families({tiletune::test::templates_dir()}); }

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

const char* kGoodJson = R"J({
  "name": "tiny", "source": "tiny.cu", "kernel": "tiny",
  "problem": {"dims": ["n"], "default_sizes": ["100"]},
  "parameters": {"B": {"values": [32, 64], "default": 64}},
  "launch": {"block": ["B"], "grid": ["ceil_div(n, B)"]},
  "arguments": [{"name": "in", "buffer": "float", "count": "n", "role": "input"},
                {"name": "out", "buffer": "float", "count": "n", "role": "output"},
                {"name": "n", "scalar": "int", "value": "n"}],
  "metric": {"unit": "GB/s", "work": "8 * n"},
  "reference": {"kind": "conv1d"}
})J";

// Loads a family made from kGoodJson with one substitution; returns the error message ("" if it loaded).
std::string load_error(const std::string& from, const std::string& to) {
  test::TempDir dir;
  std::string json = kGoodJson;
  if (!from.empty()) {
    const auto at = json.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    json.replace(at, from.size(), to);
  }
  write(dir.path / "tiny/family.json", json);
  write(dir.path / "tiny/tiny.cu", "extern \"C\" __global__ void tiny() {}\n");
  try {
    load_family(dir.path / "tiny");
    return "";
  } catch (const FamilyError& e) {
    return e.what();
  }
}

}  // namespace

TEST(Family, BuiltinFamiliesLoad) {
  const auto fams = builtin();
  std::set<std::string> names;
  for (const auto& f : fams) names.insert(f.name);
  for (const char* want : {"gemm_naive", "gemm_tiled", "conv1d_naive", "conv1d_tiled"}) EXPECT_TRUE(names.count(want)) << want;
  const auto& tiled = find_family(fams, "gemm_tiled");
  EXPECT_EQ(tiled.dims, (std::vector<std::string>{"M", "N", "K"}));
  ASSERT_EQ(tiled.parameters.size(), 3u);
  EXPECT_EQ(tiled.parameters[2].name, "TILE_WIDTH");
  EXPECT_EQ(tiled.parameters[2].values, (std::vector<std::int64_t>{4, 8, 12, 16, 20, 24, 32, 48, 64}));
  EXPECT_EQ(tiled.template_hash.size(), 16u);
}

TEST(Family, SourceForDefinesEveryParameterAheadOfTheTemplate) {
  const auto fams = builtin();
  const auto& f = find_family(fams, "gemm_tiled");
  const std::string src = f.source_for({{"TILE_WIDTH", 32}, {"BLOCK_Y", 8}, {"TILE_K", 32}});
  EXPECT_EQ(src.find("#define BLOCK_Y 8\n"), 0u);
  EXPECT_NE(src.find("#define TILE_WIDTH 32\n"), std::string::npos);
  EXPECT_NE(src.find("#line 1 \"gemm_tiled.cu\""), std::string::npos);
}

TEST(Family, ProblemsAreCheckedAndDefaultsFilled) {
  const auto fams = builtin();
  const auto& conv = find_family(fams, "conv1d_tiled");
  const ProblemKey p = conv.make_problem({1000}, {});
  EXPECT_EQ(p.args.at("mask_width"), 5);
  EXPECT_THROW(conv.make_problem({1000}, {{"mask_width", 4}}), FamilyError);   // even
  EXPECT_THROW(conv.make_problem({1000}, {{"mask_width", 65}}), FamilyError);  // too wide
  EXPECT_THROW(conv.make_problem({0}, {}), FamilyError);
  EXPECT_THROW(conv.make_problem({10, 10}, {}), FamilyError);
  EXPECT_THROW(conv.make_problem({10}, {{"nonsense", 1}}), FamilyError);
  const auto& gemm = find_family(fams, "gemm_tiled");
  EXPECT_THROW(gemm.make_problem({10, 10}, {}), FamilyError);
  EXPECT_THROW(gemm.make_problem({10, -1, 10}, {}), FamilyError);
}

TEST(Family, UnknownFamilyListsTheKnownOnes) {
  const auto fams = builtin();
  try {
    find_family(fams, "gemm_fast");
    FAIL();
  } catch (const FamilyError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown family 'gemm_fast'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("gemm_tiled"), std::string::npos);
  }
}

TEST(Family, MalformedDescriptionsGiveOneLineErrors) {
  EXPECT_EQ(load_error("", ""), "");
  struct Case {
    std::string from, to, expect;
  } cases[] = {
      {"\"name\": \"tiny\",", "", "missing field 'name'"},
      {"{\n  \"name\"", "{{\n  \"name\"", "not valid JSON"},
      {"ceil_div(n, B)", "ceil_div(n, BB)", "unknown name 'BB'"},
      {"ceil_div(n, B)", "ceil_div(n, B", "expected ')'"},
      {"\"values\": [32, 64]", "\"values\": []", "non-empty list"},
      {"\"default\": 64", "\"default\": 48", "default is not one of its values"},
      {"\"kind\": \"conv1d\"", "\"kind\": \"fft\"", "reference.kind 'fft'"},
      {"\"kind\": \"conv1d\"", "\"kind\": \"gemm\", \"math\": \"fp16\"", "reference.math 'fp16'"},
      {"\"kind\": \"conv1d\"", "\"kind\": \"conv1d\", \"math\": \"tf32\"", "reference.math is for reference.kind gemm"},
      {"\"role\": \"input\"", "\"role\": \"scratch\"", "role must be input or output"},
      {"\"tiny.cu\"", "\"missing.cu\"", "cannot read"},
      {"\"GB/s\"", "\"furlongs\"", "metric.unit"},
      {"[\"100\"]", "[\"0\"]", "default size"},
      {"\"B\": {\"values\"", "\"cc\": {\"values\"", "reserved for the device's compute capability"},
      {"\"B\": {\"values\"", "\"sms\": {\"values\"", "reserved for the device's SM count"},
  };
  for (const auto& c : cases) {
    const std::string err = load_error(c.from, c.to);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "for " << c.to << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    EXPECT_NE(err.find("family.json"), std::string::npos) << err;
  }
}

TEST(Family, Tf32FamilyBenchesAgainstTf32Math) {
  const auto fams = builtin();
  EXPECT_EQ(find_family(fams, "gemm_tf32").reference.math, "tf32");
  EXPECT_GT(find_family(fams, "gemm_tf32").reference.tolerance, find_family(fams, "gemm_regtile").reference.tolerance);
  EXPECT_EQ(find_family(fams, "gemm_regtile").reference.math, "fp32");
}

TEST(Family, UserTemplatesAddAndOverride) {
  test::TempDir dir;
  write(dir.path / "tiny/family.json", kGoodJson);
  write(dir.path / "tiny/tiny.cu", "extern \"C\" __global__ void tiny() {}\n");
  const auto fams = load_families({tiletune::test::templates_dir(), dir.path});
  EXPECT_EQ(find_family(fams, "tiny").parameters[0].default_value, 64);
  EXPECT_NO_THROW(find_family(fams, "gemm_tiled"));
  EXPECT_THROW(load_families({dir.path / "absent"}), FamilyError);
}
