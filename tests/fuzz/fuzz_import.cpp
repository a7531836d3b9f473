// libFuzzer target: importing exported results (tiletune import FILE). Every input is imported into a fresh
// temporary database (a copy of an empty one made at start-up). What imports is then read back as the
// commands and applications read it: listed, exported as JSON, CSV and a C++ header, and looked up through
// the client library for every sweep it holds.
//
// The store has one importer, Store::import_json; there is no CSV importer yet. When one exists, give it the
// same input here.
#include <filesystem>
#include <sstream>
#include <string>

#include "fuzz_support.hpp"
#include "tiletune/client.hpp"
#include "tiletune/store.hpp"

namespace fs = std::filesystem;
using tiletune::fuzz::unexpected_exception;

namespace {

const std::string& empty_database() {
  static const std::string bytes = [] {
    const fs::path path = tiletune::fuzz::scratch_dir() / "empty.db";
    { tiletune::Store::open(path); }
    return tiletune::fuzz::read_file(path);
  }();
  return bytes;
}

void read_back(const fs::path& path, tiletune::Store& store) {
  std::vector<tiletune::SweepInfo> sweeps;
  try {
    sweeps = store.sweeps();
    for (const auto& s : sweeps) (void)store.results(s.id);
    (void)store.export_json();
    std::ostringstream csv, header;
    store.export_csv(csv);
    store.export_header(header);
  } catch (const tiletune::StoreError&) {
  } catch (const std::exception& e) {
    unexpected_exception("reading an imported database", e);
  }
  std::string error;
  const auto client = tiletune::Client::open(path, &error);
  if (!client) return;
  for (std::size_t i = 0; i < sweeps.size() && i < 8; ++i) {
    const auto& s = sweeps[i];
    (void)client->best({s.family, s.device.name, s.device.arch, s.problem});
    tiletune::ProblemKey other = s.problem;
    for (auto& d : other.dims) d = d / 2 + 1;
    (void)client->best({s.family, s.device.name, s.device.arch, other}, {{"X", 1}});
    (void)client->best({s.family, "another device", s.device.arch, other});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path path = tiletune::fuzz::scratch_dir() / "import.db";
  const std::string& empty = empty_database();
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix, ec);
  tiletune::fuzz::write_file(path, empty);

  const std::string text = tiletune::fuzz::text_of(data, size);
  try {
    tiletune::Store store = tiletune::Store::open(path);
    try {
      (void)store.import_json(text);
    } catch (const tiletune::StoreError&) {
      return 0;
    }
    read_back(path, store);
  } catch (const tiletune::StoreError&) {
  } catch (const std::exception& e) {
    unexpected_exception("Store::import_json", e);
  }
  return 0;
}
