// The capture file: written once per problem, read back, and every malformed file refused in one line.
#include "tiletune/capture.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "../test_paths.hpp"

using namespace tiletune;

namespace {

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string read_error(const std::string& text) {
  test::TempDir dir;
  write(dir.path / "c.jsonl", text);
  try {
    read_capture(dir.path / "c.jsonl");
    return "";
  } catch (const CaptureError& e) {
    return e.what();
  }
}

CapturedProblem problem(const std::string& size) {
  return {"gemm_tiled", "NVIDIA H100 80GB HBM3", "sm_90", size, "", "nearest_size", "TILE_WIDTH=16", 0};
}

}  // namespace

TEST(Capture, EachProblemIsRecordedOnceAndReadBack) {
  test::TempDir dir;
  const auto path = dir.path / "app.db.capture.jsonl";
  {
    CaptureWriter w(path);
    EXPECT_TRUE(w.record(problem("1000x1000x777")));
    EXPECT_FALSE(w.record(problem("1000x1000x777")));  // a second call of the same size
    EXPECT_TRUE(w.record(problem("512x512x512")));
  }
  CaptureWriter again(path);  // the application's next run
  EXPECT_FALSE(again.record(problem("512x512x512")));
  EXPECT_TRUE(again.record(problem("64x64x64")));
  const auto read = read_capture(path);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[0].size, "1000x1000x777");
  EXPECT_EQ(read[0].match, "nearest_size");
  EXPECT_EQ(read[0].served, "TILE_WIDTH=16");
  EXPECT_EQ(read[0].line, 2);
  EXPECT_EQ(read[2].size, "64x64x64");
}

TEST(Capture, ALastLineWithoutItsNewlineKeepsItsOwnLine) {
  test::TempDir dir;
  write(dir.path / "c.jsonl",
        "{\"tiletune_capture\": 1}\n{\"family\": \"f\", \"device\": \"X\", \"size\": \"3\"}");
  CaptureWriter w(dir.path / "c.jsonl");
  EXPECT_TRUE(w.record(problem("10x10x10")));
  const auto read = read_capture(dir.path / "c.jsonl");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].size, "10x10x10");
}

TEST(Capture, MalformedFilesGiveOneLineNamingTheLineAndField) {
  const std::string head = "{\"tiletune_capture\": 1}\n";
  const auto expect = [](const std::string& text, const std::string& part) {
    const std::string e = read_error(text);
    EXPECT_NE(e.find(part), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  expect("", "line 1: empty");
  expect("{\"family\": \"gemm_tiled\"}\n", "line 1: not a capture file");
  expect("{\"tiletune_capture\": 7}\n", "field 'tiletune_capture': version 7");
  expect(head + "[1, 2]\n", "line 2: not a JSON object");
  expect(head + "{\"family\": \"gemm_tiled\", \"device\": \"X\"\n", "line 2: not a JSON object");
  expect(head + "{\"family\": \"gemm_tiled\", \"size\": \"10x10x10\"}\n",
         "line 2: field 'device' is missing");
  expect(head + "\n{\"family\": 3, \"device\": \"X\", \"size\": \"10\"}\n",
         "line 3: field 'family' must be a string");
  expect(head + "{\"family\": \"f\", \"device\": \"X\", \"size\": \"10x-1\"}\n",
         "line 2: field 'size' or 'args'");
  expect(head + "{\"family\": \"f\", \"device\": \"X\", \"size\": \"10\", \"args\": \"a=\"}\n",
         "field 'size' or 'args'");
  EXPECT_NE(read_error("x").find("line 1"), std::string::npos);
  test::TempDir dir;
  EXPECT_THROW(read_capture(dir.path / "absent.jsonl"), CaptureError);
  // A writer refuses to append to a file that is not a capture file, and leaves it as it was.
  write(dir.path / "notes.txt", "my notes\n");
  CaptureWriter w(dir.path / "notes.txt");
  EXPECT_THROW(w.record(problem("10x10x10")), CaptureError);
  std::ifstream in(dir.path / "notes.txt");
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "my notes\n");
}

TEST(Capture, TheOptionOrTheEnvironmentTurnsItOn) {
  ::unsetenv("TILETUNE_CAPTURE");
  EXPECT_TRUE(capture_path("", "app.db").empty());
  EXPECT_EQ(capture_path("c.jsonl", "app.db"), "c.jsonl");
  ::setenv("TILETUNE_CAPTURE", "1", 1);
  EXPECT_EQ(capture_path("", "/data/app.db"), "/data/app.db.capture.jsonl");
  ::setenv("TILETUNE_CAPTURE", "/tmp/x.jsonl", 1);
  EXPECT_EQ(capture_path("", "app.db"), "/tmp/x.jsonl");
  ::setenv("TILETUNE_CAPTURE", "0", 1);
  EXPECT_TRUE(capture_path("", "app.db").empty());
  ::unsetenv("TILETUNE_CAPTURE");
}
