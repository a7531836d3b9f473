// Names that tiletune #defines ahead of a kernel (its tunable parameters): a name the compiler or CUDA
// already gives a meaning would be replaced everywhere in the source, so that nothing compiles.
#pragma once

#include <string>

namespace tiletune {

// Why `name` cannot be #defined ahead of a CUDA kernel ("" when it can): a C or C++ keyword or fundamental
// type ("int", "float"), a name reserved to the compiler (two leading underscores, or one and a capital:
// "__global__"), a CUDA built-in variable or vector type ("threadIdx", "float4"), or a standard integer type
// ("size_t", "int32_t"). Assumes `name` is an identifier.
std::string macro_name_problem(const std::string& name);

}  // namespace tiletune
