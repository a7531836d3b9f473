// Shared helpers for the db tests: a scratch directory, file bytes, and sample sweeps and results.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../file_bytes.hpp"
#include "tiletune/store.hpp"

namespace tiletune::test {

// A fresh directory under the system temp directory, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() /
            ("tiletune-db-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
             std::to_string(entropy()));
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add,
                                 ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

inline std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 generator(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(generator() & 0xff);
  return bytes;
}

// The description a family carries: two tunables with defaults TILE=16 and BLOCK_Y=4 (its first value).
inline const char* gemm_description =
    R"({"name": "gemm_tiled", "parameters": {"TILE": {"values": [8, 16, 32], "default": 16},
        "BLOCK_Y": {"values": [4, 8]}}})";

inline DeviceRecord device(const std::string& name, const std::string& uuid, const std::string& arch) {
  DeviceRecord d;
  d.name = name;
  d.uuid = uuid;
  d.arch = arch;
  d.sm_count = 132;
  d.properties_json = R"({"clock_khz": 1980000, "l2_bytes": 52428800})";
  return d;
}

inline const DeviceRecord h100 = device("NVIDIA H100 80GB HBM3", "GPU-h100-0001", "sm_90");

inline SweepSpec spec(const std::string& family, const DeviceRecord& dev, std::vector<std::int64_t> dims,
                      std::map<std::string, std::int64_t> args = {}) {
  SweepSpec s;
  s.family = family;
  s.template_hash = "hash-" + family;
  s.family_json = family == "gemm_tiled" ? gemm_description : "{}";
  s.space_hash = "space-1";
  s.device = dev;
  s.problem.dims = std::move(dims);
  s.problem.args = std::move(args);
  s.tiletune_version = "0.1.0";
  s.git_sha = "abc123";
  return s;
}

inline ResultRecord ok(Params params, double median_ms) {
  ResultRecord r;
  r.params = std::move(params);
  r.outcome = Outcome::ok;
  r.median_ms = median_ms;
  r.min_ms = median_ms * 0.97;
  r.spread = 0.012;
  r.repetitions = 25;
  r.metric = 2000.0 / median_ms;
  r.metric_unit = "GFLOP/s";
  r.error = 1.5e-7;
  r.registers = 40;
  r.static_smem = 8192;
  r.dynamic_smem = 0;
  r.local_bytes = 0;
  r.spill_bytes = 0;
  r.threads_per_block = 256;
  r.active_blocks = 8;
  r.active_warps = 64;
  r.occupancy_limiter = "threads";
  r.occupancy = 1.0;
  r.sm_clock_mhz = 1980.0;
  return r;
}

inline ResultRecord failed(Params params, Outcome outcome, const std::string& reason) {
  ResultRecord r;
  r.params = std::move(params);
  r.outcome = outcome;
  r.reason = reason;
  return r;
}

inline int count_rows(const std::string& csv_or_text, char separator = '\n') {
  int n = 0;
  for (char c : csv_or_text) n += c == separator;
  return n;
}

inline bool one_line(const std::string& text) {
  return text.find('\n') == std::string::npos && !text.empty();
}

// RFC 4180 reader for the tests: quoted fields may hold commas, doubled quotes and line breaks; records end
// in CRLF.
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(std::exchange(field, ""));
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(std::exchange(field, ""));
      rows.emplace_back();
      ++i;
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// The inverse: every field that needs it quoted, records joined by `eol`.
inline std::string write_csv(const std::vector<std::vector<std::string>>& rows,
                             const std::string& eol = "\r\n") {
  std::string text;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i > 0) text += ',';
      if (row[i].find_first_of(",\"\r\n") == std::string::npos) {
        text += row[i];
        continue;
      }
      text += '"';
      for (const char c : row[i]) text += c == '"' ? std::string("\"\"") : std::string(1, c);
      text += '"';
    }
    text += eol;
  }
  return text;
}

// An export's JSON without the one field that differs between two exports of the same store.
// The export without its time, its sweeps in uid order: sweeps started in the same millisecond are listed in
// the order a database stored them, which two databases that imported them differently need not share.
inline nlohmann::json without_export_time(const std::string& text) {
  nlohmann::json doc = nlohmann::json::parse(text);
  doc.erase("exported_at");
  if (doc.contains("sweeps") && doc["sweeps"].is_array())
    std::stable_sort(doc["sweeps"].begin(), doc["sweeps"].end(),
                     [](const auto& a, const auto& b) { return a.value("uid", "") < b.value("uid", ""); });
  return doc;
}

// How many sweeps and results the database at `path` holds.
inline std::map<std::string, int> row_counts(const std::filesystem::path& path) {
  std::map<std::string, int> counts;
  Store store = Store::open(path, Store::Mode::read_only);
  for (const auto& s : store.sweeps()) {
    ++counts["sweeps"];
    counts["results"] += static_cast<int>(store.results(s.id).size());
  }
  return counts;
}

// Runs `statement` on the database at `path` (a test's own edit of the file), failing the test if SQLite
// refuses.
inline void sql_exec(const std::filesystem::path& path, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// Makes the database at `path` refuse, as a full disk would, every result row whose reason is `reason`.
inline void refuse_results_with_reason(const std::filesystem::path& path, const std::string& reason) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("cannot open " + path.string());
  const std::string sql = "CREATE TRIGGER refuse BEFORE INSERT ON results WHEN NEW.reason = '" + reason +
                          "' BEGIN SELECT RAISE(ABORT, 'simulated write failure'); END";
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error("cannot add the refusing trigger to " + path.string());
}

}  // namespace tiletune::test
