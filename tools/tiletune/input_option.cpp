#include "input_option.hpp"

#include <algorithm>

#include "cli.hpp"

namespace tiletune::cli {
namespace {

bool has_input(const KernelFamily& f, const std::string& name) {
  const Argument* a = find_argument(f, name);
  if (a && a->kind == ArgKind::buffer && a->role != BufferRole::output) return true;
  return std::any_of(f.constants.begin(), f.constants.end(),
                     [&](const ConstantSymbol& c) { return c.name == name; });
}

KernelFamily& family_named(std::vector<KernelFamily>& fams, const std::string& name) {
  const auto it =
      std::find_if(fams.begin(), fams.end(), [&](const KernelFamily& f) { return f.name == name; });
  if (it == fams.end()) (void)find_family(fams, name);  // its one-line error
  return *it;
}

}  // namespace

void use_input_files(std::vector<KernelFamily>& fams, const std::string& command, const std::string& family,
                     const std::vector<std::string>& inputs, bool baselines) {
  if (family.empty()) throw UsageError(command + ": --input needs --family");
  KernelFamily& f = family_named(fams, family);
  for (const auto& text : inputs) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      throw UsageError(command + ": --input '" + text + "' must be NAME=PATH");
    const std::string name = text.substr(0, eq), path = text.substr(eq + 1);
    use_input_file(f, name, path);
    if (!baselines) continue;
    for (const auto& b : f.baselines)
      if (KernelFamily& other = family_named(fams, b); has_input(other, name))
        use_input_file(other, name, path);
  }
}

}  // namespace tiletune::cli
