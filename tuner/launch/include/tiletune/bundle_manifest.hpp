// A bundle as an application reads it: the best configurations of a database compiled once, for
// applications that launch them without compiling. A folder holding manifest.json (one entry per family,
// device and problem: the parameters, the sweep's median, the template hash, the CUBIN's file and kernel
// symbol, the resources ptxas reported), cubins/ (one file per distinct compiled kernel) and families/ (each
// family's description and template as tuned, from which the runtime computes the launch geometry of any
// problem). `tiletune export --format bundle` writes one (tiletune/bundle.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tiletune/client.hpp"
#include "tiletune/compiler.hpp"

namespace tiletune {

// The manifest's "format".
inline constexpr const char* kBundleFormat = "tiletune-bundle-1";

// A bundle that cannot be written or read: one line naming the file.
class BundleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BundleEntry {
  std::string family, device_name, arch;  // arch: "sm_90"
  ProblemKey problem;
  Params params;
  std::optional<double> median_ms, metric;
  std::string metric_unit;
  std::string template_hash;
  std::int64_t sweep_id = 0;
  std::string cubin_file;  // inside cubins/
  std::string symbol;      // the kernel's lowered name in the CUBIN
  ResourceUsage usage;
};

struct Bundle {
  std::filesystem::path directory;
  std::string tiletune_version, git_sha, created_at;
  std::vector<BundleEntry> entries;

  std::filesystem::path families_dir() const { return directory / "families"; }
  // The CUBIN's bytes; throws BundleError when the file is missing or unreadable.
  std::string cubin(const BundleEntry& entry) const;
  // The entry for (family, device, problem) with the client's fallbacks: the exact device name and problem,
  // else that device's nearest problem, else the nearest problem tuned on the same architecture; nullptr
  // when the bundle holds nothing of the family for this architecture. `match` says which.
  const BundleEntry* find(const std::string& family, const std::string& device_name, const std::string& arch,
                          const ProblemKey& problem, Match* match) const;
};

// Reads manifest.json; throws BundleError (one line) when the folder is no bundle or the manifest is
// malformed.
Bundle read_bundle(const std::filesystem::path& directory);

// Whether `directory` holds a bundle's manifest.
bool is_bundle(const std::filesystem::path& directory);

}  // namespace tiletune
