// The capture file: written once per problem, read back, and every malformed file refused in one line.
#include "tiletune/capture.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "../test_paths.hpp"
#include "tiletune/input_file.hpp"

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
  return {"gemm_tiled", "NVIDIA H100 80GB HBM3", "sm_90", size, "", "nearest_size", "TILE_WIDTH=16", 0, {}};
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

TEST(Capture, SavedInputsAreRecordedAndReadBackAndOldLinesHaveNone) {
  test::TempDir dir;
  const auto path = dir.path / "c.jsonl";
  write(
      path,
      "{\"tiletune_capture\": 1}\n{\"family\": \"f\", \"device\": \"X\", \"size\": \"3\"}\n");  // an old line
  CaptureWriter w(path);
  CapturedProblem p = problem("100x100x100");
  EXPECT_FALSE(w.contains(p));
  p.inputs = {{"A", "c.jsonl.inputs/gemm_tiled-1/A.npy"}, {"B", "c.jsonl.inputs/gemm_tiled-1/B.npy"}};
  EXPECT_TRUE(w.record(p));
  EXPECT_TRUE(w.contains(problem("100x100x100")));
  EXPECT_TRUE(w.record(problem("200x200x200")));
  const auto read = read_capture(path);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_TRUE(read[0].inputs.empty());
  EXPECT_EQ(read[1].inputs, p.inputs);
  EXPECT_TRUE(read[2].inputs.empty());
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str().find("\"inputs\""), s.str().rfind("\"inputs\""));  // only the line that saved some
}

TEST(Capture, BadSavedInputPathsGiveOneLineNamingTheField) {
  const std::string line =
      "{\"tiletune_capture\": 1}\n{\"family\": \"f\", \"device\": \"X\", \"size\": \"3\", ";
  EXPECT_NE(read_error(line + "\"inputs\": 3}\n").find("line 2: field 'inputs' must be an object"),
            std::string::npos);
  EXPECT_NE(
      read_error(line + "\"inputs\": {\"x\": 3}}\n").find("line 2: field 'inputs.x' must be a non-empty"),
      std::string::npos);
  EXPECT_NE(read_error(line + "\"inputs\": {\"x\": \"\"}}\n").find("field 'inputs.x' must be a non-empty"),
            std::string::npos);
  EXPECT_NE(read_error(line + "\"inputs\": {\"x\": \"/etc/x.npy\"}}\n")
                .find("field 'inputs.x' must be a path relative"),
            std::string::npos);
  const std::string odd = read_error(line + "\"inputs\": {\"a\\nb\": 1}}\n");  // a name with a newline
  EXPECT_NE(odd.find("field 'inputs.a?b'"), std::string::npos) << odd;
  EXPECT_NE(read_error(line + "\"inputs\": {\"\": \"x.npy\"}}\n").find("field 'inputs' names an empty"),
            std::string::npos);
}

TEST(Capture, EachProblemsInputsGetTheirOwnFolder) {
  const auto a = capture_inputs_dir("/data/app.capture.jsonl", problem("100x100x100"));
  const auto b = capture_inputs_dir("/data/app.capture.jsonl", problem("100x100x101"));
  CapturedProblem other_args = problem("100x100x100");
  other_args.args = "alpha=2";
  EXPECT_NE(a, b);
  EXPECT_NE(a, capture_inputs_dir("/data/app.capture.jsonl", other_args));
  EXPECT_TRUE(a.is_relative());
  EXPECT_EQ(a.parent_path(), "app.capture.jsonl.inputs");
  EXPECT_EQ(a.filename().string().rfind("gemm_tiled-", 0), 0u) << a;
  ::unsetenv("TILETUNE_CAPTURE_INPUTS");
  EXPECT_FALSE(capture_inputs_enabled(false));
  EXPECT_TRUE(capture_inputs_enabled(true));
  ::setenv("TILETUNE_CAPTURE_INPUTS", "1", 1);
  EXPECT_TRUE(capture_inputs_enabled(false));
  ::unsetenv("TILETUNE_CAPTURE_INPUTS");
}

// What the runtime saves is what a sweep reads back: the .npy header (and raw bytes for bfloat16) checked
// as any user's file.
TEST(Capture, SavedInputsReadBackAsInputFiles) {
  test::TempDir dir;
  const auto read_back = [&](const std::filesystem::path& file, ElementType type, std::uint64_t count) {
    const InputLayout layout =
        inspect_input(file, file.extension() == ".npy" ? InputFormat::npy : InputFormat::raw, type, count);
    std::string bytes;
    stream_input(file, layout, type, 7, [&](const char* p, std::size_t n) { bytes.append(p, n); });
    return std::make_pair(layout, bytes);
  };
  for (std::uint64_t count : {0ull, 1ull, 5ull, 1000ull}) {
    std::vector<float> values(count);
    for (std::size_t i = 0; i < count; ++i) values[i] = 0.5f * static_cast<float>(i) - 3;
    const auto file = dir.path / ("f" + std::to_string(count) + input_file_extension(ElementType::f32));
    write_input_file(file, ElementType::f32, values.data(), count);
    const auto [layout, bytes] = read_back(file, ElementType::f32, count);
    EXPECT_EQ(layout.offset % 64, 0u);
    EXPECT_EQ(layout.count, count);
    EXPECT_EQ(bytes, std::string(reinterpret_cast<const char*>(values.data()), count * sizeof(float)));
  }
  const std::int64_t longs[] = {-1, 1ll << 40, 7};
  write_input_file(dir.path / "l.npy", ElementType::i64, longs, 3);
  EXPECT_EQ(read_back(dir.path / "l.npy", ElementType::i64, 3).second,
            std::string(reinterpret_cast<const char*>(longs), sizeof longs));
  EXPECT_THROW(read_back(dir.path / "l.npy", ElementType::i32, 3), InputFileError);  // its dtype is kept
  const std::uint16_t bf16[] = {0x3f80, 0xc000};
  EXPECT_EQ(input_file_extension(ElementType::bf16), ".bin");
  write_input_file(dir.path / "h.bin", ElementType::bf16, bf16, 2);
  EXPECT_EQ(read_back(dir.path / "h.bin", ElementType::bf16, 2).second,
            std::string(reinterpret_cast<const char*>(bf16), sizeof bf16));
  EXPECT_THROW(write_input_file(dir.path / "absent" / "x.npy", ElementType::f32, longs, 1), InputFileError);
}
