// libFuzzer target: the client library on arbitrary database files. Writes the input as a file, opens it with
// tiletune::Client (read-only; it must refuse what is not a tiletune database in one line) and asks for best
// configurations: an exact match, a nearest size, another device of the same architecture and an unknown
// family, as an application would. Client::open and Client::best are noexcept: an exception out of them
// terminates, which libFuzzer reports like a crash.
#include <filesystem>
#include <string>

#include "fuzz_support.hpp"
#include "tiletune/client.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path path = tiletune::fuzz::scratch_dir() / "client.db";
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix, ec);
  tiletune::fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));

  std::string error;
  const auto client = tiletune::Client::open(path, &error);
  if (!client) return 0;
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  const tiletune::Query queries[] = {
      {"gemm_tiled", h100, "sm_90", {{1000, 1000, 1000}, {}}},
      {"gemm_tiled", h100, "sm_90", {{4096, 4096, 4096}, {}}},
      {"gemm_tiled", "NVIDIA H200", "sm_90", {{1000, 1000, 1000}, {}}},
      {"conv1d_tiled", h100, "sm_90", {{1 << 20}, {{"mask_width", 5}}}},
      {"conv1d_tiled", h100, "sm_90", {{1 << 20}, {{"mask_width", -5}, {"other", 0}}}},
      {"gemm_tiled", h100, "sm_90", {{}, {}}},
      {"no_such_family", h100, "sm_90", {{1, 2, 3}, {}}},
  };
  for (const auto& q : queries) {
    (void)client->best(q);
    (void)client->best(q, {{"TILE", 16}});
  }
  return 0;
}
