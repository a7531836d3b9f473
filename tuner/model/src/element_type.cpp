#include "tiletune/element_type.hpp"

#include <array>
#include <limits>
#include <utility>

namespace tiletune {

namespace {

struct TypeInfo {
  ElementType type;
  const char* name;
  const char* scalar_name;  // nullptr: not a scalar type
  const char* cuda_name;
  std::size_t size;
  bool floating;
};

constexpr std::array<TypeInfo, 9> kTypes = {{
    {ElementType::f32, "float", "float", "float", 4, true},
    {ElementType::f64, "double", "double", "double", 8, true},
    {ElementType::f16, "half", nullptr, "__half", 2, true},
    {ElementType::bf16, "bfloat16", nullptr, "__nv_bfloat16", 2, true},
    {ElementType::i8, "int8", nullptr, "signed char", 1, false},
    {ElementType::u8, "uint8", nullptr, "unsigned char", 1, false},
    {ElementType::i32, "int32", "int", "int", 4, false},
    {ElementType::u32, "uint32", nullptr, "unsigned int", 4, false},
    {ElementType::i64, "int64", "long", "long long", 8, false},
}};

const TypeInfo& info(ElementType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  return kTypes[0];
}

// The integers a type holds; floating types: the whole int64 range.
std::pair<std::int64_t, std::int64_t> integer_range(ElementType t) {
  using L = std::numeric_limits<std::int64_t>;
  switch (t) {
    case ElementType::i8:
      return {-128, 127};
    case ElementType::u8:
      return {0, 255};
    case ElementType::i32:
      return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    case ElementType::u32:
      return {0, std::numeric_limits<std::uint32_t>::max()};
    default:
      return {L::min(), L::max()};
  }
}

std::string join(bool scalars) {
  std::string out;
  for (const auto& i : kTypes) {
    const char* n = scalars ? i.scalar_name : i.name;
    if (n) out += (out.empty() ? "" : ", ") + std::string(n);
  }
  return out;
}

}  // namespace

std::string to_string(ElementType t) { return info(t).name; }

std::optional<ElementType> element_type_from_string(std::string_view name) {
  for (const auto& i : kTypes)
    if (name == i.name) return i.type;
  return std::nullopt;
}

std::string scalar_type_name(ElementType t) {
  const char* n = info(t).scalar_name;
  return n ? n : info(t).name;
}

std::optional<ElementType> scalar_type_from_string(std::string_view name) {
  for (const auto& i : kTypes)
    if (i.scalar_name && name == i.scalar_name) return i.type;
  return std::nullopt;
}

std::size_t size_of(ElementType t) { return info(t).size; }

bool holds_integer(ElementType t, std::int64_t value) {
  const auto [lo, hi] = integer_range(t);
  return value >= lo && value <= hi;
}

std::string integer_range_text(ElementType t) {
  const auto [lo, hi] = integer_range(t);
  return std::string("[").append(std::to_string(lo)).append(", ").append(std::to_string(hi)).append("]");
}
bool is_floating(ElementType t) { return info(t).floating; }
std::string cuda_type_name(ElementType t) { return info(t).cuda_name; }
std::string element_type_list() { return join(false); }
std::string scalar_type_list() { return join(true); }

}  // namespace tiletune
