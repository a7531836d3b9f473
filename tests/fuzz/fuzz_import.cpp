// libFuzzer target: importing exported results (tiletune import FILE). Every input is imported into a fresh
// temporary database (a copy of an empty one made at start-up). What imports is then read back as the
// commands and applications read it: listed, exported as JSON, CSV and a C++ header, and looked up through
// the client library for every sweep it holds.
//
// This target feeds Store::import_json; the CSV importer, Store::import_csv, has its own (fuzz_csv.cpp).
#include <filesystem>
#include <string>

#include "fuzz_store.hpp"

namespace fs = std::filesystem;
using tiletune::fuzz::unexpected_exception;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path path = tiletune::fuzz::scratch_dir() / "import.db";
  tiletune::fuzz::fresh_database(path);

  const std::string text = tiletune::fuzz::text_of(data, size);
  try {
    tiletune::Store store = tiletune::Store::open(path);
    try {
      (void)store.import_json(text);
    } catch (const tiletune::StoreError&) {
      return 0;
    }
    tiletune::fuzz::read_back(path, store);
  } catch (const tiletune::StoreError&) {
  } catch (const std::exception& e) {
    unexpected_exception("Store::import_json", e);
  }
  return 0;
}
