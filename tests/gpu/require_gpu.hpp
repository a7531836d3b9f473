// GPU tests skip, saying why, where no CUDA GPU can be used.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "tiletune/sweep.hpp"
#include "tiletune/worker.hpp"

namespace tiletune::test {

// Asks a throwaway worker (never this process: it must not own a CUDA context) whether a GPU is there; ""
// when one is.
inline std::string gpu_missing_reason() {
  static const std::string reason = [] {
    WorkerProcess w(0);
    try {
      worker_device(w);
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }();
  return reason;
}

}  // namespace tiletune::test

#define REQUIRE_GPU()                                         \
  do {                                                        \
    if (!::tiletune::test::gpu_missing_reason().empty())      \
      GTEST_SKIP() << ::tiletune::test::gpu_missing_reason(); \
  } while (0)
