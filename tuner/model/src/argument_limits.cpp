#include "argument_limits.hpp"

#include <algorithm>

namespace tiletune {

namespace {

std::string range_problem(const std::string& what, ElementType type, std::int64_t value) {
  if (holds_integer(type, value)) return "";
  return what + " = " + std::to_string(value) + " does not fit " + scalar_type_name(type) + " " +
         integer_range_text(type);
}

// Bytes of `count` elements of `type`, added to `total` (128 bits hold any sum of a few); false when
// negative.
bool add_bytes(unsigned __int128& total, std::int64_t count, ElementType type) {
  if (count < 0) return false;
  total += static_cast<unsigned __int128>(count) * size_of(type);
  return true;
}

}  // namespace

std::string decimal_text(unsigned __int128 v) {
  std::string out;
  do {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v);
  return out;
}

std::string scalar_range_problem(const KernelFamily& family, const Vars& vars) {
  for (const auto& a : family.arguments) {
    if (a.kind != ArgKind::scalar || a.real) continue;
    if (auto why = range_problem("scalar " + a.name, a.type, a.value.eval(vars)); !why.empty()) return why;
  }
  for (const auto& a : family.reference.kernel.arguments) {
    if (!a.name.empty()) continue;  // the family's own argument, checked above
    if (auto why = range_problem("reference scalar", a.scalar, a.value.eval(vars)); !why.empty()) return why;
  }
  return "";
}

std::string memory_problem(const KernelFamily& family, const Vars& vars, const DeviceLimits& device) {
  unsigned __int128 total = 0, copies = 0;
  for (const auto& a : family.arguments) {
    if (a.kind != ArgKind::buffer) continue;
    const std::int64_t count = a.count.eval(vars);
    if (!add_bytes(total, count, a.type))
      return "memory: buffer " + a.name + " has " + std::to_string(count) + " elements";
    // The measuring worker keeps an inout buffer's input, to restore it before each run, and each output's
    // truth, to check every run against.
    if (a.role == BufferRole::inout) add_bytes(copies, count, a.type);
    if (a.role != BufferRole::input) add_bytes(copies, count, family.reference.truth_type(a.type));
  }
  for (const auto& c : family.constants) {
    const std::int64_t count = c.count.eval(vars);
    if (!add_bytes(total, count, c.type))
      return "memory: constant " + c.name + " has " + std::to_string(count) + " elements";
  }
  // And a buffer it writes between timed runs to flush the L2 cache.
  copies += static_cast<unsigned __int128>(std::max<long long>(device.l2_bytes * 2, 64LL << 20));
  if (device.global_memory_bytes <= 0 ||
      total + copies <= static_cast<unsigned __int128>(device.global_memory_bytes))
    return "";
  return "memory: buffers need " + decimal_text(total) + " bytes and the measuring worker's copies " +
         decimal_text(copies) + " more, over the device's " + std::to_string(device.global_memory_bytes);
}

std::string argument_problem(const KernelFamily& family, const Vars& vars, const DeviceLimits& device) {
  try {
    if (auto why = scalar_range_problem(family, vars); !why.empty()) return why;
    return memory_problem(family, vars, device);
  } catch (const ExprError& e) {
    return std::string("arguments: ") + e.what();
  }
}

}  // namespace tiletune
