// Text from outside (templates, compile logs, files) on its way into JSON or onto a terminal: invalid UTF-8
// is found or replaced, control characters escaped, so that neither a JSON printer nor a terminal receives
// bytes it cannot take.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tiletune {

// The text up to its first newline: a long message (a compile log, a parser's report) as one line.
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Why text from a file cannot be read as text ("" when it can): a NUL byte, at which JSON parsers stop, so
// whatever follows it would be ignored without a word. "holds a NUL byte at offset 12".
inline std::string nul_byte_problem(std::string_view text) {
  const std::size_t at = text.find('\0');
  if (at == std::string_view::npos) return "";
  return "holds a NUL byte at offset " + std::to_string(at) + " (text has none)";
}

// The length of the valid UTF-8 sequence at text[i], or 0 when the bytes there are not one.
inline std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  const unsigned char d = byte(i + 1);
  if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F) || (c == 0xF0 && d < 0x90) ||
      (c == 0xF4 && d > 0x8F))
    return 0;  // overlong, a surrogate, or past U+10FFFF
  return n;
}

inline bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Each byte that does not start a valid sequence becomes U+FFFD.
inline std::string replace_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

// For a terminal: valid UTF-8, and control characters other than newline and tab written as \xNN.
// C1 control characters (U+0080 to U+009F, "\xC2\x80" to "\xC2\x9F" in UTF-8) are escaped as \u0080 to
// \u009f: a terminal takes some of them as ESC sequences (U+009B is CSI). keep_lines = false escapes newlines
// and tabs too (\n, \t), so that the text is one line.
inline std::string printable(std::string_view text, bool keep_lines = true) {
  static const char* hex = "0123456789abcdef";
  const std::string valid = replace_invalid_utf8(text);
  std::string out;
  for (std::size_t i = 0; i < valid.size(); ++i) {
    const auto u = static_cast<unsigned char>(valid[i]);
    if (keep_lines && (u == '\n' || u == '\t')) {
      out += valid[i];
    } else if (u == '\n' || u == '\t') {
      out += u == '\n' ? "\\n" : "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else if (u == 0xC2 && i + 1 < valid.size() && static_cast<unsigned char>(valid[i + 1]) < 0xA0) {
      const auto c1 = static_cast<unsigned char>(valid[++i]);  // 0x80 to 0x9F: valid UTF-8 makes it one
      out += "\\u00";
      out += hex[c1 >> 4];
      out += hex[c1 & 15];
    } else {
      out += valid[i];
    }
  }
  return out;
}

// The text as one line a terminal shows as it is: every control character escaped, newlines included.
inline std::string printable_line(std::string_view text) { return printable(text, false); }

}  // namespace tiletune
