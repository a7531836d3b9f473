// DynamicLibrary: what NVRTC, XGBoost, cuBLAS and NVML are opened through.
#include "tiletune/dynamic_library.hpp"

#include <gtest/gtest.h>

#include <cstring>

using tiletune::DynamicLibrary;

TEST(DynamicLibrary, OpensTheFirstNameThatLoadsAndFindsItsFunctions) {
  const DynamicLibrary lib({"libtiletune-no-such-library.so.7", "libc.so.6"});
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_EQ(lib.name(), "libc.so.6");
  std::size_t (*length)(const char*) = nullptr;
  ASSERT_TRUE(lib.get(length, "strlen"));
  EXPECT_EQ(length("tiletune"), 8u);
  int (*missing)() = nullptr;
  EXPECT_FALSE(lib.get(missing, "tiletune_no_such_symbol"));
  EXPECT_EQ(missing, nullptr);
}

TEST(DynamicLibrary, SaysWhichLibraryCouldNotBeOpened) {
  const DynamicLibrary lib({"libtiletune-no-such-library.so.7", "libtiletune-nor-this.so"});
  EXPECT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().rfind("libtiletune-no-such-library.so.7: ", 0), 0u) << lib.error();
  EXPECT_EQ(lib.error().find('\n'), std::string::npos);
  void (*f)() = nullptr;
  EXPECT_FALSE(lib.get(f, "anything"));
}

TEST(DynamicLibrary, MovesItsHandle) {
  DynamicLibrary a({"libc.so.6"}, /*close=*/true);
  DynamicLibrary b = std::move(a);
  EXPECT_TRUE(b.ok());
  std::size_t (*length)(const char*) = nullptr;
  EXPECT_TRUE(b.get(length, "strlen"));
}
