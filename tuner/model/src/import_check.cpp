#include "tiletune/import_check.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "tiletune/device.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

namespace {

// Why `params` is not a configuration of the family's space as loaded here ("" when it is).
std::string outside_space(const KernelFamily& family, const Params& params) {
  const std::string here = "not in " + family.name + "'s space here: ";
  for (const auto& [name, value] : params) {
    const auto p = std::find_if(family.parameters.begin(), family.parameters.end(),
                                [&name = name](const Parameter& q) { return q.name == name; });
    if (p == family.parameters.end()) return here + "no parameter '" + printable_line(name) + "'";
    if (std::find(p->values.begin(), p->values.end(), value) == p->values.end())
      return here + printable_line(name) + "=" + std::to_string(value) + " is not one of its values";
  }
  for (const Parameter& p : family.parameters)
    if (params.count(p.name) == 0) return here + "no value for " + p.name;
  return "";
}

class PlanCheck {
 public:
  PlanCheck(const std::vector<KernelFamily>& families, std::shared_ptr<UncheckedImports> unchecked)
      : unchecked_(std::move(unchecked)) {
    for (const KernelFamily& f : families) families_.emplace(f.name, &f);
  }

  std::string operator()(const std::string& family, const DeviceRecord& device, const ProblemKey& problem,
                         const Params& params) {
    const auto f = families_.find(family);
    if (f == families_.end()) {
      unchecked_->families.insert(family);
      return "";
    }
    const DeviceLimits* limits = limits_of(device);
    if (limits == nullptr) {
      unchecked_->devices.insert(device.name + " (" + device.uuid + ")");
      return "";
    }
    if (std::string why = outside_space(*f->second, params); !why.empty()) return why;
    try {
      const PlannedConfig planned = prune_before_compile(*f->second, *limits, problem, params);
      return planned.outcome == Outcome::ok ? std::string() : planned.reason;
    } catch (const std::exception& e) {
      return "plan: " + printable_line(e.what());
    }
  }

 private:
  // The device's limits from its stored properties, read once per uuid; nullptr when they are not limits.
  const DeviceLimits* limits_of(const DeviceRecord& device) {
    auto it = devices_.find(device.uuid + '\n' + device.properties_json);
    if (it == devices_.end()) {
      std::optional<DeviceLimits> limits;
      try {
        limits = device_from_json(device.properties_json);
      } catch (const std::exception&) {
      }
      it = devices_.emplace(device.uuid + '\n' + device.properties_json, std::move(limits)).first;
    }
    return it->second ? &*it->second : nullptr;
  }

  std::map<std::string, const KernelFamily*> families_;
  std::map<std::string, std::optional<DeviceLimits>> devices_;
  std::shared_ptr<UncheckedImports> unchecked_;
};

std::string joined(const std::set<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + printable_line(n);
  return text;
}

}  // namespace

ImportPlanCheck import_plan_check(const std::vector<KernelFamily>& families,
                                  std::shared_ptr<UncheckedImports> unchecked) {
  auto check = std::make_shared<PlanCheck>(families, std::move(unchecked));
  return [check](const std::string& family, const DeviceRecord& device, const ProblemKey& problem,
                 const Params& params) { return (*check)(family, device, problem, params); };
}

std::string unchecked_imports_line(const UncheckedImports& unchecked) {
  std::string line;
  if (!unchecked.families.empty())
    line = "families not loaded here (" + joined(unchecked.families) + "; --templates DIR loads them)";
  if (!unchecked.devices.empty())
    line += (line.empty() ? "" : " and ") + std::string("devices stored without their limits (") +
            joined(unchecked.devices) + ")";
  return line.empty() ? line : "not checked against a plan: the ok results of " + line;
}

}  // namespace tiletune
