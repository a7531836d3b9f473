// The client library: what an application links (tiletune::client) to ask for its best configuration.
// SQLite only, no CUDA. Nothing here throws on a miss.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/records.hpp"

namespace tiletune {

enum class Match {
  exact,         // same family, device name and problem
  nearest_size,  // same family and device name, the nearest tuned problem
  same_arch,     // same family and architecture on another device, the nearest tuned problem
  not_found,     // nothing tuned: the family's default parameters (or the caller's fallback)
};

std::string_view to_string(Match match);

struct Query {
  std::string family;
  std::string device_name;  // e.g. "NVIDIA H100 80GB HBM3"
  std::string arch;         // e.g. "sm_90"; used for the same_arch fallback
  ProblemKey problem;
};

struct Lookup {
  Match match = Match::not_found;
  Params params;
  std::string device_name;  // the device the configuration was tuned on (empty when not_found)
  ProblemKey problem;       // the problem it was tuned for (empty when not_found)
  std::optional<double> median_ms;
  std::optional<double> metric;
  std::string metric_unit;
  std::string message;        // one line that says how it matched, for logs
  std::string template_hash;  // the family's template its sweep measured (empty when not_found)
  std::int64_t sweep_id = 0;  // that sweep (0 when not_found)
};

// How far a tuned problem is from a query: (differs in shape, distance). The distance sums |log2(tuned /
// query)| over the sizes and arguments; a tuned problem with other argument names or dimension count differs
// in shape and ranks after every other.
std::pair<bool, double> problem_distance(const ProblemKey& tuned, const ProblemKey& query);

class Client {
 public:
  // Read-only (SQLITE_OPEN_READONLY); where the directory cannot take the WAL index file (read-only media),
  // immutable (see README, "Read-only databases"; TILETUNE_DB_IMMUTABLE=1 forces it). Returns nullopt and
  // sets *error (one line) when the path names no database file or the file is not a tiletune database.
  static std::optional<Client> open(const std::filesystem::path& path, std::string* error = nullptr) noexcept;

  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  ~Client();

  // Best ok configuration for the query with the fallbacks above. When nothing matches, params are the
  // family's stored defaults if the database knows the family, otherwise `fallback`.
  Lookup best(const Query& query, const Params& fallback = {}) const noexcept;

  // The fastest ok configuration for exactly (family, device name, problem) among the sweeps measured on the
  // family's template whose hash is `template_hash` (the family as it is now); nullopt when there is none or
  // the lookup fails (`error`, if given, then says why).
  std::optional<Lookup> best_on_template(const std::string& family, const std::string& device_name,
                                         const ProblemKey& problem, const std::string& template_hash,
                                         std::string* error = nullptr) const noexcept;

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tiletune
