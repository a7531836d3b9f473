// libFuzzer target: merge's inputs (tiletune merge A.db B.db -o ALL.db). The input is split at its first
// "\n--\n" into two database files (a lone input is the first, merged with a small valid database); both are
// merged with Store::merge into a copy of a small valid output. A merge that fails must throw one StoreError
// of one line and leave the output's bytes as they were; one that succeeds must leave an output that passes
// PRAGMA integrity_check and exports. Any other exception, or a message of more than one line, is a finding.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "fuzz_store.hpp"

namespace fs = std::filesystem;

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

// A database with one sweep of two results, made once: the output's starting point and the second input.
const std::string& small_database() {
  static const std::string bytes = [] {
    const fs::path path = tiletune::fuzz::scratch_dir() / "small.db";
    {
      tiletune::Store store = tiletune::Store::open(path);
      tiletune::SweepSpec spec;
      spec.family = "gemm_tiled";
      spec.template_hash = "0123456789abcdef";
      spec.family_json = "{}";
      spec.space_hash = "fedcba9876543210";
      spec.device = {"NVIDIA H100 80GB HBM3", "profile:h100", "sm_90", 132, true, "{}"};
      spec.problem = {{64, 64, 64}, {}};
      spec.kind = "sweep";
      spec.strategy = "brute_force";
      tiletune::ResultRecord ok;
      ok.params = {{"TILE", 8}};
      ok.median_ms = 1.0;
      ok.min_ms = 1.0;
      ok.repetitions = 1;
      tiletune::ResultRecord pruned;
      pruned.params = {{"TILE", 64}};
      pruned.outcome = tiletune::Outcome::pruned;
      pruned.reason = "threads";
      store.add_sweep(spec, {ok, pruned});
    }
    return tiletune::test::read_bytes(path);
  }();
  return bytes;
}

void reset(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix, ec);
  tiletune::fuzz::write_file(path, bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path dir = tiletune::fuzz::scratch_dir();
  const fs::path a = dir / "a.db", b = dir / "b.db", out = dir / "out.db";
  const std::string text = tiletune::fuzz::text_of(data, size);
  const std::size_t cut = text.find("\n--\n");
  reset(a, text.substr(0, cut));
  reset(b, cut == std::string::npos ? small_database() : text.substr(cut + 4));
  reset(out, small_database());
  std::ostringstream report;
  try {
    (void)tiletune::Store::merge({a, b}, out, report);
  } catch (const tiletune::StoreError& e) {
    const std::string what = e.what();
    if (what.empty() || what.find('\n') != std::string::npos)
      finding("Store::merge threw a message of lines", what);
    if (tiletune::test::read_bytes(out) != small_database())
      finding("a failed merge changed the output", what);
    return 0;
  } catch (const std::exception& e) {
    tiletune::fuzz::unexpected_exception("Store::merge", e);
    return 0;
  }
  try {
    tiletune::Store store = tiletune::Store::open(out, tiletune::Store::Mode::read_only);
    if (!store.integrity_ok()) finding("a merge succeeded into an output that fails integrity_check", "");
    tiletune::fuzz::read_back(out, store);
  } catch (const std::exception& e) {
    finding("the output of a merge that succeeded cannot be read", e.what());
  }
  return 0;
}
