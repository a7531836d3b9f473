#include <string>
#include <vector>

#include "tiletune/element_type.hpp"
#include "tiletune/family.hpp"

namespace tiletune {

namespace {

// The family's parameter names, in order.
std::vector<std::string> parameter_names(const KernelFamily& f) {
  std::vector<std::string> names;
  for (const auto& p : f.parameters) names.push_back(p.name);
  return names;
}

// The element size of each buffer argument, in order (0 for the other kinds).
std::vector<std::size_t> buffer_sizes(const KernelFamily& f) {
  std::vector<std::size_t> sizes;
  for (const auto& a : f.arguments) sizes.push_back(a.kind == ArgKind::buffer ? size_of(a.type) : 0);
  return sizes;
}

}  // namespace

bool are_siblings(const KernelFamily& a, const KernelFamily& b) {
  return a.name != b.name && a.source == b.source && a.kernel == b.kernel && a.dims == b.dims &&
         parameter_names(a) == parameter_names(b) && buffer_sizes(a) == buffer_sizes(b);
}

std::vector<std::string> sibling_families(const std::vector<KernelFamily>& families,
                                          const KernelFamily& family) {
  std::vector<std::string> names;
  for (const auto& f : families)
    if (are_siblings(f, family)) names.push_back(f.name);
  return names;
}

}  // namespace tiletune
