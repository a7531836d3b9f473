// --input NAME=PATH of sweep and bench: a family's input buffer or constant filled from the user's file.
#pragma once

#include <string>
#include <vector>

#include "tiletune/family.hpp"

namespace tiletune::cli {

// Fills the inputs of `family` (and, with `baselines`, the same-named inputs of each baseline family it
// names) from the files given. Throws UsageError for a malformed option and FamilyError, one line, for an
// unknown input or a file that does not fit.
void use_input_files(std::vector<KernelFamily>& fams, const std::string& command, const std::string& family,
                     const std::vector<std::string>& inputs, bool baselines);

}  // namespace tiletune::cli
