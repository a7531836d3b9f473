// libFuzzer target: the .npy reader. Feeds the bytes to parse_npy_header (as a whole file, and as a file that
// claims to be longer or shorter), then as a file on disk to inspect_input and stream_input for every
// element type. The only acceptable failure is an InputFileError with a one-line message; what loads must
// stream exactly the bytes it declared.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz_support.hpp"
#include "tiletune/input_file.hpp"

namespace {

void check_message(const tiletune::InputFileError& e) {
  const std::string message = e.what();
  if (message.find('\n') != std::string::npos || message.size() > 1000) {
    std::fprintf(stderr, "InputFileError message not one short line: %s\n", message.c_str());
    std::abort();
  }
}

void from_disk(const std::filesystem::path& path) {
  using tiletune::ElementType;
  for (ElementType type :
       {ElementType::f32, ElementType::f64, ElementType::f16, ElementType::i8, ElementType::u8,
        ElementType::i32, ElementType::u32, ElementType::i64, ElementType::bf16}) {
    try {
      const auto layout = tiletune::inspect_input(path, tiletune::InputFormat::npy, type, std::nullopt);
      std::uint64_t streamed = 0;
      tiletune::stream_input(path, layout, type, 7, [&](const char*, std::size_t n) { streamed += n; });
      if (streamed != layout.count * tiletune::size_of(type)) {
        std::fprintf(stderr, "streamed %llu bytes of %llu declared\n",
                     static_cast<unsigned long long>(streamed),
                     static_cast<unsigned long long>(layout.count * tiletune::size_of(type)));
        std::abort();
      }
    } catch (const tiletune::InputFileError& e) {
      check_message(e);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = tiletune::fuzz::text_of(data, size);
  for (const std::uint64_t claimed : {std::uint64_t{size}, std::uint64_t{size} + 4096, std::uint64_t{0}}) {
    try {
      (void)tiletune::parse_npy_header(bytes, claimed);
    } catch (const tiletune::InputFileError& e) {
      check_message(e);
    }
  }
  const auto path = tiletune::fuzz::scratch_dir() / "input.npy";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  from_disk(path);
  return 0;
}
