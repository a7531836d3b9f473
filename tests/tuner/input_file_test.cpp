#include "tiletune/input_file.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "../test_paths.hpp"
#include "requests.hpp"
#include "tiletune/device.hpp"
#include "tiletune/family.hpp"

using namespace tiletune;

namespace {

// An .npy file as numpy writes it (version 1, header padded to 64 bytes), with `data_bytes` of data.
std::string npy_bytes(const std::string& dict, std::size_t data_bytes, char major = 1) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + major + '\0';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  if (major > 1) out += std::string(2, '\0');
  out += header;
  for (std::size_t i = 0; i < data_bytes; ++i) out += static_cast<char>(i);
  return out;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& order = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
}

void write(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// The error of inspecting these bytes as a float buffer ("" if none).
std::string npy_error(const std::string& bytes, ElementType type = ElementType::f32,
                      std::optional<std::uint64_t> count = std::nullopt) {
  test::TempDir dir;
  write(dir.path / "x.npy", bytes);
  try {
    inspect_input(dir.path / "x.npy", InputFormat::npy, type, count);
    return "";
  } catch (const InputFileError& e) {
    return e.what();
  }
}

}  // namespace

TEST(InputFile, NpyHeaderIsReadAndTheDataStreamedInOrder) {
  test::TempDir dir;
  const std::string bytes = npy_bytes(dict("<f4", "(2, 3)"), 24);
  write(dir.path / "a.npy", bytes);
  const InputLayout layout = inspect_input(dir.path / "a.npy", InputFormat::npy, ElementType::f32, 6);
  EXPECT_EQ(layout.count, 6u);
  EXPECT_EQ(layout.offset, 128u);  // numpy pads the header to a multiple of 64 bytes
  std::string streamed;
  int pieces = 0;
  stream_input(dir.path / "a.npy", layout, ElementType::f32, 10, [&](const char* p, std::size_t n) {
    streamed.append(p, n);
    ++pieces;
  });
  EXPECT_EQ(streamed, bytes.substr(128));
  EXPECT_EQ(pieces, 3);  // 10 + 10 + 4 bytes
  const std::string v2 = npy_bytes(dict("|u1", "()"), 1, 2);
  const NpyHeader h = parse_npy_header(v2, v2.size());
  EXPECT_EQ(h.type, ElementType::u8);
  EXPECT_EQ(h.count, 1u);  // a 0-d array holds one element
}

TEST(InputFile, HostileNpyFilesGiveOneLineNamingTheField) {
  const auto expect = [](const std::string& bytes, const std::string& field) {
    const std::string e = npy_error(bytes);
    EXPECT_NE(e.find("x.npy: npy " + field), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  expect(npy_bytes(dict("<f4", "(4,)"), 15), "shape");                            // truncated data
  expect(npy_bytes(dict("<f4", "(4,)"), 17), "shape");                            // trailing bytes
  expect("PK\x03\x04 not numpy at all", "magic");                                 // wrong header
  expect(npy_bytes(dict("<f4", "(4,)"), 16, 9), "version");                       // unknown version
  expect(npy_bytes(dict("<f4", "(4,)"), 16).substr(0, 40), "header length");      // cut inside the header
  expect(npy_bytes(dict("<f4", "(1099511627776, 1099511627776)"), 16), "shape");  // huge declared shape
  expect(npy_bytes(dict("<f4", "(99999999999999999999999,)"), 16), "shape");      // overflows 64 bits
  expect(npy_bytes(dict("<f4", "(2, 2)", "True"), 16), "fortran_order");
  expect(npy_bytes(dict("|O", "(4,)"), 32), "descr");   // object array: pointers, no data
  expect(npy_bytes(dict(">f4", "(4,)"), 16), "descr");  // big-endian
  expect(npy_bytes("{'descr': '<f4', 'shape': (4,), }", 16), "header");
  expect(npy_bytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", 16), "descr");
  expect(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", 16), "header");
  expect(npy_bytes("{'descr': '<f4', 'fortran_order': maybe, 'shape': (4,)}", 16), "fortran_order");
  EXPECT_NE(npy_error(npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,)}", 16))
                .find("npy descr"),
            std::string::npos);
  // A one-dimensional array is the same bytes in either order.
  EXPECT_EQ(npy_error(npy_bytes(dict("<f4", "(4,)", "True"), 16)), "");
}

TEST(InputFile, TypeAndCountMustMatchTheBuffer) {
  const std::string ints = npy_bytes(dict("<i4", "(4,)"), 16);
  EXPECT_NE(npy_error(ints).find("does not hold float elements"), std::string::npos);
  EXPECT_EQ(npy_error(ints, ElementType::i32), "");
  EXPECT_NE(npy_error(ints, ElementType::i32, 5).find("holds 4 elements; the buffer has 5"),
            std::string::npos);
  test::TempDir dir;
  write(dir.path / "r.bin", std::string(10, 'x'));
  EXPECT_EQ(inspect_input(dir.path / "r.bin", InputFormat::raw, ElementType::f16, 5).count, 5u);
  EXPECT_THROW(inspect_input(dir.path / "r.bin", InputFormat::raw, ElementType::f32, std::nullopt),
               InputFileError);
  try {
    inspect_input(dir.path / "missing.bin", InputFormat::raw, ElementType::f32, std::nullopt);
    ADD_FAILURE();
  } catch (const InputFileError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.bin: not a readable regular file"), std::string::npos);
  }
}

TEST(InputFile, ContentHashFollowsTheBytes) {
  test::TempDir dir;
  write(dir.path / "a", "abc");
  write(dir.path / "b", "abd");
  EXPECT_EQ(file_content_hash(dir.path / "a"), content_hash("abc"));
  EXPECT_NE(file_content_hash(dir.path / "a"), file_content_hash(dir.path / "b"));
}

namespace {

const char* kFileFamily = R"J({
  "name": "scaled", "source": "scaled.cu", "kernel": "scaled",
  "problem": {"dims": ["n"], "default_sizes": ["4"]},
  "parameters": {"B": {"values": [32, 64], "default": 64}},
  "launch": {"block": ["B"], "grid": ["ceil_div(n, B)"]},
  "arguments": [{"name": "x", "buffer": "float", "count": "n", "role": "input", "fill": FILL},
                {"name": "y", "buffer": "float", "count": "n", "role": "output"},
                {"name": "n", "scalar": "int", "value": "n"}],
  "metric": {"unit": "GB/s", "work": "8 * n"},
  "reference": {"kernel": "scaled_ref.cu", "block": ["64"], "grid": ["ceil_div(n, 64)"],
                "arguments": ["x", "y", "n"]}
})J";

// A family whose input x has the given fill; returns it, or throws FamilyError.
KernelFamily file_family(const std::filesystem::path& dir, const std::string& fill) {
  std::string json = kFileFamily;
  json.replace(json.find("FILL"), 4, fill);
  write(dir / "family.json", json);
  write(dir / "scaled.cu",
        "extern \"C\" __global__ void scaled(const float* x, float* y, int n) {\n"
        "  int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }\n");
  write(dir / "scaled_ref.cu",
        "extern \"C\" __global__ void scaled_ref(const float* x, double* y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0 * x[i]; }\n");
  return load_families({dir}).at(0);
}

std::string family_error(const std::string& fill) {
  test::TempDir dir;
  write(dir.path / "scaled" / "data" / "x.npy", npy_bytes(dict("<f4", "(4,)"), 16));
  try {
    file_family(dir.path / "scaled", fill);
    return "";
  } catch (const FamilyError& e) {
    return e.what();
  }
}

}  // namespace

TEST(InputFile, FamilyFillsFromFilesInsideItsFolder) {
  EXPECT_EQ(family_error(R"({"npy": "data/x.npy"})"), "");
  EXPECT_NE(
      family_error(R"({"npy": "../x.npy"})").find("argument 'x'.fill.npy '../x.npy' must be a path inside"),
      std::string::npos);
  EXPECT_NE(family_error(R"({"npy": "/etc/passwd"})").find("must be a path inside"), std::string::npos);
  EXPECT_NE(family_error(R"({"npy": "data/none.npy"})").find("none.npy: not a readable regular file"),
            std::string::npos);
  EXPECT_NE(family_error(R"({"raw": 3})").find("fill.raw must be a path"), std::string::npos);
  EXPECT_NE(family_error(R"({"csv": "x.csv"})").find("unknown distribution 'csv'"), std::string::npos);
  const std::string e = family_error(R"({"raw": "data/x.npy"})");  // 80 bytes are 20 floats: loads
  EXPECT_EQ(e, "");
}

TEST(InputFile, TheFilesHashSeparatesResultsAndTheCountIsCheckedPerProblem) {
  test::TempDir dir;
  const auto fam = dir.path / "scaled";
  write(fam / "x.npy", npy_bytes(dict("<f4", "(4,)"), 16));
  KernelFamily f = file_family(fam, R"({"npy": "x.npy"})");
  ASSERT_EQ(f.arguments[0].fill.kind, Fill::Kind::file);
  const std::string first = f.template_hash;
  write(fam / "other.npy", npy_bytes(dict("<f4", "(4,)"), 0) + std::string(16, '\x7f'));
  use_input_file(f, "x", fam / "other.npy");
  EXPECT_NE(f.template_hash, first) << "other data, other results";
  EXPECT_EQ(f.arguments[0].fill.path, std::filesystem::absolute(fam / "other.npy"));
  EXPECT_THROW(use_input_file(f, "y", fam / "other.npy"), FamilyError);  // an output is not filled
  try {
    use_input_file(f, "x", fam / "absent.npy");
    ADD_FAILURE();
  } catch (const FamilyError& e) {
    EXPECT_NE(std::string(e.what()).find("--input x: "), std::string::npos) << e.what();
  }
  const DeviceLimits h100 = load_profile("h100");
  const CompileCache cache(dir.path / "cache");
  const auto ok = setup_request(f, f.make_problem({4}, {}), h100, cache, MeasureSettings{});
  EXPECT_EQ(ok.buffers[0].fill.kind, wire::FillKind::file);
  EXPECT_EQ(ok.buffers[0].fill.hash, f.arguments[0].fill.hash);
  try {
    setup_request(f, f.make_problem({5}, {}), h100, cache, MeasureSettings{});
    ADD_FAILURE();
  } catch (const SweepError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 4 elements; the buffer has 5"), std::string::npos)
        << e.what();
  }
}
