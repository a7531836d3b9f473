// Asks an installed tiletune's client library for a configuration: a missing database is an error line,
// never an exception.
#include <cstdio>
#include <tiletune/client.hpp>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::string error;
  const auto client = tiletune::Client::open(argv[1], &error);
  if (!client) {
    std::printf("error: %s\n", error.c_str());
    return 1;
  }
  tiletune::Query q{"gemm_tiled", "NVIDIA H100 80GB HBM3", "sm_90", {{1000, 1000, 1000}, {}}};
  const auto best = client->best(q, {{"TILE_WIDTH", 16}});
  std::printf("%s: %s\n", std::string(tiletune::to_string(best.match)).c_str(),
              tiletune::params_to_text(best.params).c_str());
  return 0;
}
