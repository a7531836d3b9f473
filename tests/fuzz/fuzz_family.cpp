// libFuzzer target: family.json. Writes the input as the family.json of a folder that also holds a tiny
// template (kernel.cu) and reference kernel (reference.cu), next to a copy of the built-in gemm_naive (so
// that "from" and "family" references can resolve), and loads both through tiletune::load_families. A family
// that loads is then used the way plan and sweep use it, without compiling or a GPU: its default sizes become
// problems, and its default configuration (or its whole space, when small) is pruned against the H100
// profile, turned into a compile job and a measure request, with its library baselines.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "requests.hpp"
#include "tiletune/device.hpp"
#include "tiletune/expr.hpp"
#include "tiletune/family.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/sweep.hpp"

namespace fs = std::filesystem;
using tiletune::fuzz::unexpected_exception;

namespace {

struct Folders {
  fs::path base;        // gemm_naive, copied from the source tree
  fs::path fuzzed;      // one family: the input
  fs::path input_json;  // fuzzed/family/family.json
};

const Folders& folders() {
  static const Folders f = [] {
    Folders out;
    const fs::path& scratch = tiletune::fuzz::scratch_dir();
    out.base = scratch / "base";
    fs::create_directories(out.base);
    fs::copy(fs::path(TILETUNE_SOURCE_TEMPLATES) / "gemm_naive", out.base / "gemm_naive",
             fs::copy_options::recursive);
    out.fuzzed = scratch / "fuzzed";
    const fs::path dir = out.fuzzed / "family";
    fs::create_directories(dir);
    tiletune::fuzz::write_file(dir / "kernel.cu",
                               "#ifndef BLOCK\n#define BLOCK 256\n#endif\n"
                               "extern \"C\" __global__ void kernel(float* x, long long n) {\n"
                               "  long long i = blockIdx.x * (long long)BLOCK + threadIdx.x;\n"
                               "  if (i < n) x[i] = 2 * x[i];\n}\n");
    tiletune::fuzz::write_file(dir / "reference.cu",
                               "extern \"C\" __global__ void reference(double* x, long long n) {\n"
                               "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                               "  if (i < n) x[i] = 2 * x[i];\n}\n");
    out.input_json = dir / "family.json";
    return out;
  }();
  return f;
}

// The problems of a family's default sizes ("SIZE" or "SIZE name=value,...").
std::vector<tiletune::ProblemKey> default_problems(const tiletune::KernelFamily& f) {
  std::vector<tiletune::ProblemKey> out;
  for (std::size_t i = 0; i < f.default_sizes.size() && i < 4; ++i) {
    const std::string& text = f.default_sizes[i];
    try {
      const auto space = text.find(' ');
      const auto dims = tiletune::parse_size_text(text.substr(0, space));
      const auto args =
          space == std::string::npos ? tiletune::Params{} : tiletune::parse_args_text(text.substr(space + 1));
      out.push_back(f.make_problem(dims, args));
    } catch (const tiletune::FamilyError&) {
    } catch (const std::invalid_argument&) {
    } catch (const std::exception& e) {
      unexpected_exception("make_problem", e);
    }
  }
  return out;
}

void use_configuration(const tiletune::KernelFamily& f, const tiletune::DeviceLimits& device,
                       const tiletune::ProblemKey& problem, const tiletune::Params& params) {
  const tiletune::MeasureSettings settings;
  try {
    const tiletune::PlannedConfig c = tiletune::prune_before_compile(f, device, problem, params);
    (void)f.metric_work.eval(f.vars(problem, params));
    if (c.outcome != tiletune::Outcome::ok) return;
    (void)tiletune::compile_job(f, device, params);
    (void)tiletune::to_record(c);
    (void)tiletune::measure_request(f, problem, params, c.launch, "kernel.cubin", settings);
  } catch (const tiletune::ExprError&) {
  } catch (const tiletune::SweepError&) {
  } catch (const tiletune::FamilyError&) {
  } catch (const std::exception& e) {
    unexpected_exception("prune_before_compile / measure_request", e);
  }
}

void use_family(const tiletune::KernelFamily& f, const tiletune::DeviceLimits& device) {
  (void)f.space_hash();
  (void)f.source_for(f.default_params());
  std::vector<tiletune::Params> configs = {f.default_params()};
  std::size_t space = 1;
  for (const auto& p : f.parameters)
    if (space <= 16) space *= std::min<std::size_t>(p.values.size(), 17);
  if (space <= 16) {
    try {
      configs = tiletune::enumerate_space(f);
    } catch (const tiletune::FamilyError&) {
    } catch (const std::exception& e) {
      unexpected_exception("enumerate_space", e);
    }
  }
  const tiletune::MeasureSettings settings;
  for (const auto& problem : default_problems(f)) {
    for (const auto& params : configs) use_configuration(f, device, problem, params);
    for (const auto& library : f.library_baselines) {
      try {
        (void)tiletune::baseline_request(f, problem, library, settings);
      } catch (const tiletune::ExprError&) {
      } catch (const tiletune::SweepError&) {
      } catch (const std::exception& e) {
        unexpected_exception("baseline_request", e);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tiletune::DeviceLimits h100 = tiletune::load_profile("h100");
  const Folders& dirs = folders();
  tiletune::fuzz::write_file(dirs.input_json, std::string_view(reinterpret_cast<const char*>(data), size));
  std::vector<tiletune::KernelFamily> families;
  try {
    families = tiletune::load_families({dirs.base, dirs.fuzzed});
  } catch (const tiletune::FamilyError&) {
    return 0;
  } catch (const std::exception& e) {
    unexpected_exception("load_families", e);
    return 0;
  }
  for (const auto& f : families)
    if (f.directory.parent_path() == dirs.fuzzed) use_family(f, h100);
  return 0;
}
