// libFuzzer target: a bundle's manifest (what tiletune::runtime and the Python package read from a bundle
// folder). Writes the input as manifest.json beside one small CUBIN file, reads it with read_bundle (it must
// refuse what is no manifest with one BundleError of one line), then uses what was read as the runtime does:
// each entry's CUBIN (a missing or unsafe file is a BundleError), and find() for each entry's own key and for
// a problem no entry has. Any other exception, or a message of more than one line, is a finding.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_support.hpp"
#include "tiletune/bundle.hpp"

namespace fs = std::filesystem;

namespace {

void check_one_line(const char* call, const std::exception& e) {
  const std::string what = e.what();
  if (!what.empty() && what.find('\n') == std::string::npos && what.find('\r') == std::string::npos) return;
  std::fprintf(stderr, "%s threw a message that is not one line: [%s]\n", call, what.c_str());
  std::abort();
}

// What the runtime asks of a bundle it has read.
void use(const tiletune::Bundle& bundle) {
  for (const auto& e : bundle.entries) {
    try {
      (void)bundle.cubin(e);
    } catch (const tiletune::BundleError& error) {
      check_one_line("Bundle::cubin", error);
    }
    tiletune::Match match{};
    if (!bundle.find(e.family, e.device_name, e.arch, e.problem, &match)) {
      std::fprintf(stderr, "Bundle::find did not find an entry by its own key (%s)\n", e.family.c_str());
      std::abort();
    }
    tiletune::ProblemKey other = e.problem;
    other.dims.push_back(7);
    (void)bundle.find(e.family, e.device_name, e.arch, other, &match);
    (void)bundle.find(e.family, "another device", "sm_1000", e.problem, &match);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = [] {
    const fs::path d = tiletune::fuzz::scratch_dir() / "bundle";
    fs::create_directories(d / "cubins");
    tiletune::fuzz::write_file(d / "cubins" / "gemm_tiled.sm_90.0123456789abcdef.cubin",
                               "\x7f"
                               "ELF");
    return d;
  }();
  tiletune::fuzz::write_file(dir / "manifest.json", tiletune::fuzz::text_of(data, size));
  tiletune::Bundle bundle;
  try {
    bundle = tiletune::read_bundle(dir);
  } catch (const tiletune::BundleError& e) {
    check_one_line("read_bundle", e);
    return 0;
  } catch (const std::exception& e) {
    check_one_line("read_bundle", e);
    tiletune::fuzz::unexpected_exception("read_bundle", e);
    return 0;
  }
  use(bundle);
  return 0;
}
