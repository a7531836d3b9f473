// libFuzzer target: device profiles (--device-profile FILE). Writes the input as a JSON file and loads it
// with tiletune::load_profile. A profile that loads is then used as planning uses it: its JSON form read
// back, the occupancy of a few kernel shapes computed, and the configurations of gemm_naive (from the source
// tree) pruned against its limits.
#include <string>

#include "fuzz_support.hpp"
#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/occupancy.hpp"
#include "tiletune/plan.hpp"

using tiletune::fuzz::unexpected_exception;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path path = tiletune::fuzz::scratch_dir() / "profile.json";
  static const tiletune::KernelFamily gemm =
      tiletune::load_family(std::filesystem::path(TILETUNE_SOURCE_TEMPLATES) / "gemm_naive");
  static const std::vector<tiletune::Params> configs = tiletune::enumerate_space(gemm);
  static const tiletune::ProblemKey problem = gemm.make_problem({1000, 1000, 1000}, {});

  tiletune::fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  tiletune::DeviceLimits device;
  try {
    device = tiletune::load_profile(path.string());
  } catch (const std::runtime_error&) {
    return 0;
  } catch (const std::exception& e) {
    unexpected_exception("load_profile", e);
    return 0;
  }
  try {
    (void)device.arch();
    (void)device.record();
    (void)tiletune::device_from_json(device.to_json());
  } catch (const std::exception& e) {
    // The JSON form of a loaded profile must read back.
    unexpected_exception("DeviceLimits::to_json / device_from_json", e);
  }
  // threads, registers per thread, static and dynamic shared memory.
  static const long long shapes[][4] = {{256, 32, 0, 0},        {1024, 255, 49152, 0}, {32, 16, 0, 100000},
                                        {1, 1, 0, 0},           {1024, 64, 0, 232448}, {96, 40, 12288, 4096},
                                        {2048, 32, 0, 0},       {64, 0, 0, 0},         {128, 128, 1 << 20, 0},
                                        {512, 32, 0, 1LL << 40}};
  for (const auto& s : shapes) {
    try {
      (void)tiletune::compute_occupancy(device, static_cast<int>(s[0]), static_cast<int>(s[1]), s[2], s[3]);
    } catch (const std::exception& e) {
      unexpected_exception("compute_occupancy", e);
    }
  }
  for (const auto& params : configs) {
    try {
      tiletune::PlannedConfig c = tiletune::prune_before_compile(gemm, device, problem, params);
      (void)tiletune::compile_job(gemm, device, params);
      if (c.outcome != tiletune::Outcome::ok) continue;
      // As if compiled: the limits known only after compiling, and the occupancy.
      tiletune::CompiledKernel kernel;
      kernel.usage.registers = 40;
      kernel.usage.static_smem = 8192;
      kernel.usage.barriers = 1;
      tiletune::apply_compile_result(c, kernel, device);
    } catch (const std::exception& e) {
      unexpected_exception("prune_before_compile", e);
    }
  }
  return 0;
}
