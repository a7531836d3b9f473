// Bounds on JSON documents read from files: a document nested deeper than a description can need is refused
// before it is parsed, so that no parser, printer or destructor recurses without bound on hostile input.
#pragma once

#include <cstddef>
#include <string_view>

namespace tiletune {

inline constexpr std::size_t kMaxJsonDepth = 64;

// The deepest nesting of [ and { in text, outside strings (escapes honoured).
inline std::size_t json_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return deepest;
}

}  // namespace tiletune
