#include "tiletune/family.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "../test_paths.hpp"

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
  "reference": {"kernel": "tiny_ref.cu", "block": ["64"], "grid": ["ceil_div(n, 64)"]},
  "baselines": [{"library": "d2d_copy", "operands": {"src": "in", "dst": "out"}}]
})J";

void write_tiny(const std::filesystem::path& dir, const std::string& json) {
  write(dir / "family.json", json);
  write(dir / "tiny.cu", "extern \"C\" __global__ void tiny() {}\n");
  write(dir / "tiny_ref.cu", "extern \"C\" __global__ void tiny_ref() {}\n");
}

// Loads a family made from kGoodJson with one substitution; returns the error message ("" if it loaded).
std::string load_error(const std::string& from, const std::string& to) {
  test::TempDir dir;
  std::string json = kGoodJson;
  if (!from.empty()) {
    const auto at = json.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    json.replace(at, from.size(), to);
  }
  write_tiny(dir.path / "tiny", json);
  try {
    load_families({dir.path / "tiny"});
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
  for (const char* want : {"gemm_naive", "gemm_tiled", "conv1d_naive", "conv1d_tiled"})
    EXPECT_TRUE(names.count(want)) << want;
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

// A default size's text names its problem as make_problem gives it, the args it leaves out at their defaults.
TEST(Family, ADefaultSizeNamesItsProblem) {
  const auto fams = builtin();
  const auto& conv = find_family(fams, "conv1d_tiled");
  EXPECT_EQ(default_problem(conv, "268435456 mask_width=31"),
            conv.make_problem({268435456}, {{"mask_width", 31}}));
  EXPECT_EQ(default_problem(conv, "1000").args.at("mask_width"), 5);
  EXPECT_THROW(default_problem(conv, "1000 mask_width=4"), FamilyError);
  EXPECT_THROW(default_problem(conv, "1000 mask_width"), std::invalid_argument);
  EXPECT_THROW(default_problem(conv, "big"), std::invalid_argument);
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
      {"\"role\": \"input\"", "\"role\": \"scratch\"", "role must be input, output or inout"},
      {"\"tiny.cu\"", "\"missing.cu\"", "cannot read"},
      {"\"GB/s\"", "\"furlongs\"", "metric.unit"},
      {"[\"100\"]", "[\"0\"]", "default size"},
      {"\"B\": {\"values\"", "\"cc\": {\"values\"", "reserved for the device's compute capability"},
      {"\"B\": {\"values\"", "\"sms\": {\"values\"", "reserved for the device's SM count"},
      // Parameters are #defined ahead of the template: a keyword, type or reserved name breaks every compile.
      {"\"B\": {\"values\"", "\"B\": {\"values\": [32]}, \"int\": {\"values\"",
       "parameter name 'int' is a C++ or CUDA name"},
      {"\"B\": {\"values\"", "\"B\": {\"values\": [32]}, \"__global__\": {\"values\"",
       "'__global__' is reserved to the compiler"},
      {"\"B\": {\"values\"", "\"B\": {\"values\": [32]}, \"blockDim\": {\"values\"",
       "'blockDim' is a C++ or CUDA name"},
      {"\"B\": {\"values\"", "\"B\": {\"values\": [32]}, \"int64_t\": {\"values\"",
       "'int64_t' is a standard or CUDA type"},
      {"\"dst\": \"out\"}}]\n}", std::string("\"dst\": \"out\"}}]\n}\0{garbage", 26),
       "holds a NUL byte at offset"},
  };
  for (const auto& c : cases) {
    const std::string err = load_error(c.from, c.to);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "for " << c.to << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    EXPECT_NE(err.find("family.json"), std::string::npos) << err;
  }
}

// A family may ask the main job for another budget at some of its default sizes; what it names must be one
// of them, and the budget a whole number of measurements.
TEST(Family, DefaultBudgetsNameDefaultSizesAndWholeBudgets) {
  test::TempDir dir;
  std::string json = kGoodJson;
  const std::string sizes = "\"default_sizes\": [\"100\"]";
  json.replace(json.find(sizes), sizes.size(),
               "\"default_sizes\": [\"100\", \"300\"], \"default_budgets\": {\"300\": 260}");
  write_tiny(dir.path / "tiny", json);
  const KernelFamily f = load_families({dir.path / "tiny"}).front();
  EXPECT_EQ(f.default_budgets, (std::map<std::string, std::size_t>{{"300", 260}}));
  const struct {
    std::string budgets, expect;
  } cases[] = {
      {"{\"200\": 260}", "'200' is not one of problem.default_sizes"},
      {"{\"100\": 0}", "default_budgets.100 must be a whole number of measurements"},
      {"{\"100\": 2.5}", "default_budgets.100 must be a whole number of measurements"},
      {"{\"100\": 99999999999}", "default_budgets.100 must be a whole number of measurements"},
      {"[260]", "problem.default_budgets must be an object"},
  };
  for (const auto& c : cases) {
    const std::string err = load_error(sizes, sizes + ", \"default_budgets\": " + c.budgets);
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.budgets << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// Every field of the element-type, reference and baseline description: a wrong value is a one-line error that
// names the file and the field.
TEST(Family, MalformedArgumentsReferencesAndBaselinesGiveOneLineErrors) {
  const std::string in = "{\"name\": \"in\", \"buffer\": \"float\", \"count\": \"n\", \"role\": \"input\"}";
  const std::string out =
      "{\"name\": \"out\", \"buffer\": \"float\", \"count\": \"n\", \"role\": \"output\"}";
  const std::string scalar = "{\"name\": \"n\", \"scalar\": \"int\", \"value\": \"n\"}";
  const std::string ref =
      "\"reference\": {\"kernel\": \"tiny_ref.cu\", \"block\": [\"64\"], \"grid\": [\"ceil_div(n, 64)\"]}";
  const std::string base = "[{\"library\": \"d2d_copy\", \"operands\": {\"src\": \"in\", \"dst\": \"out\"}}]";
  struct Case {
    std::string from, to, expect;
  } cases[] = {
      // element types, roles, fills, dims
      {in, "{\"name\": \"in\", \"buffer\": \"float16\", \"count\": \"n\", \"role\": \"input\"}",
       "unknown element type 'float16'"},
      {out,
       "{\"name\": \"out\", \"buffer\": \"float\", \"count\": \"n\", \"role\": \"output\", \"fill\": "
       "{\"constant\": 0}}",
       "an output is poisoned, not filled"},
      {in,
       "{\"name\": \"in\", \"buffer\": \"float\", \"count\": \"n\", \"role\": \"input\", \"fill\": "
       "{\"normal\": [0, 1]}}",
       "unknown distribution 'normal'"},
      {in,
       "{\"name\": \"in\", \"buffer\": \"int32\", \"count\": \"n\", \"role\": \"input\", \"fill\": "
       "{\"uniform\": [0, 1]}}",
       "uniform is for floating types"},
      {in,
       "{\"name\": \"in\", \"buffer\": \"float\", \"count\": \"n\", \"role\": \"input\", \"fill\": "
       "{\"range\": [0, 1]}}",
       "range is for integer types"},
      {in,
       "{\"name\": \"in\", \"buffer\": \"uint8\", \"count\": \"n\", \"role\": \"input\", \"fill\": "
       "{\"range\": [0, 256]}}",
       "does not fit in uint8"},
      {in,
       "{\"name\": \"in\", \"buffer\": \"float\", \"count\": \"n\", \"role\": \"input\", \"fill\": "
       "{\"uniform\": [1, -1]}}",
       "needs lo <= hi"},
      {in,
       "{\"name\": \"in\", \"buffer\": \"int8\", \"count\": \"n\", \"role\": \"input\", \"fill\": "
       "{\"constant\": 0.5}}",
       "fill.constant must be an integer"},
      {in,
       "{\"name\": \"in\", \"buffer\": \"float\", \"count\": \"n\", \"role\": \"input\", \"dims\": [\"n\", "
       "\"m\"]}",
       "argument in dims reads unknown name 'm'"},
      {scalar, "{\"name\": \"n\", \"scalar\": \"short\", \"value\": \"n\"}", "scalar type must be one of"},
      {scalar, "{\"name\": \"n\", \"scalar\": \"int\", \"value\": 1.5}", "is not an integer for a int"},
      {scalar, "{\"name\": \"n\", \"scalar\": \"int\", \"value\": \"n\", \"role\": \"input\"}",
       "a scalar takes no 'role'"},
      {out, "{\"name\": \"out\", \"buffer\": \"float\", \"count\": \"n\", \"role\": \"input\"}",
       "no output or inout buffer"},
      {"\"metric\"", "\"constants\": [{\"name\": \"c\", \"type\": \"quad\", \"count\": \"4\"}], \"metric\"",
       "constant 'c': unknown element type 'quad'"},
      // the reference
      {ref, "\"reference\": {\"kind\": \"conv1d\"}", "reference.kind is gone"},
      {"\"tiny_ref.cu\"", "\"absent_ref.cu\"", "reference.kernel: cannot read"},
      {"\"tiny_ref.cu\"", "\"../tiny_ref.cu\"", "must be a file name in the family's folder"},
      {"\"kernel\": \"tiny_ref.cu\"", "\"kernel\": \"tiny_ref.cu\", \"family\": \"x\"", "exactly one of"},
      {"\"kernel\": \"tiny_ref.cu\"", "\"kernel\": \"tiny_ref.cu\", \"outputs\": \"float\"",
       "reference.outputs must be double or native"},
      {"\"kernel\": \"tiny_ref.cu\"", "\"kernel\": \"tiny_ref.cu\", \"arguments\": [\"in\", \"nope\"]",
       "'nope' is not one of the family's arguments"},
      {"\"kernel\": \"tiny_ref.cu\"", "\"kernel\": \"tiny_ref.cu\", \"arguments\": [\"in\", \"n\"]",
       "must pass the output 'out'"},
      {"\"kernel\": \"tiny_ref.cu\"", "\"kernel\": \"tiny_ref.cu\", \"rtol\": -1",
       "reference.rtol must be a non-negative number"},
      {"\"kernel\": \"tiny_ref.cu\"", "\"kernel\": \"tiny_ref.cu\", \"scale_floor\": 0",
       "reference.scale_floor must be a positive number"},
      {"\"kernel\": \"tiny_ref.cu\"", "\"kernel\": \"tiny_ref.cu\", \"colour\": 1",
       "reference: unknown field 'colour'"},
      {"\"grid\": [\"ceil_div(n, 64)\"]", "\"grid\": [\"ceil_div(n, B)\"]",
       "reference.grid reads unknown name 'B'"},
      {ref, "\"reference\": {\"from\": \"nowhere\"}",
       "reference names family 'nowhere', which is not loaded"},
      {ref, "\"reference\": {\"from\": \"tiny\"}", "reference.from names the family itself"},
      {ref, "\"reference\": {\"from\": \"tiny\", \"outputs\": \"native\"}",
       "reference.outputs goes with \"kernel\""},
      {"\"kernel\": \"tiny_ref.cu\"",
       "\"kernel\": \"tiny_ref.cu\", \"arguments\": [\"in\", \"out\", {\"scalar\": \"float\", \"value\": 1}]",
       "scalar type must be int or long"},
      {"\"kernel\": \"tiny_ref.cu\"", "\"kernel\": \"tiny_ref.cu\", \"arguments\": [\"in\", \"out\", 7]",
       "reference.arguments must list"},
      // baselines
      {base, "[{\"library\": \"mkl\", \"operands\": {}}]", "baselines: unknown library 'mkl'"},
      {base, "[{\"library\": \"d2d_copy\", \"operands\": {\"src\": \"n\"}}]",
       "'n' is not a buffer of the family"},
      {base, "[{\"library\": \"d2d_copy\", \"operands\": {\"dst\": \"out\"}}]",
       "baselines.d2d_copy.operands needs 'src'"},
      {base, "[{\"library\": \"d2d_copy\", \"operands\": {\"src\": \"in\", \"x\": \"out\"}}]",
       "'x' is not an operand of d2d_copy"},
      {base,
       "[{\"library\": \"cublas_sgemm\", \"operands\": {\"A\": \"in\", \"B\": \"in\", \"C\": \"out\", \"M\": "
       "\"n\", \"N\": \"1\"}}]",
       "baselines.cublas_sgemm.operands needs 'K'"},
      {"\"baselines\"", "\"baseline\"", "'baseline' is now 'baselines'"},
      {base, "[3]", "'baselines' must be a list of family names"},
  };
  for (const auto& c : cases) {
    const std::string err = load_error(c.from, c.to);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "for " << c.to << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    EXPECT_NE(err.find("family.json"), std::string::npos) << err;
  }
}

TEST(Family, ElementTypesFillsRolesAndToleranceAreRead) {
  test::TempDir dir;
  std::string json = kGoodJson;
  json.replace(json.find("\"arguments\""), std::string("\"arguments\"").size(), "\"arguments_old\"");
  json.replace(json.find("\"metric\""), std::string("\"metric\"").size(), R"J("arguments": [
      {"name": "bins", "buffer": "uint32", "count": "256", "role": "inout", "fill": {"range": [3, 9]}},
      {"name": "x", "buffer": "half", "count": "n", "role": "input", "fill": {"uniform": [-4, 4]}, "dims": ["n"]},
      {"name": "k", "buffer": "int8", "count": "n", "role": "input", "fill": {"constant": -7}},
      {"name": "y", "buffer": "bfloat16", "count": "n", "role": "output"},
      {"name": "scale", "scalar": "double", "value": 0.25},
      {"name": "n", "scalar": "long", "value": "n * 2"}],
    "constants": [{"name": "lut", "type": "uint8", "count": "16"}],
    "metric")J");
  json.replace(json.find("\"arguments_old\""), std::string("\"arguments_old\"").size(), "\"unused\"");
  json.replace(json.find("\"block\": [\"64\"]"), std::string("\"block\": [\"64\"]").size(),
               "\"rtol\": 0.03, \"scale_floor\": 2, \"block\": [\"64\"]");
  json.replace(json.find("\"src\": \"in\", \"dst\": \"out\""),
               std::string("\"src\": \"in\", \"dst\": \"out\"").size(), "\"src\": \"x\"");
  write_tiny(dir.path / "tiny", json);
  const auto fams = load_families({dir.path / "tiny"});
  const KernelFamily& f = fams.at(0);
  ASSERT_EQ(f.arguments.size(), 6u);
  EXPECT_EQ(f.arguments[0].type, ElementType::u32);
  EXPECT_EQ(f.arguments[0].role, BufferRole::inout);
  EXPECT_TRUE(f.arguments[0].is_output());
  EXPECT_EQ(f.arguments[0].fill.kind, Fill::Kind::range);
  EXPECT_EQ(f.arguments[0].fill.lo, 3);
  EXPECT_EQ(f.arguments[0].fill.hi, 9);
  EXPECT_EQ(f.arguments[1].type, ElementType::f16);
  EXPECT_EQ(f.arguments[1].fill.hi, 4);
  EXPECT_EQ(f.arguments[1].dims.size(), 1u);
  EXPECT_EQ(f.arguments[2].fill.kind, Fill::Kind::constant);
  EXPECT_EQ(f.arguments[2].fill.lo, -7);
  EXPECT_EQ(f.arguments[3].type, ElementType::bf16);
  EXPECT_EQ(f.arguments[3].fill.kind, Fill::Kind::uniform);  // the default for floating types
  EXPECT_EQ(f.arguments[4].type, ElementType::f64);
  EXPECT_EQ(f.arguments[4].real.value_or(0), 0.25);
  EXPECT_EQ(f.arguments[5].type, ElementType::i64);
  EXPECT_EQ(f.arguments[5].value.eval({{"n", 21}}), 42);
  ASSERT_EQ(f.constants.size(), 1u);
  EXPECT_EQ(f.constants[0].type, ElementType::u8);
  EXPECT_EQ(f.constants[0].fill.hi, 255);  // the default range of uint8
  // Declared tolerances apply to floating outputs; integers stay exact.
  EXPECT_EQ(f.reference.tolerance_for(ElementType::bf16).rtol, 0.03);
  EXPECT_EQ(f.reference.tolerance_for(ElementType::bf16).scale_floor.value_or(0), 2);
  EXPECT_EQ(f.reference.tolerance_for(ElementType::u32).rtol, 0);
  EXPECT_EQ(f.reference.kernel.name, "tiny_ref");
  EXPECT_EQ(f.reference.kernel.arguments.size(), 6u);
  ASSERT_EQ(f.library_baselines.size(), 1u);
  EXPECT_EQ(f.library_baselines[0].buffers.at("src"), "x");
}

TEST(Family, DefaultTolerancesPerElementType) {
  EXPECT_EQ(default_tolerance(ElementType::f32).rtol, 1e-4);
  EXPECT_LT(default_tolerance(ElementType::f64).rtol, 1e-8);
  EXPECT_GT(default_tolerance(ElementType::f16).rtol, default_tolerance(ElementType::f32).rtol);
  EXPECT_GT(default_tolerance(ElementType::bf16).rtol, default_tolerance(ElementType::f16).rtol);
  for (ElementType t :
       {ElementType::i8, ElementType::u8, ElementType::i32, ElementType::u32, ElementType::i64}) {
    EXPECT_EQ(default_tolerance(t).rtol, 0) << to_string(t);
    EXPECT_EQ(default_tolerance(t).atol, 0) << to_string(t);
    EXPECT_FALSE(is_floating(t));
    EXPECT_NE(default_fill(t).hi, default_fill(t).lo) << to_string(t) << ": never all one value by default";
  }
  for (const char* name :
       {"float", "double", "half", "bfloat16", "int8", "uint8", "int32", "uint32", "int64"})
    EXPECT_EQ(to_string(*element_type_from_string(name)), name);
  EXPECT_FALSE(element_type_from_string("int").has_value());
  EXPECT_EQ(scalar_type_from_string("long"), ElementType::i64);
  EXPECT_EQ(size_of(ElementType::bf16), 2u);
}

// Built-in families share reference kernels ("from") and declare their library baselines.
TEST(Family, BuiltinReferencesAndBaselinesResolve) {
  const auto fams = builtin();
  for (const auto& f : fams) {
    if (f.reference.kind == Reference::Kind::kernel) {
      EXPECT_FALSE(f.reference.kernel.source.empty()) << f.name;
      EXPECT_NE(f.reference.kernel.source.find(f.reference.kernel.name), std::string::npos) << f.name;
    }
    for (const auto& b : f.baselines) EXPECT_NO_THROW(find_family(fams, b)) << f.name << " -> " << b;
  }
  const auto& tiled = find_family(fams, "gemm_tiled");
  EXPECT_EQ(tiled.reference.from, "gemm_naive");
  EXPECT_EQ(tiled.reference.kernel.name, "gemm_reference");
  ASSERT_EQ(tiled.library_baselines.size(), 1u);
  EXPECT_EQ(tiled.library_baselines[0].library, "cublas_sgemm");
  const auto& tf32 = find_family(fams, "gemm_tf32");
  EXPECT_EQ(tf32.library_baselines.at(0).library, "cublas_tf32");
  EXPECT_GT(tf32.reference.tolerance_for(ElementType::f32).rtol,
            find_family(fams, "gemm_regtile").reference.tolerance_for(ElementType::f32).rtol);
  EXPECT_EQ(find_family(fams, "conv1d_register").library_baselines.at(0).library, "d2d_copy");
}

// A reference that runs another family's configuration must find its buffers here, by name and type.
TEST(Family, FamilyReferenceMustMatchBuffers) {
  test::TempDir dir;
  std::string json = kGoodJson;
  const std::string ref =
      "{\"kernel\": \"tiny_ref.cu\", \"block\": [\"64\"], \"grid\": [\"ceil_div(n, 64)\"]}";
  json.replace(json.find(ref), ref.size(), "{\"family\": \"gemm_naive\", \"config\": {\"BLOCK_X\": 16}}");
  write_tiny(dir.path / "tiny", json);
  try {
    load_families({tiletune::test::templates_dir(), dir.path});
    FAIL() << "loaded";
  } catch (const FamilyError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a buffer 'A' that this family does not have"),
              std::string::npos)
        << e.what();
  }
}

TEST(Family, UserTemplatesAddAndOverride) {
  test::TempDir dir;
  write_tiny(dir.path / "tiny", kGoodJson);
  const auto fams = load_families({tiletune::test::templates_dir(), dir.path});
  EXPECT_EQ(find_family(fams, "tiny").parameters[0].default_value, 64);
  EXPECT_NO_THROW(find_family(fams, "gemm_tiled"));
  EXPECT_THROW(load_families({dir.path / "absent"}), FamilyError);
}

// A family's files are regular files in its own folder: no path out of it, no link to elsewhere, no folder.
TEST(Family, SourcesMustBeRegularFilesInTheFamilysFolder) {
  EXPECT_NE(load_error("\"tiny.cu\"", "\"../tiny.cu\"")
                .find("source '../tiny.cu' must be a file name in the family's folder"),
            std::string::npos);
  EXPECT_NE(load_error("\"tiny.cu\"", "\"/etc/passwd\"").find("must be a file name in the family's folder"),
            std::string::npos);
  test::TempDir dir;
  write_tiny(dir.path / "tiny", kGoodJson);
  write(dir.path / "outside.cu", "extern \"C\" __global__ void tiny() {}\n");
  std::filesystem::remove(dir.path / "tiny/tiny.cu");
  std::filesystem::create_symlink(dir.path / "outside.cu", dir.path / "tiny/tiny.cu");
  try {
    load_families({dir.path / "tiny"});
    FAIL() << "a source that links out of the folder loaded";
  } catch (const FamilyError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a regular file"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir.path / "tiny/tiny.cu");
  std::filesystem::create_directory(dir.path / "tiny/tiny.cu");
  EXPECT_THROW(load_families({dir.path / "tiny"}), FamilyError);
}

// A description nested thousands of levels deep is refused before it is parsed (no recursion without bound).
TEST(Family, DeeplyNestedDescriptionIsRefused) {
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  const std::string err = load_error("\"kernel\": \"tiny\",", "\"kernel\": \"tiny\", \"x\": " + deep + ",");
  EXPECT_NE(err.find("nested deeper than 64 levels"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);
}

namespace {

const char* kTensorMap =
    "{\"name\": \"tma_in\", \"tensor_map\": \"in\", \"dims\": [\"n / B\", \"B\"], \"box\": [\"B\", \"1\"]}";

// load_error with a tensor map argument (kTensorMap, after `n`) in the family, then one more substitution.
std::string tensor_map_error(const std::string& from, const std::string& to) {
  const std::string scalar = "{\"name\": \"n\", \"scalar\": \"int\", \"value\": \"n\"}";
  std::string map = kTensorMap;
  if (!from.empty()) {
    const auto at = map.find(from);
    if (at == std::string::npos) return "test error: '" + from + "' is not in the tensor map";
    map.replace(at, from.size(), to);
  }
  return load_error(scalar, scalar + ",\n                " + map);
}

}  // namespace

TEST(Family, TensorMapsClustersAndArchSuffixAreRead) {
  const auto fams = load_families({test::templates_dir(), test::fixtures_dir() / "families"});
  const KernelFamily& f = find_family(fams, "tma_tile");
  EXPECT_EQ(f.arch_suffix, "a");
  ASSERT_EQ(f.launch.cluster.size(), 1u);
  EXPECT_EQ(f.launch.cluster[0].text(), "CLUSTER");
  const Argument* map = find_argument(f, "tma_in");
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(map->kind, ArgKind::tensor_map);
  EXPECT_FALSE(map->is_output());
  EXPECT_EQ(map->tensor_map.buffer, "in");
  EXPECT_EQ(map->tensor_map.element, ElementType::f32);
  EXPECT_FALSE(map->tensor_map.tf32);
  ASSERT_EQ(map->tensor_map.dims.size(), 2u);
  EXPECT_EQ(map->tensor_map.dims[1].text(), "rows");
  ASSERT_EQ(map->tensor_map.strides.size(), 1u);
  EXPECT_EQ(map->tensor_map.strides[0].text(), "cols * 4");
  EXPECT_EQ(map->tensor_map.box[0].text(), "BOX_X");
  EXPECT_EQ(map->tensor_map.swizzle.eval({}), 0);         // the default: none
  EXPECT_EQ(map->tensor_map.l2_promotion.eval({}), 128);  // the default
  EXPECT_FALSE(map->tensor_map.oob_nan);
  // The reference kernel never receives it: its default argument list leaves tensor maps out.
  for (const auto& a : find_family(fams, "tma_tile").reference.kernel.arguments) EXPECT_NE(a.name, "tma_in");

  // Elements: tfloat32 for a float buffer, another type of the buffer's size, NaN fill for floating types.
  test::TempDir dir;
  std::string json = kGoodJson;
  const std::string scalar = "{\"name\": \"n\", \"scalar\": \"int\", \"value\": \"n\"}";
  json.replace(json.find(scalar), scalar.size(), scalar + R"J(,
      {"name": "t", "tensor_map": "in", "dims": ["n"], "box": ["B"], "element": "tfloat32", "oob_fill": "nan",
       "swizzle": "B", "l2_promotion": "256"},
      {"name": "u", "tensor_map": "out", "dims": ["n"], "box": ["4"], "element": "uint32"})J");
  write_tiny(dir.path / "tiny", json);
  const auto tiny = load_families({dir.path / "tiny"});
  const Argument* t = find_argument(tiny.at(0), "t");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->tensor_map.tf32);
  EXPECT_TRUE(t->tensor_map.oob_nan);
  EXPECT_TRUE(t->tensor_map.strides.empty());  // rank 1: none
  EXPECT_EQ(t->tensor_map.swizzle.eval({{"B", 32}}), 32);
  EXPECT_EQ(find_argument(tiny.at(0), "u")->tensor_map.element, ElementType::u32);
  // The reference's default arguments are the buffers and scalars, in order.
  ASSERT_EQ(tiny.at(0).reference.kernel.arguments.size(), 3u);
  EXPECT_EQ(tiny.at(0).reference.kernel.arguments[2].name, "n");
}

// Every malformed tensor map, cluster, arch suffix, shared template and shared reference kernel is a one-line
// error that names the file and the field.
TEST(Family, MalformedTensorMapsClustersAndSharedFilesGiveOneLineErrors) {
  EXPECT_EQ(tensor_map_error("", ""), "");
  std::vector<std::pair<std::string, std::string>> cases = {
      {tensor_map_error("\"tensor_map\": \"in\"", "\"tensor_map\": \"nowhere\""),
       "argument 'tma_in': tensor_map 'nowhere' is not a buffer of the family"},
      {tensor_map_error("\"tensor_map\": \"in\"", "\"tensor_map\": \"n\""),
       "argument 'tma_in': tensor_map 'n' is not a buffer of the family"},
      {tensor_map_error("\"tensor_map\": \"in\"", "\"tensor_map\": \"in\", \"buffer\": \"float\""),
       "argument 'tma_in' must be one of a buffer, a scalar or a tensor map"},
      {tensor_map_error("\"dims\": [\"n / B\", \"B\"]", "\"dims\": []"),
       "argument 'tma_in' dims needs 1 to 5 expressions"},
      {tensor_map_error("\"dims\": [\"n / B\", \"B\"]",
                        "\"dims\": [\"1\", \"1\", \"1\", \"1\", \"1\", \"1\"]"),
       "argument 'tma_in' dims needs 1 to 5 expressions"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\"]"),
       "argument 'tma_in': box has 1 expression(s), dims 2"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"strides\": [\"4\", \"8\"]"),
       "argument 'tma_in': strides needs 1 expression(s)"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"strides\": \"4\""),
       "argument 'tma_in': strides needs 1 expression(s)"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"count\": \"n\""),
       "argument 'tma_in': unknown field 'count'"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"oob_fill\": \"one\""),
       "argument 'tma_in': oob_fill must be zero or nan, got 'one'"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"element\": \"float16\""),
       "argument 'tma_in' element: unknown element type 'float16'"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"element\": \"half\""),
       "argument 'tma_in': element half is not the size of in's float"},
      {tensor_map_error("\"tensor_map\": \"in\"",
                        "\"tensor_map\": \"in\", \"element\": \"int32\", \"oob_fill\": \"nan\""),
       "argument 'tma_in': oob_fill nan needs a floating element type, not int32"},
      {tensor_map_error("\"dims\": [\"n / B\", \"B\"]", "\"dims\": [\"n / C\", \"B\"]"),
       "argument tma_in dims reads unknown name 'C'"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"strides\": [\"m\"]"),
       "argument tma_in strides reads unknown name 'm'"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"cc > 90 ? 2 : q\"]"),
       "argument tma_in box reads unknown name 'q'"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"swizzle\": \"(\""),
       "argument 'tma_in' swizzle: in expression '('"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"l2_promotion\": \"L2\""),
       "argument tma_in l2_promotion reads unknown name 'L2'"},
      {tensor_map_error("\"box\": [\"B\", \"1\"]", "\"box\": [\"B\", \"1\"], \"swizzle\": [128]"),
       "argument 'tma_in' swizzle must be an expression string or an integer"},
      // clusters
      {load_error("\"grid\": [\"ceil_div(n, B)\"]", "\"grid\": [\"ceil_div(n, B)\"], \"cluster\": []"),
       "launch.cluster needs 1 to 3 expressions"},
      {load_error("\"grid\": [\"ceil_div(n, B)\"]",
                  "\"grid\": [\"ceil_div(n, B)\"], \"cluster\": [\"1\", \"1\", \"1\", \"1\"]"),
       "launch.cluster needs 1 to 3 expressions"},
      {load_error("\"grid\": [\"ceil_div(n, B)\"]", "\"grid\": [\"ceil_div(n, B)\"], \"cluster\": [\"CL\"]"),
       "launch.cluster reads unknown name 'CL'"},
      // the architecture suffix
      {load_error("\"kernel\": \"tiny\",", "\"kernel\": \"tiny\", \"arch_suffix\": \"b\","),
       "arch_suffix must be \"\", \"a\" (sm_90a: wgmma, setmaxnreg) or \"f\", got 'b'"},
      {load_error("\"kernel\": \"tiny\",", "\"kernel\": \"tiny\", \"arch_suffix\": 1,"),
       "arch_suffix must be"},
      // a template from another family's folder
      {load_error("\"kernel\": \"tiny\",", "\"kernel\": \"tiny\", \"source_from\": \"elsewhere\","),
       "source_from names family 'elsewhere', which is not loaded"},
      {load_error("\"kernel\": \"tiny\",", "\"kernel\": \"tiny\", \"source_from\": \"tiny\","),
       "source_from names the family itself"},
      {load_error("\"kernel\": \"tiny\",", "\"kernel\": \"tiny\", \"source_from\": \"../x\","),
       "source_from '../x' must be a family name"},
      // the reference
      {load_error("\"kernel\": \"tiny_ref.cu\"", "\"from\": \"tiny\", \"name\": \"1x\""),
       "reference.name '1x' must be an identifier"},
  };
  // The reference kernel is never given a tensor map.
  {
    const std::string scalar = "{\"name\": \"n\", \"scalar\": \"int\", \"value\": \"n\"}";
    std::string json = kGoodJson;
    json.replace(json.find(scalar), scalar.size(), scalar + ", " + kTensorMap);
    json.replace(json.find("\"kernel\": \"tiny_ref.cu\""), std::string("\"kernel\": \"tiny_ref.cu\"").size(),
                 "\"kernel\": \"tiny_ref.cu\", \"arguments\": [\"in\", \"out\", \"tma_in\"]");
    test::TempDir dir;
    write_tiny(dir.path / "tiny", json);
    std::string err;
    try {
      load_families({dir.path / "tiny"});
    } catch (const FamilyError& e) {
      err = e.what();
    }
    cases.push_back(
        {err, "reference.arguments: 'tma_in' is a tensor map; a reference kernel takes the buffer in"});
  }
  for (const auto& [err, expect] : cases) {
    EXPECT_NE(err.find(expect), std::string::npos) << "expected '" << expect << "', got: " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    EXPECT_NE(err.find("family.json"), std::string::npos) << err;
  }
  // A tfloat32 map over the output (a float buffer) loads.
  EXPECT_EQ(tensor_map_error("\"tensor_map\": \"in\"", "\"tensor_map\": \"out\", \"element\": \"tfloat32\""),
            "");
}

// "source_from" reads the template from another family's folder (under the same file-name rules), and a
// reference "from" another family may name another kernel of its file with a launch of its own.
TEST(Family, SharedTemplatesAndReferenceKernelsResolve) {
  const auto fams = load_families({test::templates_dir(), test::fixtures_dir() / "families"});
  const KernelFamily& tile = find_family(fams, "tma_tile");
  const KernelFamily& rows = find_family(fams, "tma_tile_rows");
  EXPECT_EQ(rows.source_from, "tma_tile");
  EXPECT_EQ(rows.source, tile.source);
  EXPECT_NE(rows.source.find("cp.async.bulk.tensor"), std::string::npos);
  EXPECT_EQ(rows.template_hash.size(), 16u);
  EXPECT_NE(rows.template_hash, tile.template_hash);
  EXPECT_NE(rows.source_for(rows.default_params()).find("#line 1 \"tma_tile.cu\""), std::string::npos);
  const ReferenceKernel& ref = rows.reference.kernel;
  EXPECT_EQ(rows.reference.from, "tma_tile");
  EXPECT_EQ(ref.name, "tma_tile_reference_rows");
  EXPECT_EQ(ref.file, "tma_tile_reference.cu");
  EXPECT_EQ(ref.directory, tile.directory);
  ASSERT_EQ(ref.grid.size(), 2u);  // its own launch, not tma_tile's
  EXPECT_EQ(ref.grid[1].text(), "rows");
  ASSERT_EQ(ref.arguments.size(), 4u);
  EXPECT_EQ(ref.arguments[3].name, "cols");
  EXPECT_EQ(tile.reference.kernel.name, "tma_tile_reference");

  // The template hash covers the text as read: another text in the source family's folder changes it.
  test::TempDir dir;
  std::filesystem::copy(test::fixtures_dir() / "families/tma_tile", dir.path / "tma_tile");
  std::filesystem::copy(test::fixtures_dir() / "families/tma_tile_rows", dir.path / "tma_tile_rows");
  std::ofstream(dir.path / "tma_tile/tma_tile.cu", std::ios::app) << "// changed\n";
  const auto changed = load_families({dir.path});
  EXPECT_NE(find_family(changed, "tma_tile_rows").template_hash, rows.template_hash);
  EXPECT_NE(find_family(changed, "tma_tile_rows").source.find("// changed"), std::string::npos);

  // The file-name rules of a family's own files hold in the other folder too; a missing file, a kernel
  // that is not in the shared reference file and a source family that is not loaded are refused.
  auto error_of = [&](const std::string& from, const std::string& to) {
    test::TempDir d;
    std::filesystem::copy(test::fixtures_dir() / "families/tma_tile", d.path / "tma_tile");
    std::filesystem::create_directories(d.path / "tma_tile_rows");
    std::ifstream in(test::fixtures_dir() / "families/tma_tile_rows/family.json");
    std::string json((std::istreambuf_iterator<char>(in)), {});
    json.replace(json.find(from), from.size(), to);
    std::ofstream(d.path / "tma_tile_rows/family.json") << json;
    try {
      load_families({d.path});
    } catch (const FamilyError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  for (const auto& [from, to, expect] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"\"source\": \"tma_tile.cu\"", "\"source\": \"../tma_tile/tma_tile.cu\"",
            "source '../tma_tile/tma_tile.cu' must be a file name in the family's folder"},
           {"\"source\": \"tma_tile.cu\"", "\"source\": \"absent.cu\"", "source: cannot read"},
           {"\"name\": \"tma_tile_reference_rows\"", "\"name\": \"tma_tile_reference_cols\"",
            "reference.name 'tma_tile_reference_cols' is not a kernel of tma_tile's tma_tile_reference.cu"},
           {"\"source_from\": \"tma_tile\"", "\"source_from\": \"tma_tiles\"",
            "source_from names family 'tma_tiles', which is not loaded"},
       }) {
    const std::string err = error_of(from, to);
    EXPECT_NE(err.find(expect), std::string::npos) << err;
    EXPECT_NE(err.find("tma_tile_rows/family.json"), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// Integer outputs may accept a few differing elements: a count, or a fraction of each output's elements.
TEST(Family, IntegerOutputsMayAcceptSomeDifferingElements) {
  const std::string grid = R"X("grid": ["ceil_div(n, 64)"]})X";
  const auto with = [&](const std::string& value) {
    return load_error(grid, R"X("grid": ["ceil_div(n, 64)"], "max_differing": )X" + value + "}");
  };
  EXPECT_EQ(with("3"), "");
  EXPECT_EQ(with("0.001"), "");
  for (const char* bad : {"-1", "1.5", "\"3\"", "[1]"})
    EXPECT_NE(with(bad).find("reference.max_differing must be a count of elements"), std::string::npos)
        << bad;
  Reference ref;
  EXPECT_EQ(ref.allowed_differing(ElementType::i32, 1000), 0u);
  ref.max_differing = 3;
  EXPECT_EQ(ref.allowed_differing(ElementType::i32, 1000), 3u);
  EXPECT_EQ(ref.allowed_differing(ElementType::f32, 1000), 0u) << "floating outputs have rtol and atol";
  ref.max_differing.reset();
  ref.max_differing_fraction = 0.01;
  EXPECT_EQ(ref.allowed_differing(ElementType::u8, 1000), 10u);
  EXPECT_EQ(ref.allowed_differing(ElementType::u8, 99), 0u);
}
