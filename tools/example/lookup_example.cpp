// An application asking a tiletune database for its best gemm_tiled configuration.
//   tiletune_example tiletune.db "NVIDIA H100 80GB HBM3" sm_90 1000x1000x1000
#include <cstdio>
#include <stdexcept>

#include "tiletune/client.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DATABASE DEVICE_NAME ARCH SIZE   (e.g. SIZE 1000x1000x1000)\n", argv[0]);
    return 2;
  }
  tiletune::Query query;
  query.family = "gemm_tiled";
  query.device_name = argv[2];
  query.arch = argv[3];
  try {
    query.problem.dims = tiletune::parse_size_text(argv[4]);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }

  std::string error;
  const auto client = tiletune::Client::open(argv[1], &error);
  if (!client) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  // What the application would compile with if nothing were tuned and the database did not know the family.
  const tiletune::Params fallback{{"TILE_WIDTH", 16}};
  const tiletune::Lookup lookup = client->best(query, fallback);

  for (const auto& [name, value] : lookup.params)
    std::printf("%s=%lld\n", name.c_str(), static_cast<long long>(value));
  std::printf("match: %s: %s\n", std::string(tiletune::to_string(lookup.match)).c_str(),
              lookup.message.c_str());
  if (lookup.median_ms) std::printf("median: %.4f ms\n", *lookup.median_ms);
  return 0;
}
