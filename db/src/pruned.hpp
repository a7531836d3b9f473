// What sweeps pruned before compiling, as counts per reason: the table `pruned` (schema version 4).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sqlite.hpp"
#include "tiletune/results.hpp"

namespace tiletune::rows {

// Adds the counts within the caller's transaction; each reason's count becomes the larger of the stored and
// the given one. Throws StoreError, naming `what`, for a count below 1 or an empty reason.
void add_pruned(const sql::Db& db, std::int64_t sweep_id, const PrunedCounts& counts,
                const std::string& what);
// The sweep's counts; empty where the file is older than version 4 (a read-only open does not migrate).
PrunedCounts select_pruned(const sql::Db& db, std::int64_t sweep_id);

// As the exports write them: a JSON object of reason to count, {"threads: 2048 per block > 1024": 1520}.
nlohmann::json pruned_json(const PrunedCounts& counts);
// Reads what pruned_json writes, as an import checks it: an object whose keys are not empty and whose values
// are integers of at least 1. Throws std::invalid_argument saying what is wrong ("must be ...").
PrunedCounts pruned_from_json(const nlohmann::json& value);

}  // namespace tiletune::rows
