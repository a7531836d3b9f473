#include "resume.hpp"

#include <algorithm>

#include "tiletune/sweep.hpp"

namespace tiletune::sweep {

namespace {

// "I/N" from a stored strategy such as "random shard 3/8 on 2 GPUs"; empty for a whole sweep.
std::string shard_of(const std::string& strategy) {
  const auto at = strategy.find(" shard ");
  if (at == std::string::npos) return "";
  const auto from = at + 7;
  return strategy.substr(from, strategy.find(' ', from) - from);
}

bool ran_on_one_of(const SweepInfo& s, const std::vector<DeviceLimits>& devices) {
  return std::any_of(devices.begin(), devices.end(),
                     [&](const DeviceLimits& d) { return d.uuid == s.device.uuid; });
}

// Refuses a sweep that this run cannot continue.
void check_resumable(const SweepInfo& prior, const KernelFamily& family,
                     const std::vector<DeviceLimits>& devices) {
  const std::string id = "sweep " + std::to_string(prior.id);
  const DeviceLimits& device = devices.front();
  if (!ran_on_one_of(prior, devices))
    throw SweepError("cannot resume " + id + ": it ran on " + prior.device.name + " (" + prior.device.uuid +
                     "), " +
                     (devices.size() > 1 ? "not one of these GPUs"
                                         : "this GPU is " + device.name + " (" + device.uuid + ")"));
  if (prior.template_hash != family.template_hash)
    throw SweepError("cannot resume " + id + ": the template of " + family.name + " changed since (hash " +
                     prior.template_hash + ", now " + family.template_hash + ")");
  if (prior.space_hash != family.space_hash())
    throw SweepError("cannot resume " + id + ": the parameter list of " + family.name + " changed since");
}

}  // namespace

ResumePoint find_resume(const Store& store, const KernelFamily& family, const ProblemKey& problem,
                        const std::vector<DeviceLimits>& devices, const Shard& shard, std::int64_t id) {
  ResumePoint point;
  for (const auto& s : store.sweeps(family.name, "", problem))
    if (s.kind == "sweep" && s.status != "done" && shard_of(s.strategy) == shard.text() &&
        (id ? s.id == id : devices.size() == 1 || ran_on_one_of(s, devices))) {
      point.prior = s;
      break;
    }
  if (!point.prior)
    throw SweepError("nothing to resume: no unfinished sweep of " + family.name + " at " + problem.text() +
                     (shard.whole() ? "" : " in shard " + shard.text()));
  check_resumable(*point.prior, family, devices);
  for (auto& k : store.stored_param_keys(point.prior->id)) point.done.insert(std::move(k));
  point.measured = store.measured_results(point.prior->id).size();
  return point;
}

}  // namespace tiletune::sweep

namespace tiletune {

std::optional<SweepInfo> newest_matching_sweep(const Store& store, const KernelFamily& family,
                                               const ProblemKey& problem,
                                               const std::vector<std::string>& uuids, const Shard& shard) {
  for (const auto& s : store.sweeps(family.name, "", problem))
    if (s.kind == "sweep" && sweep::shard_of(s.strategy) == shard.text() &&
        std::find(uuids.begin(), uuids.end(), s.device.uuid) != uuids.end() &&
        s.template_hash == family.template_hash && s.space_hash == family.space_hash())
      return s;
  return std::nullopt;
}

}  // namespace tiletune
