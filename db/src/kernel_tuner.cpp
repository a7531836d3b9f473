// Kernel Tuner cache files: read into a tiletune export document (then Store::import_json), and written from
// one stored sweep. The cache format is Kernel Tuner's util.process_cache / store_cache / read_cache.
#include "tiletune/kernel_tuner.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "pruned.hpp"
#include "sqlite.hpp"
#include "store_rows.hpp"
#include "tiletune/build_info.hpp"
#include "tiletune/json_depth.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

namespace {

using nlohmann::json;
using rows::import_fail;
using rows::shown;

// Kernel Tuner's failure names (util.ErrorConfig and its subclasses) and the outcomes they stand for.
struct FailureName {
  const char* name;
  Outcome outcome;
};
constexpr std::array<FailureName, 4> failure_names{{{"InvalidConfig", Outcome::pruned},
                                                    {"CompilationFailedConfig", Outcome::compile_failed},
                                                    {"RuntimeFailedConfig", Outcome::runtime_failed},
                                                    {"ErrorConfig", Outcome::runtime_failed}}};
constexpr const char* failure_list =
    "InvalidConfig, CompilationFailedConfig, RuntimeFailedConfig, ErrorConfig";

const FailureName* failure_named(const json& value) {
  if (!value.is_string()) return nullptr;
  const auto& text = value.get_ref<const std::string&>();
  for (const auto& f : failure_names)
    if (text == f.name) return &f;
  return nullptr;
}

// The failure name a tiletune outcome is written as: what Kernel Tuner would have recorded.
const char* failure_for(Outcome outcome) {
  switch (outcome) {
    case Outcome::pruned:
      return "InvalidConfig";
    case Outcome::compile_failed:
      return "CompilationFailedConfig";
    default:
      return "RuntimeFailedConfig";
  }
}

// A JSON value as a message quotes it: compact, on one line, cut short.
std::string got(const json& value) {
  return shown(value.dump(-1, ' ', false, json::error_handler_t::replace), 60);
}

std::string entry_where(const std::string& key) {
  return "cache[" + shown(json(key).dump(-1, ' ', false, json::error_handler_t::replace), 60) + "]";
}

// Appends `item` to a list written "a, b" (sep ", ") or "a,b".
void append_item(std::string& list, const char* sep, const std::string& item) {
  if (!list.empty()) list += sep;
  list += item;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) append_item(text, ", ", n);
  return text;
}

// FNV-1a, 128 bits, as 32 hex digits: a stable name for content (not cryptographic).
std::string hash128(const std::string& text) {
  __extension__ typedef unsigned __int128 u128;
  u128 h = (static_cast<u128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
  const u128 prime = (static_cast<u128>(0x0000000001000000ULL) << 64) | 0x000000000000013bULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= prime;
  }
  std::array<char, 33> out{};
  std::snprintf(out.data(), out.size(), "%016llx%016llx", static_cast<unsigned long long>(h >> 64),
                static_cast<unsigned long long>(h));
  return std::string(out.data(), 32);
}

// Python's json writes NaN, Infinity and -Infinity for non-finite floats (a metric of a failed run); they are
// not JSON. Outside strings they are read as null.
std::string python_non_finite_as_null(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      out += c;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      const std::string_view w(word);
      if (text.compare(i, w.size(), w) == 0) {
        out += "null";
        i += w.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

// The document, closed as Kernel Tuner closes a cache that was cut short (util.correct_open_cache): a
// trailing comma dropped and "}\n}" added.
json parse_cache(const std::string& raw) {
  if (const std::string why = nul_byte_problem(raw); !why.empty())
    throw StoreError("import: the file " + why);
  std::size_t begin = raw.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  begin = std::min(raw.find_first_not_of(" \t\r\n", begin), raw.size());
  const std::size_t end = raw.find_last_not_of(" \t\r\n");
  if (begin == raw.size() || end == std::string::npos) throw StoreError("import: the file is empty");
  const std::string text = python_non_finite_as_null(raw.substr(begin, end + 1 - begin));
  if (const std::size_t depth = json_depth(text); depth > kMaxJsonDepth)
    throw StoreError("import: the document is nested " + std::to_string(depth) + " levels deep (at most " +
                     std::to_string(kMaxJsonDepth) + ")");
  try {
    return json::parse(text);
  } catch (const json::exception& as_is) {
    std::string closed = text;
    if (closed.back() == ',') closed.pop_back();
    closed += "}\n}";
    try {
      return json::parse(closed);
    } catch (const json::exception&) {
      throw StoreError(sql::one_line(
          std::string("import: not valid JSON, nor a Kernel Tuner cache cut short: ") + as_is.what()));
    }
  }
}

const json* find(const json& object, const std::string& key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A non-negative time in ms, or nullopt when absent or null (Kernel Tuner leaves some timings None).
std::optional<double> optional_time(const json& entry, const std::string& key, const std::string& where) {
  const json* value = find(entry, key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (!value->is_number() || !std::isfinite(value->get<double>()) || value->get<double>() < 0)
    import_fail(where + "." + key, "must be a non-negative time in ms, got " + got(*value));
  return value->get<double>();
}

// Whether t starts "2024-05-01 12:34:56": digits where the shape has 'd', a space or 'T' where it has '_'.
bool datetime_shaped(const std::string& t) {
  constexpr std::string_view shape = "dddd-dd-dd_dd:dd:dd";
  if (t.size() < shape.size()) return false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const char c = t[i];
    const bool fits = shape[i] == 'd'   ? std::isdigit(static_cast<unsigned char>(c)) != 0
                      : shape[i] == '_' ? c == ' ' || c == 'T'
                                        : c == shape[i];
    if (!fits) return false;
  }
  return true;
}

// Whether the month, day, hour, minute and second of a datetime_shaped text are in range.
bool datetime_in_range(const std::string& t) {
  struct Range {
    std::size_t at;
    int low, high;
  };
  constexpr std::array<Range, 5> ranges{{{5, 1, 12}, {8, 1, 31}, {11, 0, 23}, {14, 0, 59}, {17, 0, 60}}};
  for (const Range& r : ranges) {
    const int n = std::stoi(t.substr(r.at, 2));
    if (n < r.low || n > r.high) return false;
  }
  return true;
}

// The fraction of a second at t[i], as three digits of milliseconds ("000" when there is none); `i` moves
// past it. nullopt for a '.' without 1 to 9 digits.
std::optional<std::string> millis_at(const std::string& t, std::size_t& i) {
  if (i >= t.size() || t[i] != '.') return "000";
  const std::size_t start = ++i;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  if (i == start || i - start > 9) return std::nullopt;
  return (t.substr(start, i - start) + "00").substr(0, 3);
}

// Python's str(datetime.now(timezone.utc)), "2024-05-01 12:34:56.789012+00:00" (no fraction when it is zero),
// or ISO-8601 UTC, as tiletune's "2024-05-01T12:34:56.789Z"; nullopt for anything else.
std::optional<std::string> iso_time(const std::string& t) {
  if (!datetime_shaped(t) || !datetime_in_range(t)) return std::nullopt;
  std::size_t i = 19;
  const std::optional<std::string> millis = millis_at(t, i);
  if (!millis) return std::nullopt;
  const std::string zone = t.substr(i);
  if (!zone.empty() && zone != "Z" && zone != "+00:00") return std::nullopt;
  return t.substr(0, 10) + "T" + t.substr(11, 8) + "." + *millis + "Z";
}

// tiletune's "2024-05-01T12:34:56.789Z" as Python writes a UTC datetime; nullopt when it is not that form.
std::optional<std::string> python_time(const std::string& iso) {
  if (!iso_time(iso) || iso.size() != 24 || iso[19] != '.' || iso[23] != 'Z') return std::nullopt;
  return iso.substr(0, 10) + " " + iso.substr(11, 8) + "." + iso.substr(20, 3) + "000+00:00";
}

// (p75 - p25) / median, quartiles interpolated as the measuring worker does.
double spread_of(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  const auto q = [&](double f) {
    const double pos = f * static_cast<double>(t.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, t.size() - 1);
    return t[lo] + (t[hi] - t[lo]) * (pos - static_cast<double>(lo));
  };
  const double median = q(0.5);
  return median > 0 ? (q(0.75) - q(0.25)) / median : 0;
}

// The entry's parameter values in `names` order; its key must list them so.
void read_entry_params(KernelTunerEntry& e, const json& value, const std::vector<std::string>& names,
                       const std::string& where) {
  std::string expected_key;
  for (const auto& name : names) {
    const json* v = find(value, name);
    if (v == nullptr) import_fail(where + "." + shown(name, 60), "is missing");
    if (!v->is_number_integer() ||
        (v->is_number_unsigned() && v->get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()))
      import_fail(where + "." + shown(name, 60), "must be an integer, got " + got(*v));
    e.params.emplace_back(name, v->get<std::int64_t>());
    append_item(expected_key, ",", std::to_string(e.params.back().second));
  }
  if (e.key != expected_key) import_fail(where, "does not match its parameters (" + expected_key + ")");
}

// 1.4 and later: "__error__": "InvalidConfig"; before: the failure name in place of the objective's value.
// nullptr for an entry that did not fail.
const FailureName* entry_failure(const json& value, const std::string& where) {
  if (const json* error = find(value, "__error__")) {
    const FailureName* failure = failure_named(*error);
    if (failure == nullptr)
      import_fail(where + ".__error__", std::string("must be one of Kernel Tuner's failure names (") +
                                            failure_list + "), got " + got(*error));
    return failure;
  }
  for (const auto& [k, v] : value.items())
    if (const FailureName* failure = failure_named(v)) return failure;
  return nullptr;
}

// The outcome a tiletune export wrote beside Kernel Tuner's failure name, so that it comes back as it was.
std::optional<Outcome> tiletune_outcome(const json& value, const std::string& where,
                                        const FailureName* failure) {
  const json* o = find(value, "tiletune_outcome");
  if (o == nullptr) return std::nullopt;
  const std::optional<Outcome> outcome =
      o->is_string() ? outcome_from_string(o->get<std::string>()) : std::nullopt;
  if (!outcome) import_fail(where + ".tiletune_outcome", "is not an outcome name, got " + got(*o));
  if ((*outcome == Outcome::ok) != (failure == nullptr))
    import_fail(where + ".tiletune_outcome",
                failure ? "is ok, but the entry is a Kernel Tuner " + std::string(failure->name)
                        : "is " + std::string(to_string(*outcome)) + ", but the entry is no failure");
  return outcome;
}

// An entry that did not fail has a positive "time".
double entry_time(const json& value, const std::string& where) {
  const json* time = find(value, "time");
  if (time == nullptr) import_fail(where + ".time", "is missing");
  if (!time->is_number())
    import_fail(where + ".time",
                "must be a number or one of Kernel Tuner's failure names, got " + got(*time));
  if (!std::isfinite(time->get<double>()) || time->get<double>() <= 0)
    import_fail(where + ".time", "must be a positive time in ms, got " + got(*time));
  return time->get<double>();
}

// "times": every run's time, none faster than "time".
void read_entry_times(KernelTunerEntry& e, const json& value, const std::string& where) {
  if (const json* times = find(value, "times"); times != nullptr && !times->is_null()) {
    if (!times->is_array())
      import_fail(where + ".times", "must be a list of times in ms, got " + got(*times));
    for (std::size_t i = 0; i < times->size(); ++i) {
      const json& t = (*times)[i];
      if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() <= 0)
        import_fail(where + ".times[" + std::to_string(i) + "]",
                    "must be a positive time in ms, got " + got(t));
      e.times_ms.push_back(t.get<double>());
    }
  }
  if (e.time_ms && !e.times_ms.empty()) {
    const double fastest = *std::min_element(e.times_ms.begin(), e.times_ms.end());
    if (fastest > *e.time_ms)
      import_fail(where + ".times", "has no run as fast as time (fastest " + rows::number_text(fastest) +
                                        " ms, time " + rows::number_text(*e.time_ms) + " ms)");
  }
}

// The compile and measure times, and when it was measured.
void read_entry_timings(KernelTunerEntry& e, const json& value, const std::string& where) {
  e.compile_ms = optional_time(value, "compile_time", where);
  const auto verification = optional_time(value, "verification_time", where);
  const auto benchmark = optional_time(value, "benchmark_time", where);
  if (verification || benchmark) e.measure_ms = verification.value_or(0) + benchmark.value_or(0);
  if (const json* stamp = find(value, "timestamp"); stamp != nullptr && !stamp->is_null()) {
    const auto iso = stamp->is_string() ? iso_time(stamp->get<std::string>()) : std::nullopt;
    if (!iso)
      import_fail(where + ".timestamp",
                  "must be a UTC time like 2024-05-01 12:34:56.789012+00:00, got " + got(*stamp));
    e.measured_at = *iso;
  }
}

KernelTunerEntry read_entry(const std::string& key, const json& value,
                            const std::vector<std::string>& names) {
  const std::string where = entry_where(key);
  if (!value.is_object()) import_fail(where, "must be an object, got " + got(value));
  KernelTunerEntry e;
  e.key = key;
  read_entry_params(e, value, names, where);
  const FailureName* failure = entry_failure(value, where);
  // What a tiletune export adds, so that its outcomes and reasons come back as they were.
  const std::optional<Outcome> outcome = tiletune_outcome(value, where, failure);
  if (const json* r = find(value, "tiletune_reason")) {
    if (!r->is_string()) import_fail(where + ".tiletune_reason", "must be a string, got " + got(*r));
    e.reason = r->get<std::string>();
  }
  if (failure != nullptr) {
    e.outcome = outcome.value_or(failure->outcome);
    if (e.reason.empty()) e.reason = std::string("Kernel Tuner: ") + failure->name;
  } else {
    e.time_ms = entry_time(value, where);
  }
  read_entry_times(e, value, where);
  read_entry_timings(e, value, where);
  return e;
}

std::string text_field(const json& doc, const std::string& key, bool required) {
  const json* value = find(doc, key);
  if (value == nullptr || value->is_null()) {
    if (required) import_fail(key, "is missing: not a Kernel Tuner cache file");
    return "";
  }
  if (!value->is_string()) import_fail(key, "must be a string, got " + got(*value));
  return value->get<std::string>();
}

std::optional<std::vector<std::int64_t>> read_problem_size(const json& doc) {
  const json* size = find(doc, "problem_size");
  // Kernel Tuner writes "callable" for a problem size it computes; --size names the problem then.
  if (size == nullptr || size->is_null() || size->is_string()) return std::nullopt;
  const auto dim = [](const json& v) -> std::optional<std::int64_t> {
    if (!v.is_number_integer()) return std::nullopt;
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max())
      return std::nullopt;
    const auto d = v.get<std::int64_t>();
    return d >= 1 ? std::optional(d) : std::nullopt;
  };
  std::vector<std::int64_t> dims;
  for (const json& v : size->is_array() ? *size : json::array({*size})) {
    const auto d = dim(v);
    if (!d) import_fail("problem_size", "must be a positive integer or a list of them, got " + got(*size));
    dims.push_back(*d);
  }
  if (dims.empty()) import_fail("problem_size", "must be a positive integer or a list of them, got []");
  return dims;
}

// tune_params_keys: the parameter names, in the order an entry's key lists their values.
std::vector<std::string> read_param_keys(const json& doc) {
  const json* keys = find(doc, "tune_params_keys");
  if (keys == nullptr) import_fail("tune_params_keys", "is missing: not a Kernel Tuner cache file");
  if (!keys->is_array() || keys->empty())
    import_fail("tune_params_keys", "must be a non-empty list of parameter names, got " + got(*keys));
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < keys->size(); ++i) {
    const json& k = (*keys)[i];
    const std::string where = "tune_params_keys[" + std::to_string(i) + "]";
    if (!k.is_string() || k.get_ref<const std::string&>().empty())
      import_fail(where, "must be a parameter name, got " + got(k));
    if (!seen.insert(k.get<std::string>()).second) import_fail(where, "repeats " + got(k));
    names.push_back(k.get<std::string>());
  }
  return names;
}

// What a tiletune export writes in its header: the problem's arguments and the device's uuid.
void read_tiletune_header(const json& doc, KernelTunerCache& cache) {
  const json* extra = find(doc, "tiletune");
  if (extra == nullptr || extra->is_null()) return;
  if (!extra->is_object()) import_fail("tiletune", "must be an object, got " + got(*extra));
  if (const json* args = find(*extra, "args"); args != nullptr && !args->is_null()) {
    if (!args->is_string()) import_fail("tiletune.args", "must be a string, got " + got(*args));
    try {
      (void)parse_args_text(args->get<std::string>());
    } catch (const std::invalid_argument& e) {
      import_fail("tiletune.args", e.what());
    }
    cache.problem_args = args->get<std::string>();
  }
  if (const json* uuid = find(*extra, "device_uuid"); uuid != nullptr && !uuid->is_null()) {
    if (!uuid->is_string()) import_fail("tiletune.device_uuid", "must be a string, got " + got(*uuid));
    cache.device_uuid = uuid->get<std::string>();
  }
}

}  // namespace

KernelTunerCache read_kernel_tuner_cache(const std::string& text) {
  const json doc = parse_cache(text);
  if (!doc.is_object()) throw StoreError("import: a Kernel Tuner cache is a JSON object, got " + got(doc));
  KernelTunerCache cache;
  cache.device_name = text_field(doc, "device_name", true);
  if (cache.device_name.empty()) import_fail("device_name", "is empty");
  cache.kernel_name = text_field(doc, "kernel_name", false);
  cache.objective = text_field(doc, "objective", false);
  cache.problem_size = read_problem_size(doc);
  cache.param_keys = read_param_keys(doc);
  if (const json* params = find(doc, "tune_params"); params != nullptr && !params->is_object())
    import_fail("tune_params", "must be an object of NAME: [values], got " + got(*params));
  read_tiletune_header(doc, cache);

  const json* entries = find(doc, "cache");
  if (entries == nullptr) import_fail("cache", "is missing: not a Kernel Tuner cache file");
  if (!entries->is_object())
    import_fail("cache", "must be an object of \"v1,v2,...\": {...}, got " + got(*entries));
  if (entries->empty()) import_fail("cache", "holds no configurations: nothing to import");
  for (const auto& [key, value] : entries->items())
    cache.entries.push_back(read_entry(key, value, cache.param_keys));
  cache.content_hash = hash128(doc.dump(-1, ' ', false, json::error_handler_t::replace));
  return cache;
}

namespace {

// An entry Kernel Tuner measured as ok but the family's plan for the target prunes (a broken constraint, too
// many threads, a grid over the device's limit) is stored as pruned with the plan's reason, never as ok.
KernelTunerEntry checked_against_plan(const KernelTunerEntry& cached, const KernelTunerTarget& target) {
  if (cached.outcome != Outcome::ok || !target.plan_refuses) return cached;
  const std::string why = target.plan_refuses(cached.params);
  if (why.empty()) return cached;
  KernelTunerEntry e;
  e.key = cached.key;
  e.params = cached.params;
  e.outcome = Outcome::pruned;
  e.reason = why + " (Kernel Tuner: ok)";
  e.measured_at = cached.measured_at;
  return e;
}

using FamilyValues = std::map<std::string, const std::vector<std::int64_t>*>;

// The cache's parameters are the family's, every one of them; returns each one's values in the family.
FamilyValues family_values(const KernelTunerCache& cache, const KernelTunerTarget& target) {
  FamilyValues values;
  std::vector<std::string> family_names;
  for (const auto& [name, list] : target.parameters) {
    values[name] = &list;
    family_names.push_back(name);
  }
  for (std::size_t i = 0; i < cache.param_keys.size(); ++i)
    if (!values.count(cache.param_keys[i]))
      import_fail("tune_params_keys[" + std::to_string(i) + "]",
                  "'" + shown(cache.param_keys[i], 60) + "' is not a parameter of " + target.family + " (" +
                      joined(family_names) + ")");
  for (const auto& name : family_names)
    if (std::find(cache.param_keys.begin(), cache.param_keys.end(), name) == cache.param_keys.end())
      import_fail("tune_params_keys", "lacks " + target.family + "'s parameter " + name);
  return values;
}

// An entry's params as the export document writes them; each value must be one of the family's.
json entry_params(const KernelTunerEntry& cached, const FamilyValues& values, const std::string& family) {
  json params = json::object();
  for (const auto& [name, value] : cached.params) {
    const auto& list = *values.at(name);
    if (std::find(list.begin(), list.end(), value) == list.end()) {
      std::string allowed;
      for (const auto v : list) append_item(allowed, ", ", std::to_string(v));
      import_fail(entry_where(cached.key) + "." + name,
                  "= " + std::to_string(value) + " is not one of " + family + "'s values (" + allowed + ")");
    }
    params[name] = value;
  }
  return params;
}

// One result of the export document.
json result_of(const KernelTunerEntry& e, json params, const KernelTunerTarget& target) {
  json r{{"params", std::move(params)},
         {"outcome", to_string(e.outcome)},
         {"reason", e.reason},
         {"repetitions", 0},
         {"times_ms", e.times_ms}};
  if (e.time_ms) {
    r["median_ms"] = *e.time_ms;
    r["repetitions"] = e.times_ms.empty() ? 1 : static_cast<int>(e.times_ms.size());
    if (!e.times_ms.empty()) {
      r["min_ms"] = *std::min_element(e.times_ms.begin(), e.times_ms.end());
      r["spread"] = spread_of(e.times_ms);
    }
    if (target.work && *target.work >= 0) {
      const double metric = *target.work / (*e.time_ms * 1e-3) / 1e9;
      if (std::isfinite(metric)) {
        r["metric"] = metric;
        r["metric_unit"] = target.metric_unit;
      }
    }
  }
  if (e.compile_ms) r["compile_ms"] = *e.compile_ms;
  if (e.measure_ms) r["measure_ms"] = *e.measure_ms;
  if (!e.measured_at.empty()) r["measured_at"] = e.measured_at;
  return r;
}

// The earliest and the latest of the times the entries were measured at; both now when none has one.
std::pair<std::string, std::string> measured_span(const std::vector<KernelTunerEntry>& entries) {
  std::string first, last;
  for (const KernelTunerEntry& e : entries) {
    if (e.measured_at.empty()) continue;
    if (first.empty() || e.measured_at < first) first = e.measured_at;
    if (last.empty() || e.measured_at > last) last = e.measured_at;
  }
  if (first.empty()) first = last = sql::utc_now_iso8601();
  return {first, last};
}

json object_or_empty(const std::string& text) {
  try {
    json j = json::parse(text);
    if (j.is_object()) return j;
  } catch (const json::exception&) {
  }
  return json::object();
}

// The sweep of the export document, its uid hashed from the cache's content and the target.
json sweep_of(const KernelTunerCache& cache, const KernelTunerTarget& target, json results,
              const std::pair<std::string, std::string>& span) {
  const std::string uid =
      hash128(cache.content_hash + '\0' + target.family + '\0' + target.template_hash + '\0' +
              target.device.uuid + '\0' + target.problem.size_text() + '\0' + target.problem.args_text());
  return json{{"uid", uid},
              {"device",
               {{"name", target.device.name},
                {"uuid", target.device.uuid},
                {"arch", target.device.arch},
                {"sm_count", target.device.sm_count},
                {"is_profile", target.device.is_profile},
                {"properties", object_or_empty(target.device.properties_json)}}},
              {"family",
               {{"name", target.family},
                {"template_hash", target.template_hash},
                {"description", object_or_empty(target.description_json)}}},
              {"problem", {{"size", target.problem.size_text()}, {"args", target.problem.args_text()}}},
              {"space_hash", target.space_hash},
              {"kind", "sweep"},
              {"strategy", "kernel_tuner"},
              {"status", "done"},
              {"started_at", span.first},
              {"ended_at", span.second},
              {"tiletune_version", ""},
              {"git_sha", ""},
              {"results", std::move(results)}};
}

}  // namespace

std::string kernel_tuner_import_document(const KernelTunerCache& cache, const KernelTunerTarget& target) {
  const FamilyValues values = family_values(cache, target);
  json results = json::array();
  for (const KernelTunerEntry& cached : cache.entries) {
    json params = entry_params(cached, values, target.family);
    results.push_back(result_of(checked_against_plan(cached, target), std::move(params), target));
  }
  json sweep = sweep_of(cache, target, std::move(results), measured_span(cache.entries));
  const json doc{{"format", "tiletune-export"},
                 {"schema_version", Store::schema_version},
                 {"tiletune", {{"version", TILETUNE_VERSION}, {"git_sha", TILETUNE_GIT_SHA}}},
                 {"exported_at", sql::utc_now_iso8601()},
                 {"sweeps", json::array({std::move(sweep)})}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

using TuneParams = std::map<std::string, std::vector<std::int64_t>>;

[[noreturn]] void export_fail(std::int64_t sweep_id, const std::string& why) {
  throw StoreError("export: sweep " + std::to_string(sweep_id) + " " + why);
}

json stored_description(const Store& store, const SweepInfo& sweep) {
  try {
    return json::parse(store.family_description(sweep.family, sweep.template_hash));
  } catch (const json::exception&) {
    return json::object();
  }
}

// The family as it was swept: its parameters' value lists, else the values the results hold.
TuneParams tune_params_of(const json& description, const std::vector<StoredResult>& results) {
  TuneParams tune_params;
  if (const json* params = description.is_object() ? find(description, "parameters") : nullptr;
      params != nullptr && params->is_object()) {
    for (const auto& [name, spec] : params->items()) {
      auto& list = tune_params[name];
      if (const json* v = spec.is_object() ? find(spec, "values") : nullptr; v != nullptr && v->is_array())
        for (const json& x : *v)
          if (x.is_number_integer()) list.push_back(x.get<std::int64_t>());
    }
    return tune_params;
  }
  for (const auto& r : results)
    for (const auto& [name, value] : r.record.params) tune_params[name].push_back(value);
  for (auto& [name, list] : tune_params) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return tune_params;
}

std::string header_line(const char* key, const json& value) {
  return json(key).dump() + ": " + value.dump(-1, ' ', false, json::error_handler_t::replace) + ",\n";
}

// The header of the cache file, "{" and a line for each field before "cache".
std::string cache_header(const SweepInfo& sweep, const json& description, const TuneParams& tune_params,
                         const std::vector<std::string>& keys, const PrunedCounts& pruned) {
  std::string kernel = sweep.family;
  if (const json* k = description.is_object() ? find(description, "kernel") : nullptr; k && k->is_string())
    kernel = k->get<std::string>();
  const json problem_size =
      sweep.problem.dims.size() == 1 ? json(sweep.problem.dims.front()) : json(sweep.problem.dims);
  std::string out = "{\n";
  out += header_line("device_name", sweep.device.name);
  out += header_line("kernel_name", kernel);
  out += header_line("problem_size", problem_size);
  out += header_line("tune_params_keys", keys);
  out += header_line("tune_params", tune_params);
  out += header_line("objective", "time");
  out += header_line("tiletune", json{{"family", sweep.family},
                                      {"template_hash", sweep.template_hash},
                                      {"size", sweep.problem.size_text()},
                                      {"args", sweep.problem.args_text()},
                                      {"device_uuid", sweep.device.uuid},
                                      {"sweep_uid", sweep.uid},
                                      // What was pruned before compiling, by reason: no cache entries.
                                      {"pruned", rows::pruned_json(pruned)}});
  return out;
}

// A failure as Kernel Tuner names it, with what Kernel Tuner has no name for beside it.
void write_failure(nlohmann::ordered_json& entry, const ResultRecord& r) {
  entry["__error__"] = failure_for(r.outcome);
  // Outcomes Kernel Tuner has no name for (launch_failed, timeout, wrong_result) are kept beside it.
  if (r.outcome != Outcome::pruned && r.outcome != Outcome::compile_failed &&
      r.outcome != Outcome::runtime_failed)
    entry["tiletune_outcome"] = to_string(r.outcome);
  if (!r.reason.empty()) entry["tiletune_reason"] = r.reason;
}

// One line of the cache, "\"16,2\": {...}", its fields in the order Kernel Tuner writes them.
std::string cache_entry(const StoredResult& stored, const std::vector<std::string>& keys,
                        std::int64_t sweep_id) {
  const ResultRecord& r = stored.record;
  nlohmann::ordered_json entry;
  std::string key;
  for (const auto& name : keys) {
    const auto it = r.params.find(name);
    if (it == r.params.end() || r.params.size() != keys.size())
      export_fail(sweep_id,
                  "mixes parameter sets (" + params_to_text(r.params) + "): a Kernel Tuner cache has one");
    entry[name] = it->second;
    append_item(key, ",", std::to_string(it->second));
  }
  if (r.outcome == Outcome::ok) {
    if (!r.median_ms)
      export_fail(sweep_id, "has an ok result without a time (" + params_to_text(r.params) + ")");
    entry["time"] = *r.median_ms;
  } else {
    write_failure(entry, r);
  }
  if (!r.times_ms.empty()) entry["times"] = r.times_ms;
  if (r.metric && r.outcome == Outcome::ok && !r.metric_unit.empty()) entry[r.metric_unit] = *r.metric;
  if (r.compile_ms) entry["compile_time"] = *r.compile_ms;
  if (r.measure_ms) {
    entry["verification_time"] = 0;
    entry["benchmark_time"] = *r.measure_ms;
  }
  if (const auto stamp = python_time(stored.measured_at)) entry["timestamp"] = *stamp;
  return json(key).dump() + ": " + entry.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string export_kernel_tuner(const Store& store, std::int64_t sweep_id) {
  const std::optional<SweepInfo> sweep = store.sweep(sweep_id);
  if (!sweep) export_fail(sweep_id, "is not in the database");
  if (sweep->kind != "sweep")
    export_fail(sweep_id, "is a " + sweep->kind +
                              ": nothing in it was measured, and a Kernel Tuner cache holds measurements");
  const std::vector<StoredResult> results = store.results(sweep_id);
  if (results.empty()) export_fail(sweep_id, "has no results");

  const json description = stored_description(store, *sweep);
  const TuneParams tune_params = tune_params_of(description, results);
  std::vector<std::string> keys;
  for (const auto& [name, list] : tune_params) keys.push_back(name);
  // Laid out as Kernel Tuner writes it, so that Kernel Tuner can go on appending to it: the header, then one
  // entry per line, and the file ends with "}\n}".
  std::string out =
      cache_header(*sweep, description, tune_params, keys, store.pruned_counts(sweep_id)) + "\"cache\": {";
  const char* separator = "\n";
  for (const StoredResult& stored : results) {
    out += separator + cache_entry(stored, keys, sweep_id);
    separator = ",\n";
  }
  return out + "}\n}\n";
}

}  // namespace tiletune
