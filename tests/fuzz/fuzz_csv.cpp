// libFuzzer target: importing a CSV export (tiletune import FILE.csv). Every input is imported with
// Store::import_csv into a fresh temporary database; what imports is read back as fuzz_import does (listing,
// JSON, CSV and header export, client lookups). It must then survive the round trips a user makes: its CSV
// export imports into another fresh database and exports as the same CSV, and so does its JSON export through
// Store::import_json. A round trip that fails aborts: it would lose stored results on the way.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "fuzz_store.hpp"

namespace fs = std::filesystem;
using tiletune::fuzz::unexpected_exception;

namespace {

[[noreturn]] void round_trip_failed(const char* how, const std::string& detail) {
  std::fprintf(stderr, "fuzz_csv: %s: %s\n", how, detail.c_str());
  std::abort();
}

std::string csv_of(const tiletune::Store& store) {
  std::ostringstream out;
  store.export_csv(out);
  return out.str();
}

// What imported comes back the same through a CSV and a JSON export, each into a fresh database.
void check_round_trips(const tiletune::Store& store) {
  static const fs::path csv_path = tiletune::fuzz::scratch_dir() / "csv-round-trip.db";
  static const fs::path json_path = tiletune::fuzz::scratch_dir() / "json-round-trip.db";
  std::string csv, json;
  try {
    csv = csv_of(store);
    json = store.export_json();
  } catch (const std::exception& e) {
    round_trip_failed("exporting what imported failed", e.what());
  }
  tiletune::fuzz::fresh_database(csv_path);
  tiletune::Store from_csv = tiletune::Store::open(csv_path);
  try {
    (void)from_csv.import_csv(csv);
  } catch (const std::exception& e) {
    round_trip_failed("the CSV export of what imported does not import", e.what());
  }
  if (csv_of(from_csv) != csv) round_trip_failed("the CSV export changed through a CSV import", csv);
  tiletune::fuzz::fresh_database(json_path);
  tiletune::Store from_json = tiletune::Store::open(json_path);
  try {
    (void)from_json.import_json(json);
  } catch (const std::exception& e) {
    round_trip_failed("the JSON export of what imported does not import", e.what());
  }
  if (csv_of(from_json) != csv) round_trip_failed("the CSV export changed through a JSON import", csv);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path path = tiletune::fuzz::scratch_dir() / "csv.db";
  tiletune::fuzz::fresh_database(path);

  const std::string text = tiletune::fuzz::text_of(data, size);
  try {
    tiletune::Store store = tiletune::Store::open(path);
    try {
      (void)store.import_csv(text);
    } catch (const tiletune::StoreError&) {
      return 0;
    }
    tiletune::fuzz::read_back(path, store);
    check_round_trips(store);
  } catch (const tiletune::StoreError&) {
  } catch (const std::exception& e) {
    unexpected_exception("Store::import_csv", e);
  }
  return 0;
}
