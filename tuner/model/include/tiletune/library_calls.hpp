// The library calls that bench can time beside a family (cuBLAS, the device-to-device copy): their names and
// operands. A family maps its own buffers and problem expressions onto these operands; the measuring worker
// holds the one table of calls.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tiletune {

struct LibraryCallInfo {
  std::string name;
  std::vector<std::string> buffers;           // operands that must name a buffer
  std::vector<std::string> optional_buffers;  // operands that may name a buffer
  std::vector<std::string> scalars;           // operands given as expressions of problem variables
  std::string output;                         // the operand it writes and that is checked, or empty
  std::string what;
};

const std::vector<LibraryCallInfo>& library_calls();
const LibraryCallInfo* find_library_call(std::string_view name);
std::string library_call_list();

}  // namespace tiletune
