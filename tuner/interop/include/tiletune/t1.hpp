// Import of tuning spaces written in the T1 format (the auto-tuning community's JSON description of a
// kernel's tuning problem, which Kernel Tuner reads with tune_kernel_T1) as tiletune families: the tunable
// parameters and their conditions, the launch geometry, the problem size and the kernel's arguments become a
// family.json beside a copy of the kernel file.
//
// T1 writes values, conditions and sizes as Python expressions. They are read by a small parser of the part
// of Python they use and either evaluated here (parameter values, argument sizes: Kernel Tuner evaluates
// them once) or translated into tiletune's integer expressions with Python's meaning kept (floor division
// and modulo, chained comparisons). A T1 file has no reference kernel: the family's default configuration is
// its own truth. Whatever cannot be translated is a T1Error of one line naming the file and the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tiletune {

class T1Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct T1Family {
  std::string name;                   // the family's name, and its folder's
  std::string family_json;            // the text of family.json
  std::filesystem::path kernel_path;  // the kernel file, found as Kernel Tuner finds it
  std::string kernel_file;            // its name in the family's folder
  std::string kernel_source;          // its bytes
};

// Translates a T1 document. `t1_path` is the file as the user named it: messages start with it, and the
// kernel file is looked for as Kernel Tuner does (as written, then beside the T1 file, then one folder up).
// `name`, when not empty, is the family's name; otherwise General.BenchmarkName,
// KernelSpecification.BenchmarkName or KernelName, made an identifier. Throws T1Error, one line: "T1.json:
// ConfigurationSpace.TuningParameters[2].Values: cannot translate '...': why".
T1Family translate_t1(const std::string& text, const std::filesystem::path& t1_path,
                      const std::string& name = "");

// Reads (at most 1 MB) and translates a T1 file.
T1Family read_t1(const std::filesystem::path& t1_path, const std::string& name = "");

// Writes the family into out_dir/NAME (family.json and the kernel file) and returns that folder. The files
// are staged in out_dir and loaded as tiletune loads families before they are moved into place, so that an
// error leaves out_dir as it was. An existing family.json or kernel file there is replaced only with `force`.
std::filesystem::path write_t1_family(const T1Family& family, const std::filesystem::path& out_dir,
                                      bool force);

// The Python pieces on their own (the tests check them against Python's arithmetic and tiletune's
// evaluator). Each throws T1Error with the reason, without a field.
namespace t1 {

// A parameter's Values: a list display or comprehension, evaluated ("[2**i for i in range(6)]").
std::vector<std::int64_t> evaluate_values(const std::string& python);

// A condition over parameters (each with its values) as a tiletune constraint expression with the same
// truth value for every combination of those values.
std::string translate_condition(const std::string& python,
                                const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& params);

}  // namespace t1

}  // namespace tiletune
