// A self-contained HTML report of stored sweeps: inline SVG charts and tables, no script or file needed to
// draw them, nothing fetched from a network. `tiletune report` writes it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tiletune {

struct ReportOptions {
  std::string family;                   // only this family; empty: any
  std::string device_name;              // only this device name; empty: any
  std::vector<std::int64_t> sweep_ids;  // only these sweeps (they must match the filters); empty: all
  std::string generated_at;             // shown in the header; empty: now (tests fix it)
  std::string database_label;           // how the header names the database; empty: the path
};

// The report of the selected sweeps of the database at `database`, opened read-only. For each device: its
// properties; for each family on it: the best metric against problem size; for each sweep: its provenance,
// a heatmap of the metric over two parameters (the others at the winner's values; the two that explain most
// of the variance of log time by default, the other pairs a click away where script runs), the distribution
// of the ok configurations' times with the winner and the stored baselines marked, and its outcomes with
// their most frequent reasons. Every text from the database is escaped and its invalid UTF-8 replaced.
// Throws StoreError with one line when the database cannot be read or nothing matches (an unknown family,
// device or sweep id, an empty database).
std::string render_report(const std::filesystem::path& database, const ReportOptions& options = {});

}  // namespace tiletune
