// A kernel family: one self-describing unit in kernel_templates/ (family.json beside its .cu template).
// Adding a family is adding a folder: nothing here knows any family by name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/expr.hpp"
#include "tiletune/records.hpp"

namespace tiletune {

// The name under which constraints and launch expressions read the device's compute capability, as
// 10 * major + minor (90 on the H100). It is reserved: no parameter or problem argument may take it.
inline constexpr const char* kDeviceCcVar = "cc";
// The name under which they read the device's number of SMs (132 on the H100 SXM), e.g. for a grid of one block
// per SM. Reserved too.
inline constexpr const char* kDeviceSmsVar = "sms";

class FamilyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Parameter {
  std::string name;
  std::vector<std::int64_t> values;
  std::int64_t default_value = 0;
};

// A named condition. Family constraints shape the space; problem checks reject impossible problems.
struct Condition {
  Expr expr;
  std::string message;  // what the user is told; defaults to the expression text
};

struct ProblemArg {
  std::string name;
  std::int64_t default_value = 0;
};

enum class ArgKind { buffer, scalar };
enum class BufferRole { input, output };

struct Argument {
  std::string name;
  ArgKind kind = ArgKind::buffer;
  std::string type;       // buffers: "float"; scalars: "int" or "long"
  Expr count;             // buffers: element count
  BufferRole role = BufferRole::input;
  Expr value;             // scalars
};

// A __constant__ symbol the worker fills before launching (e.g. a convolution mask).
struct ConstantSymbol {
  std::string name;
  std::string type;  // "float"
  Expr count;
};

struct Launch {
  std::vector<Expr> block;  // 1 to 3 expressions
  std::vector<Expr> grid;
  Expr dynamic_shared_bytes;
  Expr static_shared_bytes;  // the template's own estimate, checked before compiling
};

struct Reference {
  std::string kind;  // "gemm", "conv1d", "conv2d"; the worker knows each by name
  double tolerance = 1e-4;  // relative L2 error allowed
  std::string math = "fp32";  // gemm: the library baseline's math, "fp32" (cuBLAS SGEMM) or "tf32" (tensor cores)
};

struct KernelFamily {
  std::string name;
  std::string description;
  std::filesystem::path directory;
  std::string source_file;  // file name inside directory
  std::string source;       // template text
  std::string kernel;       // extern "C" kernel name
  std::vector<std::string> dims;  // problem dimensions in order, e.g. M, N, K
  std::vector<ProblemArg> problem_args;
  std::vector<Condition> problem_checks;
  std::vector<std::string> default_sizes;  // size texts
  std::vector<Parameter> parameters;
  std::vector<Condition> constraints;
  Launch launch;
  std::vector<Argument> arguments;  // kernel parameters, in order
  std::vector<ConstantSymbol> constants;
  Expr metric_work;  // FLOPs or bytes moved for one run
  std::string metric_unit;  // "GFLOP/s" or "GB/s"
  Reference reference;
  std::vector<std::string> compile_options;
  std::vector<std::string> baselines;  // families bench compares against beside the library baseline
  std::string description_json;  // the family.json text as read
  std::string template_hash;     // over family.json and the template source

  // The family's default configuration.
  Params default_params() const;
  // Hash of the parameter names and values: a resumed sweep must see the same space.
  std::string space_hash() const;
  // Variables for expressions: problem dims and args (with defaults filled in) plus the params.
  Vars vars(const ProblemKey& problem, const Params& params) const;
  // Fills in default args and checks dims count, positivity and the family's problem checks.
  // Throws FamilyError with a one-line message naming the family.
  ProblemKey make_problem(const std::vector<std::int64_t>& dims, const std::map<std::string, std::int64_t>& args) const;
  // Source text NVRTC compiles for one configuration: the parameters as #defines ahead of the template.
  std::string source_for(const Params& params) const;
};

// Loads one family from a folder holding family.json. Throws FamilyError, one line naming the file.
KernelFamily load_family(const std::filesystem::path& directory);

// Every family under the given roots (each root holds one folder per family). Later roots override earlier
// ones of the same name. Throws FamilyError on the first malformed family.
std::vector<KernelFamily> load_families(const std::vector<std::filesystem::path>& roots);

// The built-in families' folder: $TILETUNE_TEMPLATES, else next to the executable
// (../share/tiletune/kernel_templates), else the source tree's kernel_templates.
std::filesystem::path builtin_templates_dir();

const KernelFamily& find_family(const std::vector<KernelFamily>& families, const std::string& name);

// FNV-1a 64-bit, hex. Not cryptographic: identifies content for caching and provenance.
std::string content_hash(const std::string& text);

}  // namespace tiletune
