// Shared pieces of the targets that import into a store (fuzz_import, fuzz_csv): a fresh database per input,
// and reading back what imported as the commands and applications read it.
#pragma once

#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "../file_bytes.hpp"
#include "fuzz_support.hpp"
#include "tiletune/client.hpp"
#include "tiletune/store.hpp"

namespace tiletune::fuzz {

// The bytes of an empty tiletune database, made once at start-up.
inline const std::string& empty_database() {
  static const std::string bytes = [] {
    const std::filesystem::path path = scratch_dir() / "empty.db";
    { Store::open(path); }
    return test::read_bytes(path);
  }();
  return bytes;
}

// Makes `path` an empty database again (a copy of empty_database(), without the files of the last input).
inline void fresh_database(const std::filesystem::path& path) {
  const std::string& empty = empty_database();
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm", "-journal"}) std::filesystem::remove(path.string() + suffix, ec);
  write_file(path, empty);
}

// Lists, exports (JSON, CSV, header) and looks up through the client every sweep of the store at `path`.
inline void read_back(const std::filesystem::path& path, Store& store) {
  std::vector<SweepInfo> sweeps;
  try {
    sweeps = store.sweeps();
    for (const auto& s : sweeps) (void)store.results(s.id);
    (void)store.export_json();
    std::ostringstream csv, header;
    store.export_csv(csv);
    store.export_header(header);
  } catch (const StoreError&) {
  } catch (const std::exception& e) {
    unexpected_exception("reading an imported database", e);
  }
  std::string error;
  const auto client = Client::open(path, &error);
  if (!client) return;
  for (std::size_t i = 0; i < sweeps.size() && i < 8; ++i) {
    const auto& s = sweeps[i];
    (void)client->best({s.family, s.device.name, s.device.arch, s.problem});
    ProblemKey other = s.problem;
    for (auto& d : other.dims) d = d / 2 + 1;
    (void)client->best({s.family, s.device.name, s.device.arch, other}, {{"X", 1}});
    (void)client->best({s.family, "another device", s.device.arch, other});
  }
}

}  // namespace tiletune::fuzz
