// T1 import (Python values and conditions, the family it writes) and C++ kernels: compiled under their
// lowered names, their resources read by that name, and looked up by it in the worker's requests.
#include "tiletune/t1.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "../test_paths.hpp"
#include "requests.hpp"
#include "tiletune/plan.hpp"

using namespace tiletune;
using nlohmann::json;

namespace {

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Python's // and % on integers: the quotient rounded towards negative infinity, the remainder with the
// divisor's sign (computed in floating point here, independently of the translator's integer formulas).
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
}
std::int64_t floor_mod(std::int64_t a, std::int64_t b) { return a - b * floor_div(a, b); }

std::vector<std::int64_t> python_range(std::int64_t start, std::int64_t stop, std::int64_t step) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
  return out;
}

}  // namespace

TEST(T1Python, ValuesAreEvaluatedAsPythonWould) {
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(t1::evaluate_values("[0, 1]"), (V{0, 1}));
  EXPECT_EQ(t1::evaluate_values("[i for i in range(3,35,2)]"), python_range(3, 35, 2));
  V sixteens;
  for (std::int64_t i : python_range(1, 9, 1)) sixteens.push_back(16 * i);
  EXPECT_EQ(t1::evaluate_values("[16*i for i in range(1,9)]"), sixteens);
  EXPECT_EQ(t1::evaluate_values("[2**i for i in range(6)]"), (V{1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(t1::evaluate_values("list(range(10, 0, -3))"), python_range(10, 0, -3));
  EXPECT_EQ(t1::evaluate_values("range(4)"), python_range(0, 4, 1));
  // Floor division and modulo round towards negative infinity; ** binds tighter than unary minus.
  EXPECT_EQ(t1::evaluate_values("[-7 // 2, -7 % 3, 7 % -3, 7 // -2, -2**2, (-2)**2, 1 << 4, 2**62]"),
            (V{floor_div(-7, 2), floor_mod(-7, 3), floor_mod(7, -3), floor_div(7, -2), -4, 4, 16,
               std::int64_t{1} << 62}));
  V multiples;
  for (std::int64_t i : python_range(0, 20, 1))
    if (i % 3 == 0 && i > 4) multiples.push_back(i);
  EXPECT_EQ(t1::evaluate_values("[i for i in range(20) if i % 3 == 0 if i > 4]"), multiples);
  EXPECT_EQ(t1::evaluate_values("[x if x > 2 else -x for x in range(5)]"), (V{0, -1, -2, 3, 4}));
  EXPECT_EQ(t1::evaluate_values("(1, 2, 3,)"), (V{1, 2, 3}));
  EXPECT_EQ(t1::evaluate_values("[1, 2] + [3]"), (V{1, 2, 3}));
  EXPECT_EQ(t1::evaluate_values("[0 or 5, 3 and 0, 2 and 7, True, not 3, max(4, 9, 2), min([5, 1])]"),
            (V{5, 0, 7, 1, 0, 9, 1}));
  EXPECT_EQ(t1::evaluate_values("[0x10, 0b101, 0o17, 1_000]"), (V{16, 5, 15, 1000}));
  EXPECT_EQ(t1::evaluate_values("[len(range(0, 10, 3)), sum([1, 2, 3]), 3 in [1, 3], 4 not in range(4)]"),
            (V{4, 6, 1, 1}));
}

TEST(T1Python, ValuesThatAreNotIntegerListsAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[i/2 for i in range(4)]", "true division"},
      {"[1.5, 2]", "not an integer"},
      {"['a', 'b']", "strings"},
      {"__import__('os')", "strings"},
      {"[x.y for x in range(2)]", "attribute access"},
      {"range(10**8)", "more than 1000000 values"},
      {"[i for i in range(3) for j in range(2)]", "nested 'for'"},
      {std::string(200, '['), "nested more than 64 levels"},
      {"[1 for i in range(2)", "expected ']'"},
      {"[99999999999999999999]", "does not fit in 64 bits"},
      {"[2**64]", "integer overflow"},
      {"[sum(range(1000000)) for i in range(1000000)]", "steps to evaluate"},
      {"[1 // 0]", "division by zero"},
      {"5", "a number where a list is needed"},
      {"[[1], [2]]", "a list where a number is needed"},
      {"[undefined]", "unknown name 'undefined'"},
      {"[1 if 2]", "expected 'else'"},
      {"lambda: 3", "lambda"},
      {"[{1}]", "sets and dicts"},
      {"[1] * 3", "of a list"},
      {std::string(1200, '1'), "longer than 1000 characters"},
  };
  for (const auto& [text, expect] : cases) {
    try {
      t1::evaluate_values(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const T1Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(expect), std::string::npos) << text << ": " << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// Every translated condition has the truth value that Python gives it at every combination of the
// parameters' values, negative ones included (where C's / and % differ from Python's // and %).
TEST(T1Python, ConditionsKeepTheirPythonMeaning) {
  const std::vector<std::int64_t> as = python_range(-7, 8, 1), bs = {-3, -2, -1, 1, 2, 3};
  using Fn = std::function<bool(std::int64_t, std::int64_t)>;
  const std::vector<std::pair<std::string, Fn>> cases = {
      {"a // b == -3", [](auto a, auto b) { return floor_div(a, b) == -3; }},
      {"a % b == 1", [](auto a, auto b) { return floor_mod(a, b) == 1; }},
      {"a % 3 != 0 and b > 0", [](auto a, auto b) { return floor_mod(a, 3) != 0 && b > 0; }},
      {"(a - 1) // 4 < b", [](auto a, auto b) { return floor_div(a - 1, 4) < b; }},
      {"a // b // 2 >= -1", [](auto a, auto b) { return floor_div(floor_div(a, b), 2) >= -1; }},
      {"not (a < b < 2)", [](auto a, auto b) { return !(a < b && b < 2); }},
      {"-3 <= a < b <= 2", [](auto a, auto b) { return -3 <= a && a < b && b <= 2; }},
      {"a in [1, -2, 5]", [](auto a, auto) { return a == 1 || a == -2 || a == 5; }},
      {"a not in range(0, 4)", [](auto a, auto) { return a < 0 || a >= 4; }},
      {"min(a, b, 2) == b",
       [](auto a, auto b) {
         return std::min({a, b, std::int64_t{2}}) == b;
       }},
      {"max(a, b) > 2 or a == -7", [](auto a, auto b) { return std::max(a, b) > 2 || a == -7; }},
      {"abs(a) ** 2 > 10", [](auto a, auto) { return a * a > 10; }},
      {"a ** 3 < -8", [](auto a, auto) { return a * a * a < -8; }},
      {"(a if b > 0 else -a) >= 3", [](auto a, auto b) { return (b > 0 ? a : -a) >= 3; }},
      {"a - -b == 0", [](auto a, auto b) { return a + b == 0; }},
      {"a * b // 4 >= -2", [](auto a, auto b) { return floor_div(a * b, 4) >= -2; }},
      {"(a > 0) + (b > 0) == 1", [](auto a, auto b) { return (a > 0) + (b > 0) == 1; }},
      {"a % b", [](auto a, auto b) { return floor_mod(a, b) != 0; }},
      {"a and b % 2", [](auto a, auto b) { return a != 0 && floor_mod(b, 2) != 0; }},
      {"2 ** 3 == 8 and a == 2 * 2 - 1", [](auto a, auto) { return a == 3; }},
      {"b == -1 or 10 // b > a", [](auto a, auto b) { return b == -1 || floor_div(10, b) > a; }},
  };
  for (const auto& [python, truth] : cases) {
    std::string text;
    try {
      text = t1::translate_condition(python, {{"a", as}, {"b", bs}});
    } catch (const T1Error& e) {
      ADD_FAILURE() << python << ": " << e.what();
      continue;
    }
    const Expr e = Expr::parse(text);
    for (std::int64_t a : as)
      for (std::int64_t b : bs)
        EXPECT_EQ(e.eval({{"a", a}, {"b", b}}) != 0, truth(a, b))
            << python << " -> " << text << " at a=" << a << ", b=" << b;
  }
  // Where both sides are known non-negative and positive, // and % are C's and stay short.
  EXPECT_EQ(t1::translate_condition("x // 4 == 2 or x % 8 == 1", {{"x", python_range(1, 17, 1)}}),
            "x / 4 == 2 || x % 8 == 1");
}

TEST(T1Python, ConditionsWithoutATiletuneCounterpartAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a / b > 1", "true division"},
      {"a & 1", "bitwise '&'"},
      {"~a > 0", "bitwise '~'"},
      {"a ** b > 1", "exponent that depends on parameters"},
      {"a ** -1 > 0", "negative exponent"},
      {"a is 1", "identity"},
      {"(a and b) + 1 > 0", "not a truth value"},
      {"foo(a)", "'foo(...)' of parameters"},
      {"min(a) > 0", "min() of one argument"},
      {"c > 1", "unknown name 'c'"},
      {"ProblemSize > 1", "ProblemSize is a list"},
      {"a in [b, 2]", "list of constants"},
      {"a in range(1000)", "more than 256 values"},
      {"[a] == 1", "a list where a number is needed"},
      {"a[0] > 1", "only ProblemSize[i]"},
      {"a > 'x'", "strings"},
      {"a = 1", "assignment"},
      {"a ** 64 > 0", "exponent above 62"},
      {"a +", "unexpected end"},
  };
  for (const auto& [python, expect] : cases) {
    try {
      const std::string text = t1::translate_condition(python, {{"a", {1, 2}}, {"b", {3, 4}}});
      ADD_FAILURE() << python << " translated to " << text;
    } catch (const T1Error& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << python << ": " << e.what();
    }
  }
}

namespace {

// A T1 document of every kind of field: comprehensions and a literal list, conditions, Kernel Tuner's grid
// divisors, constant memory, scalars, and sizes from ProblemSize and max()/min() of parameters.
const char* kFullT1 = R"J({
  "General": {"BenchmarkName": "my bench-1", "OutputFormat": "JSON"},
  "ConfigurationSpace": {
    "TuningParameters": [
      {"Name": "block_size_x", "Type": "int", "Values": "[16*i for i in range(1,5)]", "Default": 32},
      {"Name": "tile", "Type": "int", "Values": "[2**i for i in range(3)]", "Default": 1},
      {"Name": "flag", "Type": "int", "Values": "[0, 1]", "Default": 0},
      {"Name": "odd", "Type": "int", "Values": "[i for i in range(3,8,2)]"}
    ],
    "Conditions": [
      {"Expression": "flag == 0 or block_size_x % 32 != 0", "Parameters": ["flag", "block_size_x"]},
      {"Expression": "block_size_x * tile <= 128", "Parameters": ["block_size_x", "tile"]},
      {"Expression": "odd // 2 >= 1 and not tile == 4 or flag == 1", "Parameters": []},
      {"Expression": "1 < 2", "Parameters": []}
    ]
  },
  "KernelSpecification": {
    "Language": "CUDA", "KernelName": "k", "KernelFile": "k.cu", "CompilerOptions": ["-DEXTRA=1"],
    "GlobalSizeType": "CUDA",
    "LocalSize": {"X": "block_size_x", "Y": "1", "Z": "1"},
    "GlobalSize": {"X": "99999", "Y": "2", "Z": "1"},
    "GridDivX": ["block_size_x", "tile"],
    "ProblemSize": [1000, 3],
    "SharedMemory": 128,
    "Stream": null,
    "Arguments": [
      {"Name": "out", "Type": "float", "MemoryType": "Vector", "AccessType": "WriteOnly", "FillType": "Constant",
       "FillValue": 0.0, "Size": "ProblemSize[0] * ProblemSize[1]", "Output": 1},
      {"Name": "in", "Type": "int32", "MemoryType": "Vector", "AccessType": "ReadOnly", "FillType": "Random",
       "Size": "ProblemSize[0] + max(odd) - 1"},
      {"Name": "acc", "Type": "double", "MemoryType": "Vector", "AccessType": "ReadWrite", "FillType": "Constant",
       "FillValue": 1.5, "Size": 1000},
      {"Name": "mask", "Type": "float", "MemoryType": "Vector", "AccessType": "ReadOnly", "MemType": "Constant",
       "FillType": "Random", "Size": "max(odd) * min(odd)"},
      {"Name": "alpha", "Type": "float", "MemoryType": "Scalar", "FillValue": 0.5},
      {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": 1000}
    ]
  }
})J";

}  // namespace

TEST(T1Import, TranslatesEveryKindOfField) {
  test::TempDir dir;
  write(dir.path / "spaces/full.json", kFullT1);
  write(dir.path / "spaces/k.cu", "__global__ void k() {}\n");
  const T1Family t1 = read_t1(dir.path / "spaces/full.json");
  EXPECT_EQ(t1.name, "my_bench_1");
  EXPECT_EQ(t1.kernel_file, "k.cu");
  const auto folder = write_t1_family(t1, dir.path / "out", false);
  EXPECT_EQ(folder, dir.path / "out/my_bench_1");
  EXPECT_EQ(read(folder / "k.cu"), "__global__ void k() {}\n");
  const auto families = load_families({dir.path / "out"});
  ASSERT_EQ(families.size(), 1u);
  const KernelFamily& f = families.front();
  EXPECT_EQ(f.kernel, "k");

  std::map<std::string, std::pair<std::vector<std::int64_t>, std::int64_t>> params;
  for (const auto& p : f.parameters) params[p.name] = {p.values, p.default_value};
  std::vector<std::int64_t> bx;
  for (std::int64_t i : python_range(1, 5, 1)) bx.push_back(16 * i);
  EXPECT_EQ(params.at("block_size_x").first, bx);
  EXPECT_EQ(params.at("block_size_x").second, 32);
  EXPECT_EQ(params.at("tile").first, (std::vector<std::int64_t>{1, 2, 4}));
  EXPECT_EQ(params.at("flag").first, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(params.at("odd").first, python_range(3, 8, 2));
  EXPECT_EQ(params.at("odd").second, 3) << "without a Default, the first value";

  // The problem is T1's, and only that one: the kernel file may fix its sizes.
  const ProblemKey problem = f.make_problem({1000, 3}, {});
  EXPECT_THROW(f.make_problem({999, 3}, {}), FamilyError);
  ASSERT_EQ(f.default_sizes, (std::vector<std::string>{"1000x3"}));

  // Conditions (the one that always holds constrains nothing), and the launch: LocalSize's block, Kernel
  // Tuner's grid for x (the problem over the product of the divisors, rounded up), CUDA's GlobalSize for y.
  ASSERT_EQ(f.constraints.size(), 3u);
  for (const Params& c : enumerate_space(f)) {
    const std::int64_t b = c.at("block_size_x"), t = c.at("tile"), fl = c.at("flag"), o = c.at("odd");
    const bool allowed =
        (fl == 0 || b % 32 != 0) && b * t <= 128 && ((floor_div(o, 2) >= 1 && !(t == 4)) || fl == 1);
    const Vars v = f.vars(problem, c);
    bool meets = true;
    for (const auto& constraint : f.constraints) meets = meets && constraint.expr.eval(v) != 0;
    EXPECT_EQ(meets, allowed) << params_to_text(c);
    EXPECT_EQ(f.launch.block[0].eval(v), b);
    EXPECT_EQ(f.launch.grid[0].eval(v), (1000 + b * t - 1) / (b * t)) << params_to_text(c);
    EXPECT_EQ(f.launch.grid[1].eval(v), 2);
    EXPECT_EQ(f.launch.dynamic_shared_bytes.eval(v), 128);
  }

  // Arguments in order; the constant-memory vector is also the __constant__ symbol of its name.
  ASSERT_EQ(f.arguments.size(), 6u);
  const Vars v = f.vars(problem, f.default_params());
  const Argument& out = f.arguments[0];
  EXPECT_EQ(out.name, "out");
  EXPECT_EQ(out.role, BufferRole::output);
  EXPECT_EQ(out.count.eval(v), 1000 * 3);
  const Argument& in = f.arguments[1];
  EXPECT_EQ(in.type, ElementType::i32);
  EXPECT_EQ(in.role, BufferRole::input);
  EXPECT_EQ(in.count.eval(v), 1000 + 7 - 1);
  EXPECT_EQ(in.fill.kind, default_fill(ElementType::i32).kind);
  const Argument& acc = f.arguments[2];
  EXPECT_EQ(acc.role, BufferRole::inout);
  EXPECT_EQ(acc.type, ElementType::f64);
  EXPECT_EQ(acc.fill.kind, Fill::Kind::constant);
  EXPECT_EQ(acc.fill.lo, 1.5);
  const Argument& mask = f.arguments[3];
  EXPECT_NE(mask.name, "mask");
  EXPECT_EQ(mask.count.eval(v), 7 * 3);
  ASSERT_EQ(f.constants.size(), 1u);
  EXPECT_EQ(f.constants[0].name, "mask");
  EXPECT_EQ(f.constants[0].type, ElementType::f32);
  EXPECT_EQ(f.constants[0].count.eval(v), 7 * 3);
  EXPECT_EQ(f.arguments[4].kind, ArgKind::scalar);
  ASSERT_TRUE(f.arguments[4].real.has_value());
  EXPECT_EQ(*f.arguments[4].real, 0.5);
  EXPECT_EQ(f.arguments[5].value.eval(v), 1000);
  EXPECT_EQ(f.compile_options, (std::vector<std::string>{"-DEXTRA=1"}));

  // No reference kernel in T1: the family's default configuration is its own truth.
  EXPECT_EQ(f.reference.kind, Reference::Kind::family);
  EXPECT_EQ(f.reference.family, f.name);
  EXPECT_EQ(f.reference.config, f.default_params());
  ASSERT_TRUE(f.reference.family_def);
  EXPECT_EQ(f.reference.family_def->name, f.name);
  EXPECT_NE(f.description.find("default configuration"), std::string::npos);
}

TEST(T1Import, GlobalSizeCountsThreadsForOpenCLAndBlocksForCUDA) {
  test::TempDir dir;
  json doc = json::parse(kFullT1);
  auto& spec = doc["KernelSpecification"];
  spec.erase("GridDivX");
  spec["GlobalSize"] = {{"X", "ProblemSize[0] + block_size_x"}, {"Y", "6"}};
  write(dir.path / "k.cu", "__global__ void k() {}\n");
  for (const std::string type : {"OpenCL", "", "CUDA"}) {
    if (type.empty())
      spec.erase("GlobalSizeType");
    else
      spec["GlobalSizeType"] = type;
    write(dir.path / "t1.json", doc.dump());
    const auto folder = write_t1_family(read_t1(dir.path / "t1.json", "g"), dir.path / ("out" + type), false);
    const auto f = load_families({folder}).front();
    for (const Params& c : enumerate_space(f)) {
      const Vars v = f.vars(f.make_problem({1000, 3}, {}), c);
      const std::int64_t b = c.at("block_size_x"), global = 1000 + b;
      EXPECT_EQ(f.launch.grid[0].eval(v), type == "CUDA" ? global : (global + b - 1) / b) << type;
      EXPECT_EQ(f.launch.grid[1].eval(v), 6) << "a block is one thread high";
    }
  }
}

TEST(T1Import, AnExistingFamilyIsReplacedOnlyWithForce) {
  test::TempDir dir;
  write(dir.path / "t1.json", kFullT1);
  write(dir.path / "k.cu", "__global__ void k() {}\n");
  const auto folder = write_t1_family(read_t1(dir.path / "t1.json"), dir.path / "out", false);
  const std::string before = read(folder / "family.json");
  json doc = json::parse(kFullT1);
  doc["ConfigurationSpace"]["TuningParameters"][1]["Default"] = 2;
  write(dir.path / "t1.json", doc.dump());
  const T1Family changed = read_t1(dir.path / "t1.json");
  try {
    write_t1_family(changed, dir.path / "out", false);
    ADD_FAILURE() << "overwrote " << folder;
  } catch (const T1Error& e) {
    EXPECT_NE(std::string(e.what()).find("give --force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(folder / "family.json"), before);
  write_t1_family(changed, dir.path / "out", true);
  EXPECT_EQ(load_families({folder}).front().default_params().at("tile"), 2);
  // Nothing staged is left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path / "out")) ++entries;
  EXPECT_EQ(entries, 1);
}

namespace {

// A C++ kernel (not extern "C": its symbol is mangled) and, after it, another kernel with far more shared
// memory, whose usage must not be taken for the first one's.
const char* kCppKernel = R"CU(#ifndef BLOCK
#define BLOCK 64
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
__global__ void scale_cpp(float* out, const float* in, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * BLOCK * ITEMS + threadIdx.x;
  tile[threadIdx.x % 256] = in[i % n];
  __syncthreads();
  for (int k = 0; k < ITEMS; ++k, i += BLOCK)
    if (i < n) out[i] = 2.0f * tile[(threadIdx.x + k) % 256];
}
__global__ void decoy(float* out) {
  __shared__ float big[4096];
  big[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = big[(threadIdx.x * 7) % 4096];
}
)CU";

const char* kCppFamily = R"J({
  "name": "cpp_scale", "source": "scale.cu", "kernel": "scale_cpp",
  "problem": {"dims": ["n"], "default_sizes": ["4096"]},
  "parameters": {"BLOCK": {"values": [64, 128, 2048], "default": 64}, "ITEMS": {"values": [1, 2], "default": 1}},
  "launch": {"block": ["BLOCK"], "grid": ["ceil_div(n, BLOCK * ITEMS)"]},
  "arguments": [{"name": "out", "buffer": "float", "count": "n", "role": "output"},
                {"name": "in", "buffer": "float", "count": "n", "role": "input"},
                {"name": "n", "scalar": "int", "value": "n"}],
  "metric": {"unit": "GB/s", "work": "8 * n"},
  "reference": {"family": "cpp_scale", "config": {"BLOCK": 64, "ITEMS": 1}}
})J";

}  // namespace

TEST(CppKernels, PlanCompilesThemAndReadsTheirOwnUsage) {
  test::TempDir dir;
  write(dir.path / "fams/cpp_scale/family.json", kCppFamily);
  write(dir.path / "fams/cpp_scale/scale.cu", kCppKernel);
  const auto families = load_families({dir.path / "fams"});
  const KernelFamily& f = families.front();
  const DeviceLimits h100 = load_profile("h100");
  const ProblemKey problem = f.make_problem({4096}, {});
  const CompileCache cache(dir.path / "cache");
  PlanOptions o;
  o.jobs = 1;
  o.mode = ParallelMode::threads;
  const Plan plan = make_plan(f, h100, problem, cache, o);
  ASSERT_EQ(plan.configs.size(), 6u);
  // Blocks of 2048 threads are pruned before compiling; the others compile.
  EXPECT_EQ(plan.count(Outcome::pruned), 2u);
  EXPECT_EQ(plan.count(Outcome::ok), 4u);
  std::string symbol;
  for (const auto& c : plan.configs) {
    if (c.outcome != Outcome::ok) continue;
    EXPECT_TRUE(c.compiled);
    EXPECT_GT(c.usage.registers, 0) << params_to_text(c.params);
    EXPECT_EQ(c.usage.static_smem, static_cast<int>(256 * sizeof(float))) << "scale_cpp's own shared memory";
    EXPECT_EQ(c.launch.kernel_symbol.rfind("_Z", 0), 0u) << c.launch.kernel_symbol;
    EXPECT_NE(c.launch.kernel_symbol.find("scale_cpp"), std::string::npos);
    if (symbol.empty()) symbol = c.launch.kernel_symbol;
    EXPECT_EQ(c.launch.kernel_symbol, symbol) << "one kernel, one symbol";
    EXPECT_GT(c.compile_ms, 0);
    const ResultRecord r = to_record(c);
    ASSERT_TRUE(r.compile_ms.has_value());
    EXPECT_EQ(*r.compile_ms, c.compile_ms);
    EXPECT_EQ(r.registers, c.usage.registers);
    // The worker is asked for the lowered name.
    const auto req = measure_request(f, problem, c.params, c.launch, "k.cubin", MeasureSettings{});
    EXPECT_EQ(req.kernel.kernel, c.launch.kernel_symbol);
  }
  // The reference (the family's own default configuration) goes through the same compile and lookup.
  const auto setup = setup_request(f, problem, h100, cache, MeasureSettings{});
  EXPECT_EQ(setup.reference.kernel, symbol);
  EXPECT_TRUE(std::filesystem::exists(setup.reference.cubin_path));
}

TEST(CppKernels, TheCacheKeepsTheLoweredNameAndTheOriginalCompileTime) {
  test::TempDir dir;
  const CompileCache cache(dir.path / "cache");
  const std::vector<CompileJob> jobs = {
      {kCppKernel, "scale.cu", "scale_cpp", "sm_90", {}},
      {"extern \"C\" __global__ void plain(float* x) { x[threadIdx.x] *= 2.0f; }\n",
       "plain.cu",
       "plain",
       "sm_90",
       {}},
  };
  const auto first = compile_all(jobs, cache, 1, ParallelMode::threads);
  const auto again = compile_all(jobs, cache, 1, ParallelMode::threads);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_TRUE(std::holds_alternative<CompiledKernel>(first[i])) << std::get<CompileError>(first[i]).log;
    ASSERT_TRUE(std::holds_alternative<CompiledKernel>(again[i]));
    const auto& a = std::get<CompiledKernel>(first[i]);
    const auto& b = std::get<CompiledKernel>(again[i]);
    EXPECT_FALSE(a.from_cache);
    EXPECT_TRUE(b.from_cache);
    EXPECT_GT(a.compile_ms, 0);
    EXPECT_EQ(b.compile_ms, a.compile_ms) << "a cache hit reports the original compile's time";
    EXPECT_EQ(b.lowered_name, a.lowered_name);
    EXPECT_EQ(b.usage.registers, a.usage.registers);
  }
  EXPECT_NE(std::get<CompiledKernel>(first[0]).lowered_name, "scale_cpp");
  EXPECT_EQ(std::get<CompiledKernel>(first[1]).lowered_name, "plain") << "extern \"C\" keeps its name";
  EXPECT_GT(std::get<CompiledKernel>(first[1]).usage.registers, 0);
}

TEST(CppKernels, AKernelNameTheSourceDoesNotDefineFailsToCompileSayingSo) {
  const CompileResult r = compile({kCppKernel, "scale.cu", "scale_missing", "sm_90", {}});
  ASSERT_TRUE(std::holds_alternative<CompileError>(r));
  EXPECT_NE(std::get<CompileError>(r).log.find("scale_missing"), std::string::npos)
      << std::get<CompileError>(r).log;
}

TEST(CppKernels, UsageIsReadForTheNamedKernelOnly) {
  const std::string log =
      "ptxas info    : Compiling entry function '_Z5firstv' for 'sm_90'\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem\n"
      "ptxas info    : Compiling entry function '_Z6secondv' for 'sm_90'\n"
      "ptxas info    : Used 12 registers, used 0 barriers\n";
  EXPECT_EQ(parse_ptxas_usage(log, "_Z6secondv").registers, 12);
  EXPECT_EQ(parse_ptxas_usage(log, "_Z6secondv").static_smem, 0);
  EXPECT_EQ(parse_ptxas_usage(log, "_Z5firstv").registers, 40);
  EXPECT_EQ(parse_ptxas_usage(log, "second").registers, 0) << "an unreported name is unknown, not another's";
}
