// Whole numbers read from JSON that someone else wrote (a profile, a bundle's manifest, a stored device).
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

namespace tiletune {

// `value` as a T when it is an integer that T holds; otherwise nlohmann's type_error 302 naming `field`.
// A float (1e98, 2.5) or an integer out of T's range is refused: converting one would be undefined.
template <typename T>
T whole_number(const nlohmann::json& value, const std::string& field) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  using nlohmann::json;
  if (!value.is_number_integer() ||
      (value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t{1} << 62))
    throw json::type_error::create(302, field + " must be an integer", &value);
  const long long x = value.get<long long>();
  const bool below = std::is_signed_v<T> ? x < static_cast<long long>(std::numeric_limits<T>::min()) : x < 0;
  const bool above = x > 0 && static_cast<unsigned long long>(x) >
                                  static_cast<unsigned long long>(std::numeric_limits<T>::max());
  if (below || above) throw json::type_error::create(302, field + " is out of range", &value);
  return static_cast<T>(x);
}

// The member `key` of `object` as a T, or `fallback` when there is none.
template <typename T>
T whole_number_or(const nlohmann::json& object, const std::string& key, T fallback) {
  return object.contains(key) ? whole_number<T>(object.at(key), key) : fallback;
}

}  // namespace tiletune
