#include "tiletune/macro_name.hpp"

#include <regex>
#include <set>

namespace tiletune {

namespace {

// C++20's keywords and alternative tokens (C's are among them), "defined", and the names a kernel spells
// that CUDA or the standard library give it.
const std::set<std::string>& keywords() {
  static const std::set<std::string> words = {
      "alignas",     "alignof",      "and",          "and_eq",
      "asm",         "auto",         "bitand",       "bitor",
      "bool",        "break",        "case",         "catch",
      "char",        "char8_t",      "char16_t",     "char32_t",
      "class",       "co_await",     "co_return",    "co_yield",
      "compl",       "concept",      "const",        "consteval",
      "constexpr",   "constinit",    "const_cast",   "continue",
      "decltype",    "default",      "defined",      "delete",
      "do",          "double",       "dynamic_cast", "else",
      "enum",        "explicit",     "export",       "extern",
      "false",       "float",        "for",          "friend",
      "goto",        "if",           "inline",       "int",
      "long",        "mutable",      "namespace",    "new",
      "noexcept",    "not",          "not_eq",       "nullptr",
      "operator",    "or",           "or_eq",        "private",
      "protected",   "public",       "register",     "reinterpret_cast",
      "requires",    "restrict",     "return",       "short",
      "signed",      "sizeof",       "static",       "static_assert",
      "static_cast", "struct",       "switch",       "template",
      "this",        "thread_local", "throw",        "true",
      "try",         "typedef",      "typeid",       "typename",
      "union",       "unsigned",     "using",        "virtual",
      "void",        "volatile",     "wchar_t",      "while",
      "xor",         "xor_eq",       "half",         "nv_bfloat16",
      "size_t",      "ptrdiff_t",    "intptr_t",     "uintptr_t",
      "nullptr_t",   "threadIdx",    "blockIdx",     "blockDim",
      "gridDim",     "warpSize",     "dim3",         "std",
      "cuda",        "assert",       "printf",       "min",
      "max"};
  return words;
}

}  // namespace

std::string macro_name_problem(const std::string& name) {
  if (keywords().count(name))
    return "'" + name + "' is a C++ or CUDA name; defined as a macro it breaks the kernel";
  if (name.size() >= 2 && name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z')))
    return "'" + name + "' is reserved to the compiler (it starts with __ or _ and a capital)";
  static const std::regex types(
      "u?int(8|16|32|64)_t|u?int_(fast|least)(8|16|32|64)_t|u?intmax_t|"
      "(u?char|u?short|u?int|u?long|u?longlong|float|double|half|bfloat16)[1-4]");
  if (std::regex_match(name, types))
    return "'" + name + "' is a standard or CUDA type; defined as a macro it breaks the kernel";
  return "";
}

}  // namespace tiletune
