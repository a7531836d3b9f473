#include "tiletune/bundle_manifest.hpp"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "tiletune/json_number.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

using nlohmann::json;

namespace {

ResourceUsage usage_from(const json& j) {
  if (!j.is_object()) throw std::runtime_error("usage is not an object");
  ResourceUsage u;
  u.registers = whole_number_or(j, "registers", 0);
  u.static_smem = whole_number_or(j, "static_smem", 0);
  u.stack_bytes = whole_number_or(j, "stack_bytes", 0);
  u.spill_stores = whole_number_or(j, "spill_stores", 0);
  u.spill_loads = whole_number_or(j, "spill_loads", 0);
  u.barriers = whole_number_or(j, "barriers", 0);
  return u;
}

Params params_from(const json& j) {
  if (!j.is_object()) throw std::runtime_error("params is not an object");
  Params params;
  for (const auto& [name, value] : j.items())
    params[name] = whole_number<std::int64_t>(value, "params." + name);
  return params;
}

// A CUBIN's name in the manifest: a plain file name in the bundle's cubins folder, without control characters
// (a line break would also break the one-line errors that name it).
bool safe_cubin_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos)
    return false;
  for (const unsigned char c : name)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace

bool is_bundle(const std::filesystem::path& dir) {
  std::ifstream in(dir / "manifest.json");
  if (!in) return false;
  const json j = json::parse(in, nullptr, false);
  return j.is_object() && j.contains("format") && j["format"].is_string() && j["format"] == kBundleFormat;
}

std::string Bundle::cubin(const BundleEntry& entry) const {
  const auto path = directory / "cubins" / entry.cubin_file;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BundleError("bundle: cannot read " + printable_line(path.string()));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (bytes.str().empty()) throw BundleError("bundle: " + printable_line(path.string()) + " is empty");
  return bytes.str();
}

const BundleEntry* Bundle::find(const std::string& family, const std::string& device_name,
                                const std::string& arch, const ProblemKey& problem, Match* match) const {
  const BundleEntry* best = nullptr;
  std::tuple<int, bool, double> best_rank{3, true, 0.0};  // (tier, differs in shape, distance)
  for (const auto& e : entries) {
    if (e.family != family || e.arch != arch) continue;
    const auto [shape_differs, distance] = problem_distance(e.problem, problem);
    const bool same_device = e.device_name == device_name;
    const int tier = same_device ? (e.problem == problem ? 0 : 1) : 2;
    const std::tuple<int, bool, double> rank{tier, shape_differs, distance};
    if (!best || rank < best_rank) {
      best = &e;
      best_rank = rank;
    }
  }
  if (match)
    *match = !best                         ? Match::not_found
             : std::get<0>(best_rank) == 0 ? Match::exact
             : std::get<0>(best_rank) == 1 ? Match::nearest_size
                                           : Match::same_arch;
  return best;
}

Bundle read_bundle(const std::filesystem::path& directory) {
  const auto path = directory / "manifest.json";
  std::ifstream in(path);
  if (!in)
    throw BundleError("bundle: no " + path.string() + " (write one with tiletune export --format bundle)");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (const std::string why = nul_byte_problem(text); !why.empty())
    throw BundleError("bundle: " + path.string() + " " + why);
  try {
    const json j = json::parse(text);
    if (!j.is_object() || j.value("format", "") != kBundleFormat)
      throw BundleError("bundle: " + path.string() + " is not a " + kBundleFormat + " manifest");
    Bundle b;
    b.directory = directory;
    b.tiletune_version = j.value("tiletune", "");
    b.git_sha = j.value("commit", "");
    b.created_at = j.value("created_at", "");
    for (const auto& e : j.at("entries")) {
      BundleEntry entry;
      entry.family = e.at("family").get<std::string>();
      entry.device_name = e.at("device").get<std::string>();
      entry.arch = e.at("arch").get<std::string>();
      entry.problem.dims = parse_size_text(e.at("size").get<std::string>());
      entry.problem.args = parse_args_text(e.value("args", ""));
      entry.params = params_from(e.at("params"));
      if (e.contains("median_ms") && e["median_ms"].is_number())
        entry.median_ms = e["median_ms"].get<double>();
      if (e.contains("metric") && e["metric"].is_number()) entry.metric = e["metric"].get<double>();
      entry.metric_unit = e.value("metric_unit", "");
      entry.template_hash = e.at("template_hash").get<std::string>();
      entry.sweep_id = whole_number_or(e, "sweep", std::int64_t{0});
      entry.cubin_file = e.at("cubin").get<std::string>();
      entry.symbol = e.at("symbol").get<std::string>();
      if (!safe_cubin_name(entry.cubin_file))
        throw BundleError("bundle: " + path.string() + ": bad CUBIN file name '" +
                          printable_line(entry.cubin_file) + "'");
      entry.usage = usage_from(e.value("usage", json::object()));
      b.entries.push_back(std::move(entry));
    }
    return b;
  } catch (const BundleError&) {
    throw;
  } catch (const std::exception& e) {
    throw BundleError("bundle: " + path.string() + " is malformed: " + first_line(e.what()));
  }
}

}  // namespace tiletune
