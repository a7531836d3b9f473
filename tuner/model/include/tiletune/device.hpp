// The device model: limits of a GPU, read from the driver when one is present, or from a built-in profile
// (vendor tables) so that planning runs on any machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tiletune/records.hpp"

namespace tiletune {

struct DeviceLimits {
  std::string name;
  std::string uuid;  // "GPU-xxxxxxxx-..." or "profile:h100"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_block_dim[3] = {1024, 1024, 64};
  long long max_grid_dim[3] = {2147483647LL, 65535, 65535};
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int regs_per_sm = 65536;
  int regs_per_block = 65536;
  long long shared_per_sm = 0;              // bytes
  long long shared_per_block = 49152;       // static limit, and dynamic without opt-in
  long long shared_per_block_optin = 0;     // the most one block may have after opting in
  long long reserved_shared_per_block = 0;  // what the driver keeps per block
  long long l2_bytes = 0;
  long long global_memory_bytes = 0;
  int clock_mhz = 0;  // SM boost clock
  int memory_clock_mhz = 0;
  int memory_bus_bits = 0;
  int driver_version = 0, runtime_version = 0;
  int ordinal = -1;  // CUDA device index, -1 for a profile
  bool is_profile = false;
  std::string profile;  // short profile name when is_profile

  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
  DeviceRecord record() const;
  std::string to_json() const;
};

// The inverse of DeviceLimits::to_json.
DeviceLimits device_from_json(const std::string& text);

// Built-in profiles, by short name: h100, h200, a100, l40s, rtx4090.
std::vector<std::string> profile_names();
// A short name or a path to a JSON file with the fields of DeviceLimits. Throws std::runtime_error, one line.
DeviceLimits load_profile(const std::string& name_or_path);

// GPUs visible through the CUDA runtime. Never throws: on a machine without a driver or a GPU it returns
// an empty list and sets *why (e.g. "no CUDA GPU: CUDA driver version is insufficient for CUDA runtime").
std::vector<DeviceLimits> present_devices(std::string* why = nullptr);

}  // namespace tiletune
