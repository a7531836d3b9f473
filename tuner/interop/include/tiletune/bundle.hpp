// Writing a bundle (see tiletune/bundle_manifest.hpp for what it holds and how it is read) from a database.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tiletune/bundle_manifest.hpp"
#include "tiletune/compiler.hpp"
#include "tiletune/family.hpp"
#include "tiletune/store.hpp"

namespace tiletune {

// The fastest ok result for (family, device name, problem) among the sweeps run on the template whose hash
// is `template_hash` (the family as it is now), if any.
std::optional<StoredResult> best_with_template(const Store& store, const std::string& family,
                                               const std::string& device_name, const ProblemKey& problem,
                                               const std::string& template_hash);

struct BundleSummary {
  int entries = 0, cubins = 0, compiled = 0;  // compiled: not found in the compile cache
  std::vector<std::string> skipped;           // one line each: what was left out and why
};

// Writes the best configuration of every (family, device, problem) in `store` that the filters select into
// `directory` (created; an existing bundle there is replaced, anything else but an empty folder refused),
// measured on the family as it is now. A problem whose family is unknown, or was tuned only on another
// template, or whose configuration no longer compiles, is left out and reported. Compiles through `cache`.
BundleSummary write_bundle(const Store& store, const std::vector<KernelFamily>& families,
                           const std::filesystem::path& directory, const std::string& family_filter,
                           const std::string& device_filter, const CompileCache& cache);

}  // namespace tiletune
