// tiletune: tune CUDA kernel templates per GPU and store the best configurations.
#include <iostream>
#include <map>

#include "cli.hpp"
#include "tiletune/build_info.hpp"
#include "tiletune/family.hpp"
#include "tiletune/sweep.hpp"
#include "tiletune/utf8.hpp"
#include "tiletune/worker.hpp"

namespace {

const char* kUsage = R"(usage: tiletune <command> [options]   ('tiletune <command> --help' for its options)

commands:
  devices   list the CUDA GPUs present and the built-in device profiles
  plan      enumerate, prune, compile and compute occupancy for a family and problem (no GPU needed)
  sweep     measure every runnable configuration on the GPU and store the outcomes
  bench     run the best stored configuration beside its baselines (cuBLAS, copy, naive kernel)
  query     the best stored configuration for a family, device and problem
  show      a sweep's results, best first
  export    write stored results as JSON, CSV or a C++ header
  import    read results exported as JSON or CSV
  import-space  turn a T1 tuning-space description (as Kernel Tuner reads it) into a family folder
  merge     combine databases (one per machine or Slurm task) into one: tiletune merge A.db B.db -o ALL.db
  report    write a self-contained HTML report of stored sweeps (charts, outcomes, device, provenance)
  replay    run strategies against complete stored sweeps without a GPU and compare how soon they find the best
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace tiletune::cli;
  if (const int child = tiletune::run_child_if_requested(argc, argv); child >= 0) return child;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  if (std::string(argv[1]) == "--version") {
    std::cout << "tiletune " << TILETUNE_VERSION << " (" << TILETUNE_GIT_SHA << ")\n";
    return 0;
  }
  const std::map<std::string, int (*)(const std::vector<std::string>&)> commands = {
      {"devices", cmd_devices}, {"plan", cmd_plan},
      {"query", cmd_query},     {"show", cmd_show},
      {"export", cmd_export},   {"import", cmd_import},
      {"merge", cmd_merge},     {"import-space", cmd_import_space},
      {"sweep", cmd_sweep},     {"bench", cmd_bench},
      {"report", cmd_report},   {"replay", cmd_replay}};
  const auto it = commands.find(argv[1]);
  if (it == commands.end()) {
    std::cerr << "tiletune: unknown command '" << tiletune::printable_line(argv[1])
              << "' (see 'tiletune --help')\n";
    return 2;
  }
  const std::vector<std::string> rest(argv + 2, argv + argc);
  try {
    return it->second(rest);
  } catch (const UsageError& e) {
    std::cerr << "tiletune: " << tiletune::printable_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tiletune " << it->first << ": " << tiletune::printable_line(e.what()) << "\n";
    return 1;
  }
}
