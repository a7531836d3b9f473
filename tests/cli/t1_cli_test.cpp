// tiletune import-space as a user meets it: a T1 tuning space becomes a family folder that plan compiles on
// the H100 profile (a C++ kernel, found by its lowered name), and every T1 file that cannot be translated is
// refused in one line naming the field, with nothing written.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_support.hpp"

using nlohmann::json;
using tiletune::test::CmdResult;
using tiletune::test::lines;
using tiletune::test::read_bytes;
using tiletune::test::TempDir;
using tiletune::test::tiletune_cmd;

namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Not extern "C": the kernel's symbol is mangled.
const char* kKernel = R"CU(#ifndef block_size_x
#define block_size_x 32
#endif
#ifndef items
#define items 1
#endif
__global__ void scale_items(float* out, const float* in, float alpha, int n) {
  int base = blockIdx.x * block_size_x * items + threadIdx.x;
#if unroll
#pragma unroll
#endif
  for (int k = 0; k < items; ++k) {
    int i = base + k * block_size_x;
    if (i < n) out[i] = alpha * in[i];
  }
#if defined(kernel_tuner) && defined(grid_size_x)
  static_assert(grid_size_x == (10000 + block_size_x * items - 1) / (block_size_x * items), "grid_size_x");
#else
#error "Kernel Tuner's kernel_tuner and grid_size_x are not defined"
#endif
}
)CU";

const char* kT1 = R"J({
  "General": {"BenchmarkName": "scale items", "OutputFormat": "JSON"},
  "ConfigurationSpace": {
    "TuningParameters": [
      {"Name": "block_size_x", "Type": "int", "Values": "[32*i for i in range(1,5)]", "Default": 32},
      {"Name": "items", "Type": "int", "Values": "[1, 2, 4]", "Default": 1},
      {"Name": "unroll", "Type": "int", "Values": "[i for i in range(2)]", "Default": 0}
    ],
    "Conditions": [
      {"Expression": "block_size_x * items <= 256", "Parameters": ["block_size_x", "items"]},
      {"Expression": "unroll == 0 or items > 1", "Parameters": ["unroll", "items"]}
    ]
  },
  "KernelSpecification": {
    "Language": "CUDA", "KernelName": "scale_items", "KernelFile": "scale.cu",
    "CompilerOptions": ["-std=c++17"],
    "LocalSize": {"X": "block_size_x", "Y": "1", "Z": "1"},
    "GlobalSize": {"X": "ProblemSize[0]", "Y": "1", "Z": "1"},
    "GridDivX": ["block_size_x", "items"],
    "ProblemSize": [10000],
    "SharedMemory": 0,
    "Arguments": [
      {"Name": "out", "Type": "float", "MemoryType": "Vector", "AccessType": "WriteOnly", "FillType": "Constant",
       "FillValue": 0.0, "Size": "ProblemSize[0]"},
      {"Name": "in", "Type": "float", "MemoryType": "Vector", "AccessType": "ReadOnly", "FillType": "Random",
       "Size": 10000},
      {"Name": "alpha", "Type": "float", "MemoryType": "Scalar", "FillValue": 2.0},
      {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": 10000}
    ]
  }
})J";

// Writes a T1 document beside the kernel, in a folder of its own (the kernel is found beside the T1 file).
void write_space(const TempDir& dir, const json& doc) {
  write_text(dir.path / "spaces/t1.json", doc.dump(2));
  write_text(dir.path / "spaces/scale.cu", kKernel);
}

}  // namespace

TEST(ImportSpace, ATranslatedSpacePlansOnTheH100Profile) {
  TempDir dir;
  write_space(dir, json::parse(kT1));
  const CmdResult r = tiletune_cmd("import-space spaces/t1.json -o fams", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("imported scale_items"), std::string::npos) << r.out;
  EXPECT_EQ(read_bytes(dir.path / "fams/scale_items/scale.cu"), kKernel);
  const json family = json::parse(read_bytes(dir.path / "fams/scale_items/family.json"));
  EXPECT_EQ(family["reference"]["family"], "scale_items");
  EXPECT_NE(family["description"].get<std::string>().find("default configuration"), std::string::npos);

  const CmdResult plan =
      tiletune_cmd("plan --templates fams --family scale_items --device-profile h100 --json -j 2", dir);
  ASSERT_EQ(plan.status, 0) << plan.err;
  const json p = json::parse(plan.out);
  // The counts follow from the T1 space: 4 x 3 x 2 configurations, the two conditions prune the rest.
  int total = 0, allowed = 0;
  for (int bx : {32, 64, 96, 128})
    for (int items : {1, 2, 4})
      for (int unroll : {0, 1}) {
        ++total;
        if (bx * items <= 256 && (unroll == 0 || items > 1)) ++allowed;
      }
  ASSERT_EQ(p["configs"].size(), static_cast<std::size_t>(total));
  int ok = 0, pruned = 0;
  for (const auto& c : p["configs"]) {
    const auto& params = c["params"];
    const int bx = params["block_size_x"], items = params["items"], unroll = params["unroll"];
    const bool expect_ok = bx * items <= 256 && (unroll == 0 || items > 1);
    if (c["outcome"] == "ok") {
      ++ok;
      EXPECT_TRUE(expect_ok) << c.dump();
      EXPECT_EQ(c["threads"], bx);
      EXPECT_GT(c["registers"].get<int>(), 0) << "ptxas's report for the mangled kernel: " << c.dump();
    } else {
      ++pruned;
      EXPECT_FALSE(expect_ok) << c.dump();
      EXPECT_EQ(c["reason"].get<std::string>().rfind("constraint: T1 condition ", 0), 0u) << c.dump();
    }
  }
  EXPECT_EQ(ok, allowed);
  EXPECT_EQ(pruned, total - allowed);
  EXPECT_EQ(p["compile"]["jobs"], allowed);
}

TEST(ImportSpace, UntranslatableFilesAreRefusedInOneLineAndNothingIsWritten) {
  struct Case {
    std::string pointer;  // where the change goes ("" for the raw text below)
    json value;
    std::string expect;  // the field named in the message
  };
  const std::string params = "/ConfigurationSpace/TuningParameters", spec = "/KernelSpecification";
  const std::vector<Case> cases = {
      {params + "/0/Values", "[i/2 for i in range(4)]",
       "ConfigurationSpace.TuningParameters[0].Values: cannot translate"},
      {params + "/1/Values", "__import__('os').system('true')",
       "ConfigurationSpace.TuningParameters[1].Values"},
      {params + "/1/Values", "[1.5, 2]", "ConfigurationSpace.TuningParameters[1].Values"},
      {params + "/2/Values", "range(10**8)", "ConfigurationSpace.TuningParameters[2].Values"},
      {params + "/2/Values", std::string(100, '[') + std::string(100, ']'), "TuningParameters[2].Values"},
      {params + "/1/Type", "float", "ConfigurationSpace.TuningParameters[1].Type"},
      {params + "/1/Default", 3, "ConfigurationSpace.TuningParameters[1].Default"},
      {params + "/0/Name", "cc", "ConfigurationSpace.TuningParameters[0].Name"},
      {params + "/0/Name", "int", "ConfigurationSpace.TuningParameters[0].Name: 'int' is a C++ or CUDA name"},
      {params + "/1/Name", "float", "ConfigurationSpace.TuningParameters[1].Name: 'float'"},
      {params + "/1/Name", "__global__",
       "ConfigurationSpace.TuningParameters[1].Name: '__global__' is reserved"},
      {params + "/2/Name", "threadIdx", "ConfigurationSpace.TuningParameters[2].Name: 'threadIdx'"},
      {params + "/2/Name", "uint32_t", "ConfigurationSpace.TuningParameters[2].Name: 'uint32_t'"},
      {params + "/2/Name", "float4", "ConfigurationSpace.TuningParameters[2].Name: 'float4'"},
      {"/ConfigurationSpace/Conditions/0/Expression", "block_size_x ** items > 4",
       "ConfigurationSpace.Conditions[0].Expression: cannot translate"},
      {"/ConfigurationSpace/Conditions/1/Expression", "unroll & 1",
       "ConfigurationSpace.Conditions[1].Expression"},
      {"/ConfigurationSpace/Conditions/0/Expression", "block_size_x / 2 > 4", "Conditions[0].Expression"},
      {"/ConfigurationSpace/Conditions/0/Expression", "threads > 1", "Conditions[0].Expression"},
      {"/ConfigurationSpace/Conditions/0/Expression", "block_size_x > 32",
       "ConfigurationSpace.Conditions[0].Expression: does not hold at the Default values"},
      {spec + "/Language", "OpenCL", "KernelSpecification.Language"},
      {spec + "/Arguments/0/Type", "float4", "KernelSpecification.Arguments[0].Type"},
      {spec + "/Arguments/1/FillType", "BinaryRaw", "KernelSpecification.Arguments[1].FillType"},
      {spec + "/Arguments/1/MemoryType", "Local", "KernelSpecification.Arguments[1].MemoryType"},
      {spec + "/Arguments/0/AccessType", "ReadOnly",
       "KernelSpecification.Arguments: no WriteOnly or ReadWrite"},
      {spec + "/Arguments/1/Size", "max(block_size_x) * foo", "KernelSpecification.Arguments[1].Size"},
      {spec + "/Arguments/2/Type", "uint16", "KernelSpecification.Arguments[2].Type"},
      {spec + "/KernelFile", "missing.cu", "KernelSpecification.KernelFile"},
      // A regular file whose every read fails (EIO): never read as an empty kernel.
      {spec + "/KernelFile", "/proc/self/mem", "KernelSpecification.KernelFile: cannot read /proc/self/mem"},
      {spec + "/KernelName", "scale items; rm", "KernelSpecification.KernelName"},
      {spec + "/GlobalSizeType", "Vulkan", "KernelSpecification.GlobalSizeType"},
      {spec + "/ProblemSize", json::array({0}), "KernelSpecification.ProblemSize[0]"},
      {spec + "/ProblemSize", json::array({"block_size_x * 2"}), "KernelSpecification.ProblemSize[0]"},
      {spec + "/LocalSize/Y", "64", "KernelSpecification.LocalSize: 2048 threads per block"},
      {spec + "/CompilerOptions/0", "-arch=sm_50", "KernelSpecification.CompilerOptions[0]"},
      {spec + "/GridDivX/0", "block_size_x - block_size_x",
       "KernelSpecification.GridDivX: cannot be evaluated"},
      {"", "{\"ConfigurationSpace\": [", "not valid JSON"},
      {"", "[1, 2]", "must hold a JSON object"},
      {"", std::string(kT1) + std::string("\0", 1) + "{garbage", "holds a NUL byte at offset"},
  };
  for (const auto& c : cases) {
    TempDir dir;
    json doc = json::parse(kT1);
    if (!c.pointer.empty()) doc[json::json_pointer(c.pointer)] = c.value;
    write_space(dir, doc);
    if (c.pointer.empty()) write_text(dir.path / "spaces/t1.json", c.value.get<std::string>());
    const CmdResult r = tiletune_cmd("import-space spaces/t1.json -o fams", dir);
    EXPECT_EQ(r.status, 1) << c.pointer << ": " << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("tiletune import-space: spaces/t1.json: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos)
        << c.pointer << " = " << c.value.dump() << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.path / "fams")) << "written despite: " << r.err;
  }
}

TEST(ImportSpace, AnExistingFamilyFolderIsReplacedOnlyWithForce) {
  TempDir dir;
  write_space(dir, json::parse(kT1));
  ASSERT_EQ(tiletune_cmd("import-space spaces/t1.json -o fams --name mine", dir).status, 0);
  const std::string before = read_bytes(dir.path / "fams/mine/family.json");
  json changed = json::parse(kT1);
  changed["ConfigurationSpace"]["TuningParameters"][1]["Default"] = 2;
  write_space(dir, changed);
  const CmdResult refused = tiletune_cmd("import-space spaces/t1.json -o fams --name mine", dir);
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("exists: give --force"), std::string::npos) << refused.err;
  EXPECT_EQ(read_bytes(dir.path / "fams/mine/family.json"), before);
  const CmdResult forced = tiletune_cmd("import-space spaces/t1.json -o fams --name mine --force", dir);
  ASSERT_EQ(forced.status, 0) << forced.err;
  EXPECT_EQ(json::parse(read_bytes(dir.path / "fams/mine/family.json"))["parameters"]["items"]["default"], 2);
  EXPECT_NE(
      tiletune_cmd("import-space spaces/t1.json -o fams --name 'not a name'", dir).err.find("identifier"),
      std::string::npos);
  EXPECT_EQ(tiletune_cmd("import-space spaces/t1.json", dir).status, 2) << "-o is required";
}
