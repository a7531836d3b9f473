// The built-in strategies' factories, which strategy_registry.cpp registers by name (strategy.cpp and
// guided_strategy.cpp define them).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tiletune/strategy.hpp"

namespace tiletune {

std::unique_ptr<Strategy> make_brute_force(const KernelFamily& family, const std::vector<Params>& candidates,
                                           std::size_t budget, std::uint64_t seed);
std::unique_ptr<Strategy> make_random(const KernelFamily& family, const std::vector<Params>& candidates,
                                      std::size_t budget, std::uint64_t seed);
std::unique_ptr<Strategy> make_annealing(const KernelFamily& family, const std::vector<Params>& candidates,
                                         std::size_t budget, std::uint64_t seed);
std::unique_ptr<Strategy> make_table_guided(const KernelFamily& family, const std::vector<Params>& candidates,
                                            std::size_t budget, std::uint64_t seed);

std::vector<std::unique_ptr<Strategy>> make_lazy_random(LazyCandidates& space, std::size_t budget,
                                                        std::uint64_t seed, std::size_t lanes);
std::vector<std::unique_ptr<Strategy>> make_lazy_annealing(LazyCandidates& space, std::size_t budget,
                                                           std::uint64_t seed, std::size_t lanes);
std::vector<std::unique_ptr<Strategy>> make_lazy_guided(LazyCandidates& space, std::size_t budget,
                                                        std::uint64_t seed, std::size_t lanes);

// "random, annealing and guided": the strategies that walk spaces too large to enumerate.
std::string lazy_strategy_list();

}  // namespace tiletune
