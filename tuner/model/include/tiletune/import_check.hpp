// The plan check of imports and merges: every result a file brings as ok is held to its family's plan for
// the sweep's device and problem, so that nothing the plan prunes is stored as ok.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tiletune/family.hpp"
#include "tiletune/results.hpp"

namespace tiletune {

// What the check could not hold to a plan: sweeps of families not loaded here, and devices whose stored
// properties are not a device's limits. Their results are stored as they came.
struct UncheckedImports {
  std::set<std::string> families, devices;
};

// An ImportPlanCheck over `families` (which must outlive it): an ok result is refused when its configuration
// is not in its family's space here, or when prune_before_compile on the sweep's device (read from its stored
// properties) and problem prunes it; the reason is the plan's. What it cannot check it notes in `unchecked`.
ImportPlanCheck import_plan_check(const std::vector<KernelFamily>& families,
                                  std::shared_ptr<UncheckedImports> unchecked);

// The line a command prints about `unchecked`; empty when everything was checked.
std::string unchecked_imports_line(const UncheckedImports& unchecked);

}  // namespace tiletune
