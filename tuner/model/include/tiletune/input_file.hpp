// Input buffers read from files: NumPy .npy and raw little-endian binary. Every byte of such a file is
// treated as hostile: what it declares is checked against the buffer it fills before anything is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tiletune/element_type.hpp"

namespace tiletune {

enum class InputFormat { npy, raw };
std::string to_string(InputFormat format);
// "npy" or "raw"; nullopt for anything else.
std::optional<InputFormat> input_format_from_string(std::string_view name);

// One line naming the file and the field at fault.
class InputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What an .npy header declares.
struct NpyHeader {
  std::string descr;                // e.g. "<f4"
  std::optional<ElementType> type;  // the element type descr names, where tiletune has one
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
  std::uint64_t count = 0;        // elements: the product of shape (1 for shape ())
  std::uint64_t data_offset = 0;  // bytes ahead of the data
};

// Parses the header at the start of `bytes` of a file of `file_size` bytes and checks that the file holds
// exactly the data it declares. Throws InputFileError ("npy FIELD: ...") on anything else.
NpyHeader parse_npy_header(std::string_view bytes, std::uint64_t file_size);

// Where a file's elements lie.
struct InputLayout {
  std::uint64_t offset = 0;  // bytes
  std::uint64_t count = 0;   // elements
};

// Checks a file against the buffer it fills: its element type, and its element count where `count` is
// given. Throws InputFileError, one line that starts with the file's path.
InputLayout inspect_input(const std::filesystem::path& path, InputFormat format, ElementType type,
                          std::optional<std::uint64_t> count);

// Reads the elements in order, in pieces of at most `chunk_bytes`, handing each to `sink`: a large file is
// streamed, never held whole. Throws InputFileError when the file changed under it.
void stream_input(const std::filesystem::path& path, const InputLayout& layout, ElementType type,
                  std::size_t chunk_bytes, const std::function<void(const char*, std::size_t)>& sink);

// Saves `count` elements as an input file that inspect_input reads back: .npy (version 1.0, C order, one
// dimension) for the types NumPy has, raw little-endian for bfloat16; input_file_extension says which.
// Throws InputFileError when the file cannot be written.
std::string input_file_extension(ElementType type);  // ".npy" or ".bin"
void write_input_file(const std::filesystem::path& path, ElementType type, const void* data,
                      std::uint64_t count);

// The content hash (FNV-1a 64-bit, hex, as content_hash) of a file's bytes, read in pieces.
std::string file_content_hash(const std::filesystem::path& path);

}  // namespace tiletune
