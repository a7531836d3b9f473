// Export (JSON, C++ header) and import (JSON) of what the store holds; csv.cpp does CSV.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "pruned.hpp"
#include "schema.hpp"
#include "store_rows.hpp"
#include "tiletune/build_info.hpp"
#include "tiletune/json_depth.hpp"
#include "tiletune/result_fields.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

namespace {

using nlohmann::json;

using rows::ImportedResult;
using rows::ImportedSweep;
using rows::number_text;

constexpr const char* export_format = "tiletune-export";

template <typename T>
json optional_json(const std::optional<T>& value) {
  if (!value) return nullptr;
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(*value)) return nullptr;
  }
  return *value;
}

template <typename T>
json json_of(const std::optional<T>& value) {
  return optional_json(value);
}
json json_of(const std::string& value) { return value; }

json result_to_json(const StoredResult& stored) {
  const ResultRecord& r = stored.record;
  json params = json::object();
  for (const auto& [name, value] : r.params) params[name] = value;
  json out{{"params", params},       {"outcome", to_string(r.outcome)},
           {"reason", r.reason},     {"repetitions", r.repetitions},
           {"times_ms", r.times_ms}, {"measured_at", stored.measured_at}};
  for (const ResultField& f : result_fields())
    visit_field(f, r, [&](const auto& value) { out[f.name] = json_of(value); });
  return out;
}

// ---- import: everything is read and checked into rows::ImportedSweep before the database is touched ----

// Reads one JSON object; every complaint names the place in the document ("sweeps[2].device.uuid").
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) fail(where_, "must be an object");
  }

  [[noreturn]] static void fail(const std::string& where, const std::string& why) {
    rows::import_fail(where, why);
  }

  std::string at(const std::string& key) const { return where_ + "." + key; }
  rows::Where where() const {
    return [this](const std::string& key) { return at(key); };
  }

  const json* find(const std::string& key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  const json& need(const std::string& key) const {
    const json* value = find(key);
    if (value == nullptr) fail(at(key), "is missing");
    return *value;
  }

  std::string string(const std::string& key, bool required, const std::string& fallback = "") const {
    const json* value = required ? &need(key) : find(key);
    if (value == nullptr) return fallback;
    if (!value->is_string()) fail(at(key), "must be a string");
    return value->get<std::string>();
  }

  std::int64_t integer(const std::string& key, std::int64_t fallback) const {
    const json* value = find(key);
    if (value == nullptr) return fallback;
    if (!value->is_number_integer() ||
        (value->is_number_unsigned() &&
         value->get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()))
      fail(at(key), "must be an integer");
    return value->get<std::int64_t>();
  }

  std::optional<int> optional_int(const std::string& key) const {
    const json* value = find(key);
    if (value == nullptr) return std::nullopt;
    const std::int64_t v = integer(key, 0);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      fail(at(key), "is out of range");
    return static_cast<int>(v);
  }

  // A result field's value (see result_fields()); an absent key reads as empty.
  void read(const std::string& key, std::optional<int>& value) const { value = optional_int(key); }
  void read(const std::string& key, std::optional<double>& value) const { value = optional_double(key); }
  void read(const std::string& key, std::string& value) const { value = string(key, false); }

  std::optional<double> optional_double(const std::string& key) const {
    const json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number()) fail(at(key), "must be a number or null");
    return value->get<double>();
  }

  // An array of numbers; absent means empty.
  std::vector<double> numbers(const std::string& key) const {
    const json* value = find(key);
    std::vector<double> out;
    if (value == nullptr) return out;
    if (!value->is_array()) fail(at(key), "must be an array of numbers");
    out.reserve(value->size());
    for (const json& v : *value) {
      if (!v.is_number()) fail(at(key) + "[" + std::to_string(out.size()) + "]", "must be a number");
      out.push_back(v.get<double>());
    }
    return out;
  }

  bool boolean(const std::string& key) const {
    const json* value = find(key);
    if (value == nullptr) return false;
    if (!value->is_boolean()) fail(at(key), "must be true or false");
    return value->get<bool>();
  }

  // A nested JSON object kept as text; absent means "{}".
  std::string object_text(const std::string& key) const {
    const json* value = find(key);
    if (value == nullptr) return "{}";
    if (!value->is_object()) fail(at(key), "must be an object");
    return value->dump();
  }

 private:
  const json& object_;
  std::string where_;
};

ImportedResult read_result(const json& value, const std::string& where, const std::string& started_at,
                           bool measured) {
  const Fields f(value, where);
  ImportedResult imported;
  ResultRecord& r = imported.record;
  const json& params = f.need("params");
  if (!params.is_object()) Fields::fail(f.at("params"), "must be an object of NAME: integer");
  for (const auto& [name, param] : params.items()) {
    if (!param.is_number_integer() ||
        (param.is_number_unsigned() && param.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()))
      Fields::fail(f.at("params") + "." + name, "must be an integer, got " + param.dump());
    r.params[name] = param.get<std::int64_t>();
  }
  try {
    (void)params_to_text(r.params);
  } catch (const std::invalid_argument& e) {
    Fields::fail(f.at("params"), e.what());
  }
  const std::string outcome = f.string("outcome", true);
  const auto parsed = outcome_from_string(outcome);
  if (!parsed) Fields::fail(f.at("outcome"), "'" + outcome + "' is not an outcome name");
  r.outcome = *parsed;
  r.reason = f.string("reason", false);
  const std::int64_t repetitions = f.integer("repetitions", 0);
  if (repetitions < 0 || repetitions > std::numeric_limits<int>::max())
    Fields::fail(f.at("repetitions"), "is out of range");
  r.repetitions = static_cast<int>(repetitions);
  for (const ResultField& field : result_fields())
    visit_field(field, r, [&](auto& value) { f.read(field.name, value); });
  r.times_ms = f.numbers("times_ms");
  imported.measured_at = f.string("measured_at", false, started_at);
  rows::check_measurement(r, measured, f.where());
  return imported;
}

ImportedSweep read_sweep(const json& value, const std::string& where) {
  const Fields f(value, where);
  ImportedSweep s;
  s.uid = f.string("uid", true);

  const Fields device(f.need("device"), f.at("device"));
  s.device.name = device.string("name", true);
  s.device.uuid = device.string("uuid", true);
  s.device.arch = device.string("arch", true);
  (void)device.need("sm_count");
  const std::int64_t sm_count = device.integer("sm_count", 0);
  if (sm_count < 1 || sm_count > std::numeric_limits<int>::max())
    Fields::fail(device.at("sm_count"), "must be a positive integer, got " + std::to_string(sm_count));
  s.device.sm_count = static_cast<int>(sm_count);
  s.device.is_profile = device.boolean("is_profile");
  s.device.properties_json = device.object_text("properties");

  const Fields family(f.need("family"), f.at("family"));
  s.family = family.string("name", true);
  s.template_hash = family.string("template_hash", true);
  s.description_json = family.object_text("description");

  const Fields problem(f.need("problem"), f.at("problem"));
  try {
    s.problem.dims = parse_size_text(problem.string("size", true));
    s.problem.args = parse_args_text(problem.string("args", false));
  } catch (const std::invalid_argument& e) {
    Fields::fail(f.at("problem"), e.what());
  }

  s.space_hash = f.string("space_hash", false);
  s.kind = f.string("kind", false, "sweep");
  s.strategy = f.string("strategy", false);
  s.status = f.string("status", false, "done");
  s.started_at = f.string("started_at", true);
  if (f.find("ended_at") != nullptr) s.ended_at = f.string("ended_at", false);
  s.tiletune_version = f.string("tiletune_version", false);
  s.git_sha = f.string("git_sha", false);
  rows::check_sweep(s, f.where());

  const json& results = f.need("results");
  if (!results.is_array()) Fields::fail(f.at("results"), "must be an array");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string at = f.at("results") + "[" + std::to_string(i) + "]";
    s.results.push_back(read_result(results[i], at, s.started_at, s.kind == "sweep"));
    if (!seen.insert(params_to_text(s.results.back().record.params)).second)
      Fields::fail(at, "repeats the params of an earlier result");
  }
  // Exports before schema version 4 have none: their pruned configurations are results.
  if (const json* pruned = f.find("pruned")) {
    try {
      s.pruned = rows::pruned_from_json(*pruned);
    } catch (const std::invalid_argument& e) {
      Fields::fail(f.at("pruned"), e.what());
    }
  }
  return s;
}

// An export nests a family description (itself at most kMaxJsonDepth deep) four levels down.
constexpr std::size_t max_import_depth = kMaxJsonDepth + 8;

std::vector<ImportedSweep> read_document(const std::string& text) {
  if (const std::string why = nul_byte_problem(text); !why.empty())
    throw StoreError("import: the document " + why);
  // Deeper documents would make the parser's and printer's recursion overflow the stack.
  if (const std::size_t depth = json_depth(text); depth > max_import_depth)
    throw StoreError("import: the document is nested " + std::to_string(depth) + " levels deep (at most " +
                     std::to_string(max_import_depth) + ")");
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw StoreError(sql::one_line(std::string("import: not valid JSON: ") + e.what()));
  }
  if (!doc.is_object()) throw StoreError("import: the document must be a JSON object");
  const Fields top(doc, "document");
  const std::string format = top.string("format", true);
  if (format != export_format)
    throw StoreError("import: format is '" + format + "', expected '" + export_format + "'");
  const std::int64_t version = top.integer("schema_version", -1);
  if (version > Store::schema_version)
    throw StoreError("import: schema version " + std::to_string(version) +
                     " is newer than this tiletune (knows " + std::to_string(Store::schema_version) + ")");
  if (version < 1) throw StoreError("import: schema_version is missing or not a positive integer");
  const json& sweeps = top.need("sweeps");
  if (!sweeps.is_array()) throw StoreError("import: sweeps must be an array");
  std::vector<ImportedSweep> imported;
  std::map<std::string, std::size_t> first_of_uid;
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    const std::string where = "sweeps[" + std::to_string(i) + "]";
    imported.push_back(read_sweep(sweeps[i], where));
    const auto [it, added] = first_of_uid.emplace(imported.back().uid, i);
    if (!added) Fields::fail(where + ".uid", "repeats sweeps[" + std::to_string(it->second) + "].uid");
  }
  return imported;
}

// ---- C++ text ----

// A C++ string literal; octal escapes (at most three digits) cannot swallow the characters after them.
std::string cpp_string(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      std::array<char, 6> octal{};
      std::snprintf(octal.data(), octal.size(), "\\%03o", c);
      out += octal.data();
    }
  }
  return out + '"';
}

std::string cpp_double(const std::optional<double>& value) {
  if (!value || !std::isfinite(*value)) return "0.0";
  std::string text = number_text(*value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string cpp_comment(const std::string& text) {
  // A backslash at the end of a // comment would continue it onto the next line.
  std::string out = sql::one_line(text);
  std::replace(out.begin(), out.end(), '\\', '/');
  for (std::size_t pos = 0; (pos = out.find("*/", pos)) != std::string::npos;) out.replace(pos, 2, "* /");
  return out;
}

}  // namespace

std::string Store::export_json(const std::string& family, const std::string& device_name) const {
  const sql::Db& db = impl_->db;
  json sweeps = json::array();
  std::map<std::pair<std::string, std::string>, json> descriptions;
  for (const SweepInfo& s : rows::sweeps_for_export(db, family, device_name)) {
    auto key = std::make_pair(s.family, s.template_hash);
    if (!descriptions.count(key))
      descriptions[key] = rows::object_or_empty(rows::family_description(db, s.family, s.template_hash));
    json results = json::array();
    for (const StoredResult& r : rows::select_results(db, s.id)) results.push_back(result_to_json(r));
    sweeps.push_back(json{
        {"uid", s.uid},
        {"device", json{{"name", s.device.name},
                        {"uuid", s.device.uuid},
                        {"arch", s.device.arch},
                        {"sm_count", s.device.sm_count},
                        {"is_profile", s.device.is_profile},
                        {"properties", rows::object_or_empty(s.device.properties_json)}}},
        {"family",
         json{{"name", s.family}, {"template_hash", s.template_hash}, {"description", descriptions[key]}}},
        {"problem", json{{"size", s.problem.size_text()}, {"args", s.problem.args_text()}}},
        {"space_hash", s.space_hash},
        {"kind", s.kind},
        {"strategy", s.strategy},
        {"status", s.status},
        {"started_at", s.started_at},
        {"ended_at", s.ended_at.empty() ? json(nullptr) : json(s.ended_at)},
        {"tiletune_version", s.tiletune_version},
        {"git_sha", s.git_sha},
        {"results", std::move(results)},
        {"pruned", rows::pruned_json(rows::select_pruned(db, s.id))},
    });
  }
  const json doc{{"format", export_format},
                 {"schema_version", schema_version},
                 {"tiletune", json{{"version", TILETUNE_VERSION}, {"git_sha", TILETUNE_GIT_SHA}}},
                 {"exported_at", sql::utc_now_iso8601()},
                 {"sweeps", std::move(sweeps)}};
  return doc.dump(2) + "\n";
}

ImportSummary Store::import_json(const std::string& text) {
  const std::vector<ImportedSweep> sweeps = read_document(text);
  return rows::write_imported(
      impl_->db, sweeps,
      [](std::size_t i, const std::string& part) {
        return "sweeps[" + std::to_string(i) + "]" + (part.empty() ? "" : "." + part);
      },
      impl_->import_check);
}

void Store::check_imports_with(ImportPlanCheck check) { impl_->import_check = std::move(check); }

void Store::export_header(std::ostream& out, const std::string& family,
                          const std::string& device_name) const {
  const auto best = rows::select_best_per_problem(impl_->db, family, device_name);
  out << "// Generated by tiletune " << TILETUNE_VERSION << " (git " << TILETUNE_GIT_SHA << ") at "
      << sql::utc_now_iso8601() << ".\n"
      << "// The fastest ok configuration of each (family, device, problem) in the database; do not edit.\n"
      << "#pragma once\n\n"
      << "#include <array>\n#include <cstddef>\n#include <cstdint>\n#include <string_view>\n\n"
      << "namespace tiletune_tuned {\n\n"
      << "struct Param {\n  const char* name;\n  std::int64_t value;\n};\n\n"
      << "struct Config {\n  const char* family;\n  const char* device;  // as the driver names it\n"
      << "  const char* arch;\n  const char* size;    // e.g. \"1000x1000x1000\"\n"
      << "  const char* args;    // e.g. \"mask_width=5\", \"\" when none\n  double median_ms;\n"
      << "  const Param* params;\n  std::size_t param_count;\n};\n\n";
  for (std::size_t i = 0; i < best.size(); ++i) {
    const Params& params = best[i].result.record.params;
    if (params.empty()) continue;
    out << "inline constexpr std::array<Param, " << params.size() << "> params_" << i << "{{";
    const char* separator = "";
    for (const auto& [name, value] : params) {
      // INT64_MIN has no literal of its own; every other value prints as one.
      out << separator << "{" << cpp_string(name) << ", "
          << (value == std::numeric_limits<std::int64_t>::min() ? "INT64_MIN" : std::to_string(value) + "LL")
          << "}";
      separator = ", ";
    }
    out << "}};\n";
  }
  out << "\ninline constexpr std::array<Config, " << best.size() << "> configs{{\n";
  for (std::size_t i = 0; i < best.size(); ++i) {
    const auto& row = best[i];
    const bool empty = row.result.record.params.empty();
    out << "    // " << cpp_comment(row.family + " on " + row.device_name + " for " + row.size_text) << "\n"
        << "    {" << cpp_string(row.family) << ", " << cpp_string(row.device_name) << ", "
        << cpp_string(row.arch) << ", " << cpp_string(row.size_text) << ", " << cpp_string(row.args_text)
        << ", " << cpp_double(row.result.record.median_ms) << ", "
        << (empty ? std::string("nullptr, 0")
                  : "params_" + std::to_string(i) + ".data(), params_" + std::to_string(i) + ".size()")
        << "},\n";
  }
  out << "}};\n\n"
      << "// The tuned configuration for (family, device, size, args), or nullptr when there is none.\n"
      << "constexpr const Config* find(std::string_view family, std::string_view device, std::string_view "
         "size,\n"
      << "                             std::string_view args = \"\") {\n"
      << "  for (const Config& config : configs)\n"
      << "    if (family == config.family && device == config.device && size == config.size && args == "
         "config.args)\n"
      << "      return &config;\n"
      << "  return nullptr;\n}\n\n"
      << "}  // namespace tiletune_tuned\n";
  if (!out) throw StoreError("export_header: writing the output failed");
}

}  // namespace tiletune
