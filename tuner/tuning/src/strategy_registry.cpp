// The registry of search strategies: one entry each. A new strategy is its own file (a Strategy and its
// factories, declared in strategies.hpp) and one entry here.
#include <stdexcept>

#include "strategies.hpp"
#include "tiletune/strategy.hpp"

namespace tiletune {

const std::vector<StrategyInfo>& strategy_registry() {
  static const std::vector<StrategyInfo> registry = {
      {"brute_force", "every runnable configuration, in space order", false, false, false, make_brute_force,
       nullptr},
      {"random",
       "a seeded random sample, drawn in one shuffled order for any space size (compiling runs ahead)", true,
       false, false, make_random, make_lazy_random},
      {"annealing",
       "simulated annealing over neighbouring configurations (one parameter one value away), one walker per "
       "GPU",
       true, true, false, make_annealing, make_lazy_annealing},
      {"guided",
       "gradient-boosted trees (XGBoost) rank what is left after each batch, starting from stored sweeps of "
       "the family where there are any",
       true, false, true, make_table_guided, make_lazy_guided},
  };
  return registry;
}

const StrategyInfo& find_strategy(const std::string& name) {
  for (const auto& s : strategy_registry())
    if (s.name == name) return s;
  std::string list;
  for (const auto& s : strategy_registry()) list.append(list.empty() ? "" : ", ").append(s.name);
  throw std::invalid_argument("unknown strategy '" + name + "' (" + list + ")");
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : strategy_registry()) names.push_back(s.name);
  return names;
}

std::string strategy_help() {
  std::string help;
  for (const auto& s : strategy_registry()) help.append(s.name).append(": ").append(s.help).append("\n");
  return help;
}

std::string lazy_strategy_list() {
  std::vector<std::string> names;
  for (const auto& s : strategy_registry())
    if (s.samples_lazily) names.push_back(s.name);
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i)
    list.append(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ").append(names[i]);
  return list;
}

}  // namespace tiletune
