// A deterministic part of a family's space, so that a sweep can be split over machines (one database each,
// merged afterwards with `tiletune merge`): `--shard I/N` takes the configurations whose space index hashes
// to I modulo N. Hashing rather than taking every N-th index keeps the parts alike: the space index is a
// mixed-radix number, so `index % N` would give one shard all the configurations with one value of the last
// parameter.
#pragma once

#include <cstdint>
#include <string>

namespace tiletune {

struct Shard {
  std::uint64_t index = 0;  // 0 .. count - 1
  std::uint64_t count = 1;  // 1: the whole space

  bool whole() const { return count == 1; }
  // Whether the configuration at `space_index` (SpaceIndex order) belongs to this part.
  bool contains(std::uint64_t space_index) const;
  // "2/4"; empty for the whole space.
  std::string text() const;
};

// Reads "I/N" with 0 <= I < N and 1 <= N <= 1,000,000 (a Slurm array task's $SLURM_ARRAY_TASK_ID/N with
// --array=0-(N-1)). Throws std::invalid_argument with a one-line message naming the text.
Shard parse_shard(const std::string& text);

}  // namespace tiletune
