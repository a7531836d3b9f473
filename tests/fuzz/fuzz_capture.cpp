// libFuzzer target: the capture file (`tiletune sweep --captured`). Reads the bytes as a capture file; what
// loads is appended to by a CaptureWriter and must read back with the same problems plus the new one, its
// saved inputs included. The
// only acceptable failure is a CaptureError with a one-line message.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "fuzz_support.hpp"
#include "tiletune/capture.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = tiletune::fuzz::scratch_dir() / "capture.jsonl";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << tiletune::fuzz::text_of(data, size);
  try {
    const auto read = tiletune::read_capture(path);
    tiletune::CaptureWriter w(path);
    const std::map<std::string, std::string> inputs = {{"x", "capture.jsonl.inputs/f-0/x.npy"}};
    const bool wrote = w.record({"fuzz_family", "GPU", "sm_90", "7x7", "", "not_found", "", 0, inputs});
    const auto again = tiletune::read_capture(path);
    if (again.size() != read.size() + (wrote ? 1 : 0) || (wrote && again.back().inputs != inputs)) {
      std::fprintf(stderr, "a recorded problem did not read back\n");
      std::abort();
    }
  } catch (const tiletune::CaptureError& e) {
    const std::string message = e.what();
    if (message.find('\n') != std::string::npos || message.size() > 2000) {
      std::fprintf(stderr, "CaptureError message not one short line: %s\n", message.c_str());
      std::abort();
    }
  }
  return 0;
}
