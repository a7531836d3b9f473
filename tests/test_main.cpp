// main() for the tests that use the tuner library: its worker and compiler processes are this executable.
#include <gtest/gtest.h>

#include "tiletune/worker.hpp"

int main(int argc, char** argv) {
  if (const int child = tiletune::run_child_if_requested(argc, argv); child >= 0) return child;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
