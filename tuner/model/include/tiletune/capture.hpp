// The capture file: the (family, device, problem) an application asked the runtime for and was served without
// an exact match, one JSON object per line, so that `tiletune sweep --captured FILE` tunes exactly those.
//
//   {"tiletune_capture": 1}                                        first line: the format and its version
//   {"family": "gemm_tiled", "device": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "size": "1000x1000x777",
//    "args": "", "match": "nearest_size", "served": "TILE_WIDTH=16,...",
//    "inputs": {"A": "app.capture.jsonl.inputs/gemm_tiled-0123456789abcdef/A.npy", ...}}
//
// Each (family, device, size, args) is recorded once per file, whatever the number of calls. "inputs" is
// optional: the input buffers and constants of one call, saved as .npy (raw .bin for bfloat16), by name, as
// paths relative to the capture file's folder.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace tiletune {

inline constexpr int kCaptureVersion = 1;

// One line naming the file, the line and the field at fault.
class CaptureError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CapturedProblem {
  std::string family, device, arch, size, args;
  std::string match;   // how the runtime matched it: nearest_size, same_arch or not_found
  std::string served;  // the parameters it launched, as text
  int line = 0;        // read_capture: the line it came from
  // The saved input files by buffer or constant name, relative to the capture file's folder; empty: none.
  std::map<std::string, std::string> inputs;
};

// Reads a capture file. Throws CaptureError on an unreadable file, a missing or other first line, a line that
// is not a JSON object with string fields family, device, size (args, arch, match and served optional), a
// size that is not NxM... of positive integers, or an "inputs" that is not an object of relative paths.
std::vector<CapturedProblem> read_capture(const std::filesystem::path& path);

// Appends problems to a capture file (creating it with its first line), each once: those already in the file
// when it was opened, or appended since, are not written again. Thread-safe within the process.
class CaptureWriter {
 public:
  explicit CaptureWriter(std::filesystem::path path);
  const std::filesystem::path& path() const { return path_; }
  // True when this call wrote the problem, false when it was already there. Throws CaptureError when the file
  // cannot be written or what it holds is not a capture file.
  bool record(const CapturedProblem& problem);
  // Whether the problem is in the file (or was recorded since it was opened).
  bool contains(const CapturedProblem& problem);

 private:
  std::filesystem::path path_;
  void load();  // with mutex_ held
  std::mutex mutex_;
  bool loaded_ = false;
  std::set<std::tuple<std::string, std::string, std::string, std::string>> seen_;
};

// Where a problem's saved inputs go, relative to the capture file's folder: FILE.inputs/FAMILY-HASH, the hash
// of device, size and args (two problems never share a folder).
std::filesystem::path capture_inputs_dir(const std::filesystem::path& capture,
                                         const CapturedProblem& problem);

// The capture file the runtime writes: `option` where given, else $TILETUNE_CAPTURE ("1": beside the
// database, as DATABASE.capture.jsonl; anything else: that path); empty when capture is off.
std::filesystem::path capture_path(const std::filesystem::path& option,
                                   const std::filesystem::path& database);
// Whether the runtime saves the inputs of captured calls: `option`, or $TILETUNE_CAPTURE_INPUTS=1.
bool capture_inputs_enabled(bool option);

}  // namespace tiletune
