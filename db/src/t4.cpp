// Export in T4, the auto-tuning community's results format (the schema Kernel Tuner ships as
// schema/T4/1.0.0/results-schema.json and metadata-schema.json): one document that holds both the results and
// the metadata, so that it validates against each schema.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "pruned.hpp"
#include "store_rows.hpp"
#include "tiletune/build_info.hpp"
#include "tiletune/result_fields.hpp"

namespace tiletune {

namespace {

using nlohmann::json;

constexpr const char* t4_version = "1.0.0";

// T4's invalidity values: why a configuration has no valid objective.
const char* invalidity(Outcome outcome) {
  switch (outcome) {
    case Outcome::ok:
      return "correct";
    case Outcome::pruned:  // a constraint or a device limit (threads, registers, shared memory) ruled it out
      return "constraints";
    case Outcome::compile_failed:
      return "compile";
    case Outcome::launch_failed:
    case Outcome::runtime_failed:
      return "runtime";
    case Outcome::timeout:
      return "timeout";
    case Outcome::wrong_result:
      return "correctness";
  }
  return "runtime";
}

template <typename T>
void add_measurement(json& list, const char* name, const std::optional<T>& value, const std::string& unit) {
  if (!value) return;
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(*value)) return;
  }
  list.push_back(json{{"name", name}, {"value", *value}, {"unit", unit}});
}

json result_json(const StoredResult& stored, const std::string& sweep_uid) {
  const ResultRecord& r = stored.record;
  json configuration = json::object();
  for (const auto& [name, value] : r.params) configuration[name] = value;
  // Times in milliseconds (metadata.timeunit). "compilation" and "benchmark" are the names Kernel Tuner
  // writes beside the schema's own "compilation_time".
  json times = json::object();
  if (r.compile_ms && std::isfinite(*r.compile_ms)) {
    times["compilation_time"] = *r.compile_ms;
    times["compilation"] = *r.compile_ms;
  }
  if (r.measure_ms && std::isfinite(*r.measure_ms)) times["benchmark"] = *r.measure_ms;
  times["runtimes"] = r.times_ms;
  json measurements = json::array();
  for (const ResultField& f : result_fields()) {
    if (!f.t4_name) continue;
    const std::string unit = f.t4_unit ? f.t4_unit : r.metric_unit;
    if (f.type == ResultField::Type::integer)
      add_measurement(measurements, f.t4_name, r.*f.integer, unit);
    else if (f.type == ResultField::Type::real)
      add_measurement(measurements, f.t4_name, r.*f.real, unit);
  }
  json out{{"timestamp", stored.measured_at},
           {"configuration", std::move(configuration)},
           {"times", std::move(times)},
           {"invalidity", invalidity(r.outcome)},
           // 0 only where the output was compared with the reference and found wrong; 1 otherwise (Kernel
           // Tuner writes 1 for every result).
           {"correctness", r.outcome == Outcome::wrong_result ? 0 : 1},
           {"measurements", std::move(measurements)},
           {"objectives", json::array({"time"})},
           // tiletune's own, which T4 allows beside its keys: the sweep, the outcome and why.
           {"sweep", sweep_uid},
           {"outcome", to_string(r.outcome)}};
  if (!r.reason.empty()) out["reason"] = r.reason;
  return out;
}

std::string version_text(const json& properties, const char* key) {
  const auto it = properties.find(key);
  if (it == properties.end() || !it->is_number_integer()) return "";
  const std::int64_t v = it->get<std::int64_t>();  // CUDA's 1000 * major + 10 * minor
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// The sweep's best-so-far curve (tiletune's own key among its sweep's metadata): where its best improved.
json best_so_far_json(const std::vector<BestSoFarPoint>& curve) {
  json out = json::array();
  for (const BestSoFarPoint& p : curve)
    out.push_back(json{{"measurement", p.measurement}, {"seconds", p.seconds}, {"time", p.median_ms}});
  return out;
}

}  // namespace

void Store::export_t4(std::ostream& out, const std::string& family, const std::string& device_name,
                      const std::vector<std::int64_t>& sweep_ids) const {
  const sql::Db& db = impl_->db;
  std::vector<SweepInfo> sweeps;
  for (SweepInfo& s : rows::sweeps_for_export(db, family, device_name))
    if (sweep_ids.empty() || std::find(sweep_ids.begin(), sweep_ids.end(), s.id) != sweep_ids.end())
      sweeps.push_back(std::move(s));
  for (std::int64_t id : sweep_ids)
    if (std::none_of(sweeps.begin(), sweeps.end(), [id](const SweepInfo& s) { return s.id == id; }))
      throw StoreError("export: no sweep " + std::to_string(id) +
                       (family.empty() && device_name.empty() ? "" : " of the chosen family and device"));

  json devices = json::array(), device_query = json::object(), described = json::array();
  std::set<std::string> requirements{std::string("tiletune ") + TILETUNE_VERSION + " (" + TILETUNE_GIT_SHA +
                                     ")"};
  std::set<std::string> seen;
  for (const SweepInfo& s : sweeps) {
    const json properties = rows::object_or_empty(s.device.properties_json);
    if (seen.insert(s.device.uuid).second) {
      devices.push_back(json{{"name", s.device.name},
                             {"uuid", s.device.uuid},
                             {"arch", s.device.arch},
                             {"sm_count", s.device.sm_count},
                             {"is_profile", s.device.is_profile}});
      device_query[s.device.uuid] = properties;
    }
    if (const std::string v = version_text(properties, "driver_version"); !v.empty())
      requirements.insert("CUDA driver " + v);
    if (const std::string v = version_text(properties, "runtime_version"); !v.empty())
      requirements.insert("CUDA runtime " + v);
    described.push_back(json{{"uid", s.uid},
                             {"family", s.family},
                             {"template_hash", s.template_hash},
                             {"device", s.device.name},
                             {"device_uuid", s.device.uuid},
                             {"problem", s.problem.size_text()},
                             {"problem_args", s.problem.args_text()},
                             {"kind", s.kind},
                             {"strategy", s.strategy},
                             {"status", s.status},
                             {"started_at", s.started_at},
                             {"ended_at", s.ended_at.empty() ? json(nullptr) : json(s.ended_at)},
                             {"tiletune_version", s.tiletune_version},
                             {"git_sha", s.git_sha},
                             {"best_so_far", best_so_far_json(best_so_far(s.id))},
                             // What was pruned before compiling, counted by reason: those configurations
                             // have no result entry (T4 does not ask for every invalid one).
                             {"pruned", rows::pruned_json(rows::select_pruned(db, s.id))}});
  }
  const json metadata{
      {"timeunit", "milliseconds"},
      {"generator", json{{"name", "tiletune"}, {"version", TILETUNE_VERSION}, {"git_sha", TILETUNE_GIT_SHA}}},
      {"exported_at", sql::utc_now_iso8601()},
      {"hardware", json{{"hardware_description", std::move(devices)}}},
      {"environment",
       json{{"device_query", std::move(device_query)},
            {"requirements", json(std::vector<std::string>(requirements.begin(), requirements.end()))}}},
      {"sweeps", std::move(described)}};

  // Written result by result: a sweep may hold hundreds of thousands.
  out << "{\n  \"schema_version\": \"" << t4_version
      << "\",\n  \"metadata\": " << metadata.dump(-1, ' ', false, json::error_handler_t::replace) << ",\n"
      << "  \"results\": [";
  bool first = true;
  for (const SweepInfo& s : sweeps)
    for (const StoredResult& r : rows::select_results(db, s.id)) {
      out << (first ? "\n    " : ",\n    ")
          << result_json(r, s.uid).dump(-1, ' ', false, json::error_handler_t::replace);
      first = false;
    }
  out << (first ? "]\n}\n" : "\n  ]\n}\n");
}

}  // namespace tiletune
