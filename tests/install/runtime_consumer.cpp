// Asks an installed tiletune's runtime for the measured kernel: without a GPU, or with a bundle that is not
// there, it is one error line, never an abort.
#include <cstdio>
#include <tiletune/runtime.hpp>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  tiletune::runtime::RuntimeOptions options;
  options.bundle = argv[1];
  tiletune::runtime::Runtime runtime(options);
  try {
    const auto& kernel = runtime.kernel("gemm_tiled", "1000x1000x1000");
    std::printf("%s: %s\n", kernel.source().c_str(), tiletune::params_to_text(kernel.params()).c_str());
    return 0;
  } catch (const tiletune::runtime::RuntimeError& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
