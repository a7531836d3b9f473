// What a problem asks of the kernel's arguments and of the device's memory, checked before compiling: a
// scalar whose value its declared type cannot hold, and buffers larger than the device's memory.
#pragma once

#include <string>

#include "tiletune/device.hpp"
#include "tiletune/expr.hpp"
#include "tiletune/family.hpp"

namespace tiletune {

// Why a scalar argument (the kernel's, or its reference kernel's) cannot receive its value ("" when every
// one can): "scalar n = 3000000000 does not fit int [-2147483648, 2147483647]". Throws ExprError.
std::string scalar_range_problem(const KernelFamily& family, const Vars& vars);

// Why the family's buffers and constants cannot be allocated on the device ("" when they can, or when the
// device's memory is not known): "memory: buffers need 3298534883328 bytes, more than the device's
// 85899345920". Throws ExprError.
std::string memory_problem(const KernelFamily& family, const Vars& vars, const DeviceLimits& device);

// A 128-bit byte count or stride in decimal: sizes are computed in 128 bits so that no product overflows.
std::string decimal_text(unsigned __int128 v);

// The first of the two above, or "arguments: " and the expression's error when one cannot be evaluated.
std::string argument_problem(const KernelFamily& family, const Vars& vars, const DeviceLimits& device);

}  // namespace tiletune
