// Pruning a block of the space on every core: what `tiletune plan` and an enumerated sweep both run.
#include <algorithm>
#include <exception>
#include <thread>

#include "tiletune/plan.hpp"

namespace tiletune {

namespace {

// Joins every started thread on the way out, also when a thread cannot be started.
struct JoinAll {
  std::vector<std::thread>& threads;
  ~JoinAll() {
    for (auto& t : threads) t.join();
  }
};

}  // namespace

void prune_each(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
                const std::function<Params(std::uint64_t)>& configuration_at,
                const std::vector<std::uint64_t>& indices, const std::function<void(PlannedConfig&&)>& each) {
  // Pruning is pure: a block of the space at a time, on every core.
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 32);
  constexpr std::size_t kBlock = 1 << 16;
  std::vector<PlannedConfig> block;
  for (std::size_t first = 0; first < indices.size(); first += kBlock) {
    block.assign(std::min(kBlock, indices.size() - first), PlannedConfig{});
    std::vector<std::exception_ptr> failed(threads);
    const auto prune_part = [&](std::size_t part) {
      try {
        for (std::size_t j = part; j < block.size(); j += threads)
          block[j] = prune_before_compile(family, device, problem, configuration_at(indices[first + j]));
      } catch (...) {
        failed[part] = std::current_exception();
      }
    };
    {
      std::vector<std::thread> pool;
      const JoinAll join_all{pool};
      for (std::size_t t = 1; t < std::min(threads, block.size()); ++t) pool.emplace_back(prune_part, t);
      prune_part(0);
    }
    for (const auto& e : failed)
      if (e) std::rethrow_exception(e);
    for (auto& c : block) each(std::move(c));
  }
}

}  // namespace tiletune
