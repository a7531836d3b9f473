#include "tiletune/device.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "tiletune/json_depth.hpp"
#include "tiletune/json_number.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

using nlohmann::json;

namespace {

// Compute capability and memory figures from the vendor's tables (CUDA C Programming Guide, compute
// capabilities table, and the product datasheets).
DeviceLimits hopper(const std::string& profile, const std::string& name, long long l2, long long mem_gb,
                    int mem_mhz) {
  DeviceLimits d;
  d.name = name;
  d.profile = profile;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.shared_per_sm = 233472;           // 228 KB
  d.shared_per_block_optin = 232448;  // 227 KB
  d.reserved_shared_per_block = 1024;
  d.l2_bytes = l2;
  d.global_memory_bytes = mem_gb << 30;
  d.clock_mhz = 1980;
  d.memory_clock_mhz = mem_mhz;
  d.memory_bus_bits = 5120;
  return d;
}

DeviceLimits ada(const std::string& profile, const std::string& name, int sms, long long l2,
                 long long mem_gb) {
  DeviceLimits d;
  d.name = name;
  d.profile = profile;
  d.cc_major = 8;
  d.cc_minor = 9;
  d.sm_count = sms;
  d.max_threads_per_sm = 1536;
  d.max_blocks_per_sm = 24;
  d.shared_per_sm = 102400;           // 100 KB
  d.shared_per_block_optin = 101376;  // 99 KB
  d.reserved_shared_per_block = 1024;
  d.l2_bytes = l2;
  d.global_memory_bytes = mem_gb << 30;
  d.clock_mhz = 2520;
  d.memory_bus_bits = 384;
  return d;
}

std::map<std::string, DeviceLimits> builtin_profiles() {
  std::map<std::string, DeviceLimits> p;
  p["h100"] = hopper("h100", "NVIDIA H100 80GB HBM3", 50LL << 20, 80, 2619);
  p["h200"] = hopper("h200", "NVIDIA H200", 60LL << 20, 141, 3201);
  DeviceLimits a100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.profile = "a100";
  a100.cc_major = 8;
  a100.cc_minor = 0;
  a100.sm_count = 108;
  a100.shared_per_sm = 167936;           // 164 KB
  a100.shared_per_block_optin = 166912;  // 163 KB
  a100.reserved_shared_per_block = 1024;
  a100.l2_bytes = 40LL << 20;
  a100.global_memory_bytes = 80LL << 30;
  a100.clock_mhz = 1410;
  a100.memory_clock_mhz = 1593;
  a100.memory_bus_bits = 5120;
  p["a100"] = a100;
  p["l40s"] = ada("l40s", "NVIDIA L40S", 142, 96LL << 20, 48);
  p["rtx4090"] = ada("rtx4090", "NVIDIA GeForce RTX 4090", 128, 72LL << 20, 24);
  for (auto& [key, d] : p) {
    d.is_profile = true;
    d.uuid = "profile:" + key;
  }
  return p;
}

// Each whole-number property of a device with its JSON key, in one order for writing and reading;
// `in_profile` says whether a device profile file may set it (the others come from a real GPU alone).
template <typename Device, typename F>
void each_number(Device& d, F&& f) {
  f("cc_major", d.cc_major, true);
  f("cc_minor", d.cc_minor, true);
  f("sm_count", d.sm_count, true);
  f("warp_size", d.warp_size, false);
  f("max_threads_per_block", d.max_threads_per_block, true);
  f("max_threads_per_sm", d.max_threads_per_sm, true);
  f("max_blocks_per_sm", d.max_blocks_per_sm, true);
  f("regs_per_sm", d.regs_per_sm, true);
  f("regs_per_block", d.regs_per_block, true);
  f("shared_per_sm", d.shared_per_sm, true);
  f("shared_per_block", d.shared_per_block, true);
  f("shared_per_block_optin", d.shared_per_block_optin, true);
  f("reserved_shared_per_block", d.reserved_shared_per_block, true);
  f("l2_bytes", d.l2_bytes, true);
  f("global_memory_bytes", d.global_memory_bytes, true);
  f("clock_mhz", d.clock_mhz, true);
  f("memory_clock_mhz", d.memory_clock_mhz, false);
  f("memory_bus_bits", d.memory_bus_bits, false);
  f("driver_version", d.driver_version, false);
  f("runtime_version", d.runtime_version, false);
}

template <typename T>
void read_field(const json& j, const char* key, T& out) {
  if (!j.contains(key)) return;
  if constexpr (std::is_arithmetic_v<T>)
    out = whole_number<T>(j.at(key), key);
  else
    out = j.at(key).get<T>();
}

}  // namespace

std::string DeviceLimits::to_json() const {
  json j = {{"name", name},
            {"uuid", uuid},
            {"arch", arch()},
            {"max_block_dim", {max_block_dim[0], max_block_dim[1], max_block_dim[2]}},
            {"max_grid_dim", {max_grid_dim[0], max_grid_dim[1], max_grid_dim[2]}},
            {"is_profile", is_profile}};
  each_number(*this, [&](const char* key, const auto& value, bool) { j[key] = value; });
  if (is_profile) j["profile"] = profile;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

DeviceRecord DeviceLimits::record() const {
  return DeviceRecord{name, uuid, arch(), sm_count, is_profile, to_json()};
}

// A device's properties as the database stores them (to_json). The text may come from an imported file or
// another tool's database, so each number is read as what it is or refused, never cast.
DeviceLimits device_from_json(const std::string& text) {
  const json j = json::parse(text);
  DeviceLimits d;
  d.name = j.at("name").get<std::string>();
  d.uuid = j.at("uuid").get<std::string>();
  each_number(d, [&](const char* key, auto& out, bool) {
    out = whole_number<std::remove_reference_t<decltype(out)>>(j.at(key), key);
  });
  for (int k = 0; k < 3; ++k) {
    d.max_block_dim[k] = whole_number<int>(j.at("max_block_dim").at(k), "max_block_dim");
    d.max_grid_dim[k] = whole_number<long long>(j.at("max_grid_dim").at(k), "max_grid_dim");
  }
  d.is_profile = j.at("is_profile").get<bool>();
  d.profile = j.value("profile", "");
  return d;
}

std::vector<std::string> profile_names() {
  std::vector<std::string> names;
  for (const auto& [key, d] : builtin_profiles()) names.push_back(key);
  return names;
}

namespace {

using Profiles = std::map<std::string, DeviceLimits>;

[[noreturn]] void profile_error(const std::string& name_or_path, const std::string& what) {
  throw std::runtime_error("device profile " + name_or_path + ": " + what);
}

std::string profile_list(const Profiles& profiles) {
  std::string known;
  for (const auto& [key, p] : profiles) known += (known.empty() ? "" : ", ") + key;
  return known;
}

// The profile file's JSON object: readable, no NUL byte, not too deep, valid JSON, an object.
json read_profile_json(const std::string& name_or_path, const Profiles& profiles) {
  std::ifstream in(name_or_path);
  if (!in)
    throw std::runtime_error("unknown device profile '" + name_or_path +
                             "' (built-in: " + profile_list(profiles) + ", or a JSON file)");
  std::ostringstream text;
  text << in.rdbuf();
  if (const std::string why = nul_byte_problem(text.str()); !why.empty()) profile_error(name_or_path, why);
  if (json_depth(text.str()) > kMaxJsonDepth)
    profile_error(name_or_path, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::exception& e) {
    profile_error(name_or_path, "not valid JSON");
  }
  if (!j.is_object()) profile_error(name_or_path, "must hold a JSON object");
  return j;
}

// A file may start from a built-in profile and override fields; only a built-in one, so that a chain of
// files can never loop.
DeviceLimits profile_base(const std::string& name_or_path, const json& j, const Profiles& profiles) {
  if (!j.contains("base")) return DeviceLimits{};
  const json& base = j.at("base");
  const auto it = base.is_string() ? profiles.find(base.get<std::string>()) : profiles.end();
  if (it == profiles.end())
    profile_error(name_or_path, "base must name a built-in profile (" + profile_list(profiles) + ")");
  return it->second;
}

void read_profile_fields(const std::string& name_or_path, const json& j, DeviceLimits& d) {
  const char* field = "";
  try {
    field = "name";
    read_field(j, "name", d.name);
    each_number(d, [&](const char* key, auto& out, bool in_profile) {
      if (!in_profile) return;
      field = key;
      read_field(j, key, out);
    });
  } catch (const json::exception& e) {
    profile_error(name_or_path, std::string("field '") + field + "' has the wrong type");
  }
}

// Limits the occupancy arithmetic divides by or sizes with: out of range, they are an error, not a crash.
void check_profile_limits(const std::string& name_or_path, const DeviceLimits& d) {
  const std::pair<const char*, long long> limits[] = {
      {"cc_major", d.cc_major},
      {"sm_count", d.sm_count},
      {"max_threads_per_block", d.max_threads_per_block},
      {"max_threads_per_sm", d.max_threads_per_sm},
      {"max_blocks_per_sm", d.max_blocks_per_sm},
      {"regs_per_sm", d.regs_per_sm},
      {"regs_per_block", d.regs_per_block},
      {"shared_per_sm", d.shared_per_sm},
      {"shared_per_block", d.shared_per_block},
      {"shared_per_block_optin", d.shared_per_block_optin},
  };
  for (const auto& [name, value] : limits)
    if (value <= 0 || value > (1LL << 40))
      profile_error(name_or_path,
                    std::string(name) + " must be positive and plausible, got " + std::to_string(value));
  if (d.cc_minor < 0 || d.cc_minor > 9 || d.cc_major > 99)
    profile_error(name_or_path, "cc_major.cc_minor is not a compute capability");
  if (d.reserved_shared_per_block < 0 || d.l2_bytes < 0 || d.global_memory_bytes < 0 || d.clock_mhz < 0)
    profile_error(name_or_path, "sizes and clocks must not be negative");
}

}  // namespace

DeviceLimits load_profile(const std::string& name_or_path) {
  const auto profiles = builtin_profiles();
  if (auto it = profiles.find(name_or_path); it != profiles.end()) return it->second;
  const json j = read_profile_json(name_or_path, profiles);
  DeviceLimits d = profile_base(name_or_path, j, profiles);
  read_profile_fields(name_or_path, j, d);
  if (d.name.empty() || d.cc_major <= 0 || d.sm_count <= 0 || d.shared_per_sm <= 0)
    profile_error(name_or_path, "needs at least name, cc_major, cc_minor, sm_count, shared_per_sm");
  if (d.shared_per_block_optin == 0) d.shared_per_block_optin = d.shared_per_block;
  check_profile_limits(name_or_path, d);
  d.is_profile = true;
  d.profile = std::filesystem::path(name_or_path).stem().string();
  d.uuid = "profile:" + d.profile;
  return d;
}

std::vector<DeviceLimits> present_devices(std::string* why) {
  std::vector<DeviceLimits> out;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    if (why)
      *why = std::string("no CUDA GPU: ") +
             (err != cudaSuccess ? cudaGetErrorString(err) : "the driver reports none");
    cudaGetLastError();
    return out;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DeviceLimits d;
    d.name = p.name;
    char uuid[64];
    const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
    std::snprintf(uuid, sizeof uuid,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                  u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    d.uuid = uuid;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.sm_count = p.multiProcessorCount;
    d.warp_size = p.warpSize;
    d.max_threads_per_block = p.maxThreadsPerBlock;
    for (int k = 0; k < 3; ++k) {
      d.max_block_dim[k] = p.maxThreadsDim[k];
      d.max_grid_dim[k] = p.maxGridSize[k];
    }
    d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    d.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
    d.regs_per_sm = p.regsPerMultiprocessor;
    d.regs_per_block = p.regsPerBlock;
    d.shared_per_sm = static_cast<long long>(p.sharedMemPerMultiprocessor);
    d.shared_per_block = static_cast<long long>(p.sharedMemPerBlock);
    d.shared_per_block_optin = static_cast<long long>(p.sharedMemPerBlockOptin);
    d.reserved_shared_per_block = static_cast<long long>(p.reservedSharedMemPerBlock);
    d.l2_bytes = p.l2CacheSize;
    d.global_memory_bytes = static_cast<long long>(p.totalGlobalMem);
    int clock_khz = 0, mem_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, i);
    cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, i);
    d.clock_mhz = clock_khz / 1000;
    d.memory_clock_mhz = mem_khz / 1000;
    d.memory_bus_bits = p.memoryBusWidth;
    d.driver_version = driver;
    d.runtime_version = runtime;
    d.ordinal = i;
    out.push_back(d);
  }
  return out;
}

}  // namespace tiletune
