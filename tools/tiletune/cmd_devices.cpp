#include <iostream>

#include "cli.hpp"

namespace tiletune::cli {

int cmd_devices(const std::vector<std::string>& argv) {
  po::options_description desc("options");
  if (!parse("devices", "Lists the CUDA GPUs present and the built-in device profiles.", desc, argv))
    return 0;
  std::string why;
  const auto present = present_devices(&why);
  auto row = [](const DeviceLimits& d, const std::string& id) {
    return std::vector<std::string>{id,
                                    d.name,
                                    d.arch(),
                                    std::to_string(d.sm_count),
                                    std::to_string(d.shared_per_block_optin / 1024) + " KB",
                                    std::to_string(d.l2_bytes >> 20) + " MB",
                                    std::to_string(d.clock_mhz) + " MHz",
                                    d.is_profile ? "profile" : d.uuid};
  };
  const std::vector<std::string> header = {"id", "name", "arch", "SMs", "smem/block", "L2", "clock", "uuid"};
  if (present.empty())
    std::cout << why << "\n";
  else {
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : present) rows.push_back(row(d, std::to_string(d.ordinal)));
    std::cout << "GPUs present (driver " << present.front().driver_version << ", runtime "
              << present.front().runtime_version << "):\n";
    print_table(std::cout, header, rows);
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& name : profile_names()) rows.push_back(row(load_profile(name), name));
  std::cout << "\nbuilt-in profiles (--device-profile NAME):\n";
  print_table(std::cout, header, rows);
  return 0;
}

}  // namespace tiletune::cli
