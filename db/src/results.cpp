#include "tiletune/results.hpp"

namespace tiletune {

ResultRecord checked_against_plan(const ResultRecord& record, const ImportPlanCheck& check,
                                  const std::string& family, const DeviceRecord& device,
                                  const ProblemKey& problem, const std::string& origin) {
  if (record.outcome != Outcome::ok || !check) return record;
  const std::string why = check(family, device, problem, record.params);
  if (why.empty()) return record;
  ResultRecord pruned;
  pruned.params = record.params;
  pruned.outcome = Outcome::pruned;
  pruned.reason = why + " (" + origin + ")";
  return pruned;
}

}  // namespace tiletune
