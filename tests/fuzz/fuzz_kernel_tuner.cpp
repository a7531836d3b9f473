// libFuzzer target: Kernel Tuner cache files (tiletune import --format kernel_tuner FILE --family NAME). The
// input goes through read_kernel_tuner_cache; a cache that reads is mapped with kernel_tuner_import_document
// onto a small made-up family (kt_small: block_size_x 16..256, tile 1, 2, 4, 8, use_shared 0, 1; dims m, n;
// its problem from the cache's problem_size and tiletune.args when they fit, as the command does) and the
// document imported with Store::import_json into a fresh temporary database. What imports must export back:
// Store::export_json, and export_kernel_tuner of each imported sweep, which must read back as a cache with
// one entry per stored result. A failure to export or to read back aborts.
//
// Every exception must have a one-line message (one with a line break aborts); StoreError is the documented
// type, and any other is a finding with TILETUNE_FUZZ_STRICT=1.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_store.hpp"
#include "tiletune/kernel_tuner.hpp"

namespace fs = std::filesystem;
using tiletune::fuzz::unexpected_exception;

namespace {

// A message of more than one line (or none) is a finding, whatever the exception's type.
void check_one_line(const char* call, const std::exception& e) {
  const std::string what = e.what();
  if (!what.empty() && what.find('\n') == std::string::npos && what.find('\r') == std::string::npos) return;
  std::fprintf(stderr, "%s threw a message that is not one line: [%s]\n", call, what.c_str());
  std::abort();
}

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

tiletune::KernelTunerTarget target_for(const tiletune::KernelTunerCache& cache) {
  tiletune::KernelTunerTarget t;
  t.family = "kt_small";
  t.template_hash = "0123456789abcdef0123456789abcdef";
  t.description_json =
      R"({"name": "kt_small", "kernel": "kt_small", "problem": {"dims": ["m", "n"]},
          "parameters": {"block_size_x": {"values": [16, 32, 64, 128, 256]}, "tile": {"values": [1, 2, 4, 8]},
                         "use_shared": {"values": [0, 1]}}})";
  t.space_hash = "fedcba9876543210fedcba9876543210";
  t.parameters = {{"block_size_x", {16, 32, 64, 128, 256}}, {"tile", {1, 2, 4, 8}}, {"use_shared", {0, 1}}};
  t.metric_unit = "GFLOP/s";
  t.device.name = cache.device_name;
  t.device.uuid = "profile:h100";
  t.device.arch = "sm_90";
  t.device.sm_count = 132;
  t.device.is_profile = true;
  t.device.properties_json = R"({"sm_count": 132})";
  t.problem.dims = {1024, 1024};
  if (cache.problem_size && cache.problem_size->size() == 2) t.problem.dims = *cache.problem_size;
  if (cache.problem_args) {
    try {
      t.problem.args = tiletune::parse_args_text(*cache.problem_args);
    } catch (const std::invalid_argument& e) {
      // read_kernel_tuner_cache checked it already.
      finding("read_kernel_tuner_cache accepted tiletune.args that parse_args_text refuses", e.what());
    }
  }
  const double work = 2.0 * static_cast<double>(t.problem.dims[0]) * static_cast<double>(t.problem.dims[1]);
  if (std::isfinite(work)) t.work = work;
  return t;
}

// Exports what was imported: the JSON export, and each sweep as a Kernel Tuner cache that reads back.
void export_back(tiletune::Store& store) {
  try {
    (void)store.export_json();
  } catch (const std::exception& e) {
    finding("Store::export_json of an imported Kernel Tuner cache threw", e.what());
  }
  std::vector<tiletune::SweepInfo> sweeps;
  try {
    sweeps = store.sweeps();
  } catch (const std::exception& e) {
    finding("Store::sweeps of an imported Kernel Tuner cache threw", e.what());
  }
  for (const auto& s : sweeps) {
    std::string text;
    std::size_t stored = 0;
    try {
      stored = store.results(s.id).size();
      text = tiletune::export_kernel_tuner(store, s.id);
    } catch (const std::exception& e) {
      finding("export_kernel_tuner of an imported Kernel Tuner cache threw", e.what());
    }
    try {
      const tiletune::KernelTunerCache back = tiletune::read_kernel_tuner_cache(text);
      if (back.entries.size() != stored)
        finding("export_kernel_tuner wrote a different number of entries",
                std::to_string(back.entries.size()) + " read back, " + std::to_string(stored) + " stored");
    } catch (const std::exception& e) {
      finding("read_kernel_tuner_cache refused what export_kernel_tuner wrote", e.what());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path path = tiletune::fuzz::scratch_dir() / "kernel_tuner.db";
  const std::string text = tiletune::fuzz::text_of(data, size);

  tiletune::KernelTunerCache cache;
  std::string document;
  try {
    cache = tiletune::read_kernel_tuner_cache(text);
  } catch (const tiletune::StoreError& e) {
    check_one_line("read_kernel_tuner_cache", e);
    return 0;
  } catch (const std::exception& e) {
    check_one_line("read_kernel_tuner_cache", e);
    unexpected_exception("read_kernel_tuner_cache", e);
    return 0;
  }
  try {
    document = tiletune::kernel_tuner_import_document(cache, target_for(cache));
  } catch (const tiletune::StoreError& e) {
    check_one_line("kernel_tuner_import_document", e);
    return 0;
  } catch (const std::exception& e) {
    check_one_line("kernel_tuner_import_document", e);
    unexpected_exception("kernel_tuner_import_document", e);
    return 0;
  }

  tiletune::fuzz::fresh_database(path);
  try {
    tiletune::Store store = tiletune::Store::open(path);
    try {
      (void)store.import_json(document);
    } catch (const tiletune::StoreError& e) {
      check_one_line("Store::import_json", e);
      return 0;
    }
    export_back(store);
  } catch (const tiletune::StoreError& e) {
    check_one_line("Store::import_json", e);
  } catch (const std::exception& e) {
    check_one_line("Store::import_json", e);
    unexpected_exception("Store::import_json", e);
  }
  return 0;
}
