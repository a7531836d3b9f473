// Value types shared by the tuner, the store and the client library. No CUDA, no SQLite here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tiletune {

// Every configuration ends in exactly one outcome; only `ok` may ever be returned as best.
enum class Outcome { ok, pruned, compile_failed, launch_failed, runtime_failed, timeout, wrong_result };

std::string_view to_string(Outcome outcome);

// The current time in UTC as stored and exported: "2024-05-01T12:34:56.789Z".
std::string utc_now_iso8601();
std::optional<Outcome> outcome_from_string(std::string_view text);

// Tunable parameter values by name. std::map keeps them sorted, so the text form is canonical.
using Params = std::map<std::string, std::int64_t>;

// "A=1,B=2" (sorted by name); the empty map gives "".
std::string params_to_text(const Params& params);
// Inverse of params_to_text; throws std::invalid_argument with a one-line message on malformed text.
Params params_from_text(std::string_view text);

// One problem instance of a family: its dimensions (GEMM M,N,K; conv1d n) and other problem arguments.
struct ProblemKey {
  std::vector<std::int64_t> dims;
  std::map<std::string, std::int64_t> args;

  std::string size_text() const;  // "1000x1000x777"
  std::string args_text() const;  // "mask_width=5,boundary=0" sorted by name, "" when none
  std::string text() const;       // as messages name a problem: problem_text(size_text(), args_text())
  bool operator==(const ProblemKey&) const = default;
};

// A C identifier: a letter or underscore, then letters, digits and underscores (ASCII).
bool is_identifier(std::string_view name);

// A problem as messages and tables name it: "1000x1000x777", or "1048576 mask_width=5" with arguments.
std::string problem_text(const std::string& size_text, const std::string& args_text);

// "1000x1000x777" -> {1000,1000,777}; throws std::invalid_argument on anything that is not positive integers.
std::vector<std::int64_t> parse_size_text(std::string_view text);
// "a=1,b=2" -> map; throws std::invalid_argument on malformed text.
std::map<std::string, std::int64_t> parse_args_text(std::string_view text);
// Inverse of problem_text: "1000x1000x777" or "1048576 mask_width=5" -> its dims and the args it names;
// throws std::invalid_argument on malformed text.
ProblemKey parse_problem_text(std::string_view text);

// A GPU, real or from a built-in profile.
struct DeviceRecord {
  std::string name;  // as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"
  std::string uuid;  // "GPU-..." for a real device, "profile:h100" for a profile
  std::string arch;  // "sm_90"
  int sm_count = 0;
  bool is_profile = false;
  std::string properties_json;  // every property we read, as a JSON object
};

// One error that the store or client reports as a single line.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tiletune
