// A kernel family: one self-describing unit in kernel_templates/ (family.json beside its .cu template).
// Adding a family is adding a folder: nothing here knows any family by name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/element_type.hpp"
#include "tiletune/expr.hpp"
#include "tiletune/input_file.hpp"
#include "tiletune/records.hpp"

namespace tiletune {

// The name under which constraints and launch expressions read the device's compute capability, as
// 10 * major + minor (90 on the H100). It is reserved: no parameter or problem argument may take it.
inline constexpr const char* kDeviceCcVar = "cc";
// The name under which they read the device's number of SMs (132 on the H100 SXM), e.g. for a grid of one
// block per SM. Reserved too.
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

enum class ArgKind { buffer, scalar, tensor_map };
// inout: read and written in place; restored from a saved copy of its input before every run.
enum class BufferRole { input, output, inout };
std::string to_string(BufferRole role);

// How the worker fills an input buffer or a constant: from the seeded counter-based hash, or from a file.
struct Fill {
  enum class Kind { uniform, range, constant, file };
  Kind kind = Kind::uniform;
  double lo = -1, hi = 1;  // uniform: reals in [lo, hi); range: integers in [lo, hi]; constant: lo
  InputFormat format = InputFormat::npy;  // file: .npy or raw little-endian
  std::filesystem::path path;             // file: absolute
  std::string hash;                       // file: content hash of its bytes, part of the template hash
};
// A fill from a file, checked against the element type (the count is checked per problem). Throws
// InputFileError naming the file.
Fill file_fill(const std::filesystem::path& path, InputFormat format, ElementType type);
// The default fill of a type: uniform [-1, 1) for floating types, a range that is never all zeros for
// integers.
Fill default_fill(ElementType type);

// A TMA descriptor (CUtensorMap) over one of the family's buffers: the worker and the runtime encode it
// with cuTensorMapEncodeTiled over the buffer's device pointer, and the kernel receives its 128 bytes by
// value (a `const __grid_constant__` struct of 128 bytes, aligned to 64). Its expressions may read the
// parameters, the problem variables, cc and sms; prune_before_compile checks them against TMA's rules.
struct TensorMapArg {
  std::string buffer;                      // the buffer it describes
  ElementType element = ElementType::f32;  // the buffer's type unless "element" names another of its size
  bool tf32 = false;                       // "element": "tfloat32" (a float buffer read as TF32)
  std::vector<Expr> dims;                  // element counts, innermost (contiguous) first: 1 to 5
  std::vector<Expr> strides;               // byte strides of dims[1..]; empty: packed
  std::vector<Expr> box;                   // the box (tile) in elements, per dimension
  Expr swizzle;                            // bytes: 0 (none), 32, 64 or 128
  Expr l2_promotion;                       // bytes: 0, 64, 128 or 256
  bool oob_nan = false;                    // elements outside the tensor read as NaN rather than zero
};

struct Argument {
  std::string name;
  ArgKind kind = ArgKind::buffer;
  ElementType type = ElementType::f32;
  Expr count;  // buffers: element count
  BufferRole role = BufferRole::input;
  Fill fill;                   // buffers read by the kernel
  std::vector<Expr> dims;      // buffers: optional row-major shape, for naming an element's coordinates
  Expr value;                  // scalars: an integer expression
  std::optional<double> real;  // float and double scalars given as a number
  TensorMapArg tensor_map;     // tensor maps

  bool is_output() const { return kind == ArgKind::buffer && role != BufferRole::input; }
};

// A __constant__ symbol the worker fills before launching (e.g. a convolution mask), in the kernel's module
// and in the reference's.
struct ConstantSymbol {
  std::string name;
  ElementType type = ElementType::f32;
  Expr count;
  Fill fill;
};

struct Launch {
  std::vector<Expr> block;  // 1 to 3 expressions
  std::vector<Expr> grid;
  std::vector<Expr> cluster;  // thread block cluster, 1 to 3 expressions; empty: 1 x 1 x 1
  Expr dynamic_shared_bytes;
  Expr static_shared_bytes;  // the template's own estimate, checked before compiling
};

// Per-element tolerance: |out - ref| <= atol + rtol * max(|ref|, scale_floor); integers compare exactly.
struct Tolerance {
  double rtol = 1e-4;
  double atol = 0;
  std::optional<double> scale_floor;  // default: the root mean square of the reference output
};
Tolerance default_tolerance(ElementType output);

struct KernelFamily;

// One argument of a reference kernel: one of the family's arguments by name, or a scalar of its own.
struct ReferenceArgument {
  std::string name;  // empty: the scalar below
  ElementType scalar = ElementType::i32;
  Expr value;  // an integer expression of problem variables
};

// A plain kernel that computes the truth, in some family's folder.
struct ReferenceKernel {
  std::filesystem::path directory;  // the folder that holds it
  std::string file;
  std::string source;
  std::string name;                          // extern "C" kernel
  std::vector<ReferenceArgument> arguments;  // in the reference kernel's order
  std::vector<Expr> block, grid;             // expressions of problem variables
  bool double_outputs = true;                // floating outputs reach it as double arrays
};

// A kernel that derives inputs from inputs once per problem, after the fills and before the reference (e.g.
// slopes from a polygon's vertices). Its arguments are the family's input and inout buffers and scalars, by
// name, or scalars of its own; it writes only those buffers.
struct SetupKernel {
  ReferenceKernel kernel;  // its file in the family's folder, name, arguments and launch geometry
};

struct Reference {
  enum class Kind { kernel, family };
  Kind kind = Kind::kernel;
  ReferenceKernel kernel;  // Kind::kernel (its own, or another family's with "from")
  // "from": the family whose reference kernel file this one uses; a "name", "block", "grid" or "arguments"
  // given here as well replace that kernel's own.
  std::string from;
  std::string family;  // Kind::family: run that family's configuration
  Params config;
  std::shared_ptr<const KernelFamily> family_def;  // resolved by load_families
  std::optional<double> rtol, atol, scale_floor;
  // Integer outputs: how many elements may differ from the truth (ties a variant may break otherwise), as a
  // count or as a fraction of the output's elements.
  std::optional<std::uint64_t> max_differing;
  std::optional<double> max_differing_fraction;

  // How many elements of an output of `count` elements of this type may differ: 0 for floating types.
  std::uint64_t allowed_differing(ElementType output, std::uint64_t count) const;
  // The tolerance for one output buffer of the given type.
  Tolerance tolerance_for(ElementType output) const;
  // The type the truth of an output of this type is held in: double for a floating output that a reference
  // kernel writes as double, else the output's own.
  ElementType truth_type(ElementType output) const;
};

// A library call bench compares with: the library's operand names mapped onto the family's buffers and
// problem expressions.
struct LibraryBaseline {
  std::string library;
  std::map<std::string, std::string> buffers;  // operand -> the family's buffer name
  std::map<std::string, Expr> scalars;         // operand -> expression of problem variables
};

struct KernelFamily {
  std::string name;
  std::string description;
  std::filesystem::path directory;
  std::string source_file;        // file name inside directory (or inside source_from's)
  std::string source_from;        // the family whose folder holds the template; empty: this one
  std::string source;             // template text
  std::string arch_suffix;        // "", "a" or "f": compiled for sm_XX plus this (sm_90a for wgmma)
  std::string kernel;             // extern "C" kernel name
  std::vector<std::string> dims;  // problem dimensions in order, e.g. M, N, K
  std::vector<ProblemArg> problem_args;
  std::vector<Condition> problem_checks;
  std::vector<std::string> default_sizes;  // size texts
  // The main job's budget at some of the default sizes (text as in default_sizes), where the family asks
  // for other than the main job's own (a space whose optimum a short search often misses).
  std::map<std::string, std::size_t> default_budgets;
  std::vector<Parameter> parameters;
  std::vector<Condition> constraints;
  Launch launch;
  std::vector<Argument> arguments;  // kernel parameters, in order
  std::vector<ConstantSymbol> constants;
  Expr metric_work;                // FLOPs or bytes moved for one run
  std::string metric_unit;         // "GFLOP/s" or "GB/s"
  std::vector<SetupKernel> setup;  // in the order they run
  Reference reference;
  std::vector<std::string> compile_options;
  std::vector<std::string> baselines;  // families bench compares against
  std::vector<LibraryBaseline> library_baselines;
  std::string description_json;  // the family.json text as read
  std::string template_hash;     // over family.json, the template source and the reference kernel

  // The family's default configuration.
  Params default_params() const;
  // Hash of the parameter names and values: a resumed sweep must see the same space.
  std::string space_hash() const;
  // Variables for expressions: problem dims and args (with defaults filled in) plus the params.
  Vars vars(const ProblemKey& problem, const Params& params) const;
  // Fills in default args and checks dims count, positivity and the family's problem checks.
  // Throws FamilyError with a one-line message naming the family.
  ProblemKey make_problem(const std::vector<std::int64_t>& dims,
                          const std::map<std::string, std::int64_t>& args) const;
  // Source text NVRTC compiles for one configuration: the parameters as #defines ahead of the template.
  std::string source_for(const Params& params) const;
};

// The problem one of the family's default sizes names ("4096x4096x4096", "268435456 mask_width=31"), its
// args' defaults filled in. Throws std::invalid_argument on malformed text, FamilyError where make_problem
// does.
ProblemKey default_problem(const KernelFamily& family, const std::string& size_text);

// The argument of that name; nullptr when there is none.
const Argument* find_argument(const KernelFamily& family, const std::string& name);

// Loads one family from a folder holding family.json. Throws FamilyError, one line naming the file. A
// reference that names another family ("from", "family") is resolved by load_families.
KernelFamily load_family(const std::filesystem::path& directory);

// Every family under the given roots (each root holds one folder per family). Later roots override earlier
// ones of the same name. References to other families are resolved and checked. Throws FamilyError on the
// first malformed family.
std::vector<KernelFamily> load_families(const std::vector<std::filesystem::path>& roots);

// The built-in families' folder: $TILETUNE_TEMPLATES, else the one set_builtin_templates_dir named, else next
// to the executable (../share/tiletune/kernel_templates), else the installed one, else the source tree's.
std::filesystem::path builtin_templates_dir();
// Makes builtin_templates_dir() answer `directory` (TILETUNE_TEMPLATES still comes first): for programs that
// carry the families elsewhere, such as the Python package.
void set_builtin_templates_dir(const std::filesystem::path& directory);

// Fills the input buffer or constant `name` from a file for this run (`--input NAME=PATH`: .npy by its
// extension, raw otherwise) and re-hashes the template, so results on these data are kept apart. Throws
// FamilyError, one line naming the input and the file.
void use_input_file(KernelFamily& family, const std::string& name, const std::filesystem::path& path);
// The hash that identifies a family's results: its description, template, reference and input files.
std::string template_hash_of(const KernelFamily& family);

const KernelFamily& find_family(const std::vector<KernelFamily>& families, const std::string& name);

// Siblings: two families of one template (the same source, kernel, dimensions and parameter names) whose
// buffers hold elements of the same sizes, such as the BF16 and FP16 GEMMs, or one with B given as N x K and
// one as K x N. The same configuration then moves the same bytes through the same code, and on the same
// problem their configurations rank alike, so a sweep of one can start from the other's (transfer).
bool are_siblings(const KernelFamily& a, const KernelFamily& b);
// The names of `family`'s siblings among `families`, in their order.
std::vector<std::string> sibling_families(const std::vector<KernelFamily>& families,
                                          const KernelFamily& family);

// FNV-1a 64-bit, hex. Not cryptographic: identifies content for caching and provenance.
std::string content_hash(const std::string& text);

}  // namespace tiletune
