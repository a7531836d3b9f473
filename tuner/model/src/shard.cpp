#include "tiletune/shard.hpp"

#include <charconv>
#include <stdexcept>

namespace tiletune {

namespace {

// SplitMix64's finaliser: a bijection of 64-bit integers whose low bits depend on every input bit.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

bool read_number(const std::string& text, std::uint64_t& value) {
  if (text.empty() || text.size() > 7) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

bool Shard::contains(std::uint64_t space_index) const {
  return count <= 1 || mix(space_index) % count == index;
}

std::string Shard::text() const {
  return whole() ? std::string() : std::to_string(index) + "/" + std::to_string(count);
}

Shard parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  Shard s;
  const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
  if (slash == std::string::npos || !read_number(text.substr(0, slash), s.index) ||
      !read_number(text.substr(slash + 1), s.count))
    throw std::invalid_argument("--shard must be I/N with whole numbers, like 0/4, got '" + shown + "'");
  if (s.count < 1 || s.count > 1'000'000)
    throw std::invalid_argument("--shard " + shown + ": N must be 1 to 1000000");
  if (s.index >= s.count)
    throw std::invalid_argument("--shard " + shown + ": I must be 0 to " + std::to_string(s.count - 1) +
                                " (shards count from 0)");
  return s;
}

}  // namespace tiletune
