#include "tiletune/input_file.hpp"

#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

namespace tiletune {
namespace {

// The text quoted from a hostile header is made printable, so that the message stays one line.
[[noreturn]] void fail(const std::string& field, const std::string& what) {
  std::string line = "npy " + field + ": " + what;
  for (char& c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  throw InputFileError(line);
}

// The numpy type strings of tiletune's element types ('<' little-endian, '|' single byte, '=' native, which
// is little-endian on every GPU host).
std::optional<ElementType> type_of_descr(const std::string& descr) {
  if (descr.size() < 3) return std::nullopt;
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  static const std::array<std::pair<const char*, ElementType>, 8> kinds = {{{"f4", ElementType::f32},
                                                                            {"f8", ElementType::f64},
                                                                            {"f2", ElementType::f16},
                                                                            {"i1", ElementType::i8},
                                                                            {"u1", ElementType::u8},
                                                                            {"i4", ElementType::i32},
                                                                            {"u4", ElementType::u32},
                                                                            {"i8", ElementType::i64}}};
  for (const auto& [name, type] : kinds) {
    if (kind != name) continue;
    const bool one_byte = kind[1] == '1';
    if (order == '<' || order == '=' || (one_byte && order == '|')) return type;
  }
  return std::nullopt;
}

// The numpy type string of an element type; empty for bfloat16, which numpy lacks.
std::string descr_of(ElementType type) {
  switch (type) {
    case ElementType::f32:
      return "<f4";
    case ElementType::f64:
      return "<f8";
    case ElementType::f16:
      return "<f2";
    case ElementType::i8:
      return "|i1";
    case ElementType::u8:
      return "|u1";
    case ElementType::i32:
      return "<i4";
    case ElementType::u32:
      return "<u4";
    case ElementType::i64:
      return "<i8";
    default:
      return "";
  }
}

// A cursor over the header's Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (3,), }
class HeaderText {
 public:
  explicit HeaderText(std::string_view text) : text_(text) {}
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c, const std::string& field) {
    if (!take(c)) fail(field, std::string("expected '") + c + "' in the header dictionary");
  }
  std::string quoted(const std::string& field) {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) fail(field, "expected a string");
    const char quote = text_[pos_++];
    const auto end = text_.find(quote, pos_);
    if (end == std::string_view::npos || end - pos_ > 64) fail(field, "unterminated or overlong string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  bool boolean(const std::string& field) {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (text_.substr(pos_, std::strlen(word)) == word) return pos_ += std::strlen(word), value;
    fail(field, "expected True or False");
  }
  std::uint64_t integer(const std::string& field) {
    skip_space();
    std::uint64_t v = 0;
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (v > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) fail(field, "a dimension overflows");
      v = v * 10 + static_cast<std::uint64_t>(text_[pos_++] - '0');
    }
    if (pos_ == start) fail(field, "expected a non-negative integer");
    return v;
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

std::vector<std::uint64_t> parse_shape(HeaderText& h) {
  std::vector<std::uint64_t> shape;
  h.expect('(', "shape");
  while (!h.take(')')) {
    if (shape.size() >= 32) fail("shape", "more than 32 dimensions");
    shape.push_back(h.integer("shape"));
    if (!h.take(',')) {
      h.expect(')', "shape");
      break;
    }
  }
  return shape;
}

void parse_entries(HeaderText& h, NpyHeader& out) {
  bool seen_descr = false, seen_order = false, seen_shape = false;
  h.expect('{', "header");
  while (!h.take('}')) {
    const std::string key = h.quoted("header key");
    h.expect(':', key);
    bool* seen = key == "descr" ? &seen_descr : key == "fortran_order" ? &seen_order : &seen_shape;
    if (key != "descr" && key != "fortran_order" && key != "shape")
      fail("header", "unknown key '" + key + "'");
    if (*seen) fail(key, "given twice");
    *seen = true;
    if (key == "descr") out.descr = h.quoted("descr");
    if (key == "fortran_order") out.fortran_order = h.boolean("fortran_order");
    if (key == "shape") out.shape = parse_shape(h);
    if (!h.take(',')) {
      h.expect('}', "header");
      break;
    }
  }
  if (!h.at_end()) fail("header", "text after the dictionary");
  if (!seen_descr || !seen_order || !seen_shape) fail("header", "needs descr, fortran_order and shape");
}

std::uint64_t little_endian(std::string_view bytes, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

// The element count of a shape, or a failure where it overflows 2^62 elements.
std::uint64_t element_count(const std::vector<std::uint64_t>& shape) {
  std::uint64_t count = 1;
  for (const std::uint64_t d : shape) {
    if (d != 0 && count > (std::uint64_t{1} << 62) / d) fail("shape", "declares more than 2^62 elements");
    count *= d;
  }
  return count;
}

std::uint64_t file_size_of(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputFileError(path.string() + ": not a readable regular file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw InputFileError(path.string() + ": cannot read its size (" + ec.message() + ")");
  return size;
}

InputLayout npy_layout(const std::filesystem::path& path, ElementType type) {
  const std::uint64_t size = file_size_of(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputFileError(path.string() + ": cannot open");
  std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(size, 65536 + 12)), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  if (in.gcount() != static_cast<std::streamsize>(head.size()))
    throw InputFileError(path.string() + ": read failed");
  NpyHeader h;
  try {
    h = parse_npy_header(head, size);
  } catch (const InputFileError& e) {
    throw InputFileError(path.string() + ": " + e.what());
  }
  if (h.type != type)
    throw InputFileError(path.string() + ": npy descr '" + h.descr + "' does not hold " + to_string(type) +
                         " elements");
  return {h.data_offset, h.count};
}

InputLayout raw_layout(const std::filesystem::path& path, ElementType type) {
  const std::uint64_t size = file_size_of(path);
  if (size % size_of(type) != 0)
    throw InputFileError(path.string() + ": raw size " + std::to_string(size) +
                         " bytes is not a whole number of " + to_string(type) + " elements");
  return {0, size / size_of(type)};
}

}  // namespace

std::string to_string(InputFormat format) { return format == InputFormat::npy ? "npy" : "raw"; }

std::optional<InputFormat> input_format_from_string(std::string_view name) {
  if (name == "npy") return InputFormat::npy;
  if (name == "raw") return InputFormat::raw;
  return std::nullopt;
}

NpyHeader parse_npy_header(std::string_view bytes, std::uint64_t file_size) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") fail("magic", "not an .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) fail("version", std::to_string(major) + " (1, 2 or 3)");
  const std::size_t width = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + width) fail("header length", "the file ends inside it");
  const std::uint64_t length = little_endian(bytes, 8, width);
  NpyHeader out;
  out.data_offset = 8 + width + length;
  if (length > 65536 || out.data_offset > bytes.size())
    fail("header length", std::to_string(length) + " bytes: truncated or too long");
  if (out.data_offset > file_size) fail("header length", "longer than the file");
  HeaderText text(bytes.substr(8 + width, length));
  parse_entries(text, out);
  out.type = type_of_descr(out.descr);
  if (out.descr.find('O') != std::string::npos)
    fail("descr", "object arrays ('" + out.descr + "') hold no data");
  if (!out.type)
    fail("descr", "'" + out.descr + "' is not a little-endian type tiletune fills (f2 f4 f8 i1 u1 i4 u4 i8)");
  if (out.fortran_order && out.shape.size() > 1) fail("fortran_order", "True: save the array in C order");
  out.count = element_count(out.shape);
  const std::uint64_t element = size_of(*out.type);
  if (out.count > (file_size - out.data_offset) / element ||
      file_size - out.data_offset != out.count * element)
    fail("shape", std::to_string(out.count) + " elements need " + std::to_string(out.count * element) +
                      " data bytes; the file holds " + std::to_string(file_size - out.data_offset));
  return out;
}

InputLayout inspect_input(const std::filesystem::path& path, InputFormat format, ElementType type,
                          std::optional<std::uint64_t> count) {
  const InputLayout layout = format == InputFormat::npy ? npy_layout(path, type) : raw_layout(path, type);
  if (count && layout.count != *count)
    throw InputFileError(path.string() + ": holds " + std::to_string(layout.count) +
                         " elements; the buffer has " + std::to_string(*count));
  return layout;
}

void stream_input(const std::filesystem::path& path, const InputLayout& layout, ElementType type,
                  std::size_t chunk_bytes, const std::function<void(const char*, std::size_t)>& sink) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(layout.offset));
  if (!in) throw InputFileError(path.string() + ": cannot open");
  std::vector<char> chunk(std::max<std::size_t>(chunk_bytes, 1));
  std::uint64_t left = layout.count * size_of(type);
  while (left > 0) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
    in.read(chunk.data(), static_cast<std::streamsize>(n));
    if (in.gcount() != static_cast<std::streamsize>(n))
      throw InputFileError(path.string() + ": shorter than when it was checked");
    sink(chunk.data(), n);
    left -= n;
  }
}

std::string file_content_hash(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputFileError(path.string() + ": cannot open");
  std::uint64_t h = 1469598103934665603ull;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(chunk[static_cast<std::size_t>(i)]);
      h *= 1099511628211ull;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string input_file_extension(ElementType type) { return descr_of(type).empty() ? ".bin" : ".npy"; }

void write_input_file(const std::filesystem::path& path, ElementType type, const void* data,
                      std::uint64_t count) {
  std::ofstream out(path, std::ios::binary);
  const std::string descr = descr_of(type);
  if (!descr.empty()) {
    std::string header =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(count) + ",), }";
    header.append(63 - (10 + header.size()) % 64, ' ') += '\n';  // the data starts 64-byte aligned
    const auto length = static_cast<std::uint16_t>(header.size());
    out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(length & 0xff)
        << static_cast<char>(length >> 8) << header;
  }
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(count * size_of(type)));
  if (!out) throw InputFileError(path.string() + ": cannot write");
}

}  // namespace tiletune
