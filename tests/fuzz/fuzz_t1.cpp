// libFuzzer target: T1 tuning-space descriptions (tiletune import-space FILE). read_t1 reads only from a
// path, so the input is written as T1.json into a folder of its own beside a small CUDA kernel (kernel.cu,
// which reads block_size_x, grid_size_x and a __constant__ d_filter, as Kernel Tuner's kernels do), and read
// there. A document that translates is written with write_t1_family into an emptied output folder and the
// family it wrote is loaded back with load_family and load_families (which resolves its reference to itself),
// which must succeed; its space hash and default source are made.
//
// Every exception must have a one-line message (one with a line break aborts). T1Error (read_t1,
// write_t1_family) and FamilyError (load_family) are the documented types; any other is a finding with
// TILETUNE_FUZZ_STRICT=1, and so is a translation that write_t1_family refuses because the family it wrote
// does not load (by default that is accepted: write_t1_family documents the check).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "fuzz_support.hpp"
#include "tiletune/family.hpp"
#include "tiletune/t1.hpp"

namespace fs = std::filesystem;
using tiletune::fuzz::unexpected_exception;

namespace {

struct Folders {
  fs::path input;  // in/T1.json, beside in/kernel.cu
  fs::path out;    // where write_t1_family writes, emptied for every input
};

const Folders& folders() {
  static const Folders f = [] {
    Folders out;
    const fs::path dir = tiletune::fuzz::scratch_dir() / "t1" / "in";
    fs::create_directories(dir);
    tiletune::fuzz::write_file(dir / "kernel.cu",
                               "#ifndef block_size_x\n#define block_size_x 256\n#endif\n"
                               "__constant__ float d_filter[64];\n"
                               "extern \"C\" __global__ void vector_add(float* c, const float* a, "
                               "const float* b, int n) {\n"
                               "  int i = blockIdx.x * block_size_x + threadIdx.x;\n"
                               "#if defined(kernel_tuner) && defined(grid_size_x)\n"
                               "  if (i < n) c[i] = a[i] + b[i] * d_filter[i % 64];\n"
                               "#endif\n}\n");
    out.input = dir / "T1.json";
    out.out = tiletune::fuzz::scratch_dir() / "t1" / "out";
    return out;
  }();
  return f;
}

// A message of more than one line (or none) is a finding, whatever the exception's type.
void check_one_line(const char* call, const std::exception& e) {
  const std::string what = e.what();
  if (!what.empty() && what.find('\n') == std::string::npos && what.find('\r') == std::string::npos) return;
  std::fprintf(stderr, "%s threw a message that is not one line: [%s]\n", call, what.c_str());
  std::abort();
}

void use_family(const tiletune::T1Family& family, const Folders& dirs) {
  std::error_code ec;
  fs::remove_all(dirs.out, ec);
  fs::path written;
  try {
    written = tiletune::write_t1_family(family, dirs.out, true);
  } catch (const tiletune::T1Error& e) {
    check_one_line("write_t1_family", e);
    if (tiletune::fuzz::strict() && std::string(e.what()).find("does not load") != std::string::npos) {
      std::fprintf(stderr, "read_t1 translated a family that does not load: %s\n", e.what());
      std::abort();
    }
    return;
  } catch (const std::exception& e) {
    check_one_line("write_t1_family", e);
    unexpected_exception("write_t1_family", e);
    return;
  }
  try {
    const tiletune::KernelFamily f = tiletune::load_family(written);
    (void)f.space_hash();
    (void)f.source_for(f.default_params());
    // As the commands load it: its reference to itself resolved.
    (void)tiletune::load_families({dirs.out});
  } catch (const std::exception& e) {
    // write_t1_family loaded it before moving it into place: it must load where it landed.
    std::fprintf(stderr, "loading what write_t1_family wrote threw %s\n", e.what());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Folders& dirs = folders();
  tiletune::fuzz::write_file(dirs.input, std::string_view(reinterpret_cast<const char*>(data), size));
  tiletune::T1Family family;
  try {
    family = tiletune::read_t1(dirs.input);
  } catch (const tiletune::T1Error& e) {
    check_one_line("read_t1", e);
    return 0;
  } catch (const std::exception& e) {
    check_one_line("read_t1", e);
    unexpected_exception("read_t1", e);
    return 0;
  }
  use_family(family, dirs);
  return 0;
}
