// Kernel Tuner's JSON cache files, in and out. Kernel Tuner (github.com/KernelTuner/kernel_tuner) appends one
// entry per configuration it visits to a cache file; tiletune reads such a file as one sweep of a family it
// knows, and writes one sweep as a cache file that Kernel Tuner reads back (read_cache, simulation mode).
//
// Import is a translation: the cache becomes a tiletune export document (Store::import_json's format) for one
// family, device and problem, with a uid hashed from the cache's content and that target, so that importing
// the same file twice stores it once. Every complaint is a StoreError of one line naming the field or entry:
// `import: cache["16,2"].time must be a number or one of Kernel Tuner's failure names, got {}`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tiletune/records.hpp"
#include "tiletune/store.hpp"

namespace tiletune {

// One entry of a cache, checked for its form but not yet against a family.
struct KernelTunerEntry {
  std::string key;                                           // "16,2": the values in tune_params_keys order
  std::vector<std::pair<std::string, std::int64_t>> params;  // in tune_params_keys order
  Outcome outcome = Outcome::ok;
  std::string reason;                // for a failure: "Kernel Tuner: InvalidConfig", ...
  std::optional<double> time_ms;     // "time" of an ok entry
  std::vector<double> times_ms;      // "times"
  std::optional<double> compile_ms;  // "compile_time"
  std::optional<double> measure_ms;  // "verification_time" + "benchmark_time"
  std::string measured_at;           // "timestamp" as ISO-8601 UTC ("" when none)
};

// A cache file, read and checked for its form. An unterminated file (Kernel Tuner appends as it goes, so it
// may end with "," or `"cache": {`) is closed as Kernel Tuner closes it.
struct KernelTunerCache {
  std::string device_name, kernel_name, objective;
  std::optional<std::vector<std::int64_t>> problem_size;  // nullopt: absent or "callable"
  std::vector<std::string> param_keys;                    // tune_params_keys
  std::optional<std::string> problem_args;                // "mask_width=5", from a tiletune export's header
  std::optional<std::string> device_uuid;                 // from a tiletune export's header
  std::vector<KernelTunerEntry> entries;                  // by key
  std::string content_hash;                               // over the content, spacing and key order aside
};

// Throws StoreError ("import: ...") on anything that is not a Kernel Tuner cache.
KernelTunerCache read_kernel_tuner_cache(const std::string& text);

// What an imported cache becomes: one sweep of this family, on this device, for this problem.
struct KernelTunerTarget {
  std::string family, template_hash, description_json, space_hash;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameters;  // the family's, with values
  std::string metric_unit;                                                    // "GFLOP/s" or "GB/s"
  std::optional<double> work;  // FLOPs or bytes of one run for this problem; nullopt: no metric
  DeviceRecord device;
  ProblemKey problem;
  // Why the family's plan for this device and problem cannot run a configuration ("" when it can); an entry
  // the cache calls ok but this refuses is imported as pruned with this reason. Empty: not checked.
  std::function<std::string(const std::vector<std::pair<std::string, std::int64_t>>&)> plan_refuses;
};

// The export document (Store::import_json's format) holding the cache as one sweep of the target. Parameter
// names must be the family's (one line naming the first that is not, or the first missing), and values must
// be in the family's value lists; what target.plan_refuses refuses is not ok. Throws StoreError ("import:
// ...").
std::string kernel_tuner_import_document(const KernelTunerCache& cache, const KernelTunerTarget& target);

// One stored sweep as a Kernel Tuner cache file (closed): ok results with time = median_ms, times = times_ms,
// compile_time = compile_ms; failures with Kernel Tuner 1.5's "__error__". What was pruned before compiling
// has no entry (a sweep stored before schema version 4 has its pruned results as InvalidConfig): the header's
// "tiletune" object counts it by reason under "pruned", and a Kernel Tuner run over the cache in simulation
// mode keeps to its entries with a restriction (as tools/bench/kt_compare.py does). Throws StoreError
// ("export: ...") for a missing sweep, a plan, or a sweep without results.
std::string export_kernel_tuner(const Store& store, std::int64_t sweep_id);

}  // namespace tiletune
