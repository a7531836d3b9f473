// The element types of buffers, __constant__ symbols and scalars that a family may declare.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tiletune {

enum class ElementType { f32, f64, f16, bf16, i8, u8, i32, u32, i64 };

// Buffer and constant types as family.json spells them: float, double, half, bfloat16, int8, uint8, int32,
// uint32, int64.
std::string to_string(ElementType t);
std::optional<ElementType> element_type_from_string(std::string_view name);
// Scalars: int, long, float, double.
std::string scalar_type_name(ElementType t);
std::optional<ElementType> scalar_type_from_string(std::string_view name);

std::size_t size_of(ElementType t);
// Whether an integer value keeps its value as this type: int and the other integer types wrap outside their
// range; float and double hold every 64-bit integer's magnitude.
bool holds_integer(ElementType t, std::int64_t value);
// The range an integer type holds, as errors quote it: "[-2147483648, 2147483647]".
std::string integer_range_text(ElementType t);
bool is_floating(ElementType t);
// The C++ spelling in CUDA source (e.g. __half, unsigned char).
std::string cuda_type_name(ElementType t);
// The lists as family.json errors quote them.
std::string element_type_list();
std::string scalar_type_list();

}  // namespace tiletune
