#include "tiletune/bundle.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tiletune/build_info.hpp"
#include "tiletune/device.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

using nlohmann::json;

namespace {

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw BundleError("bundle: cannot write " + path.string());
}

json usage_json(const ResourceUsage& u) {
  return {{"registers", u.registers},       {"static_smem", u.static_smem}, {"stack_bytes", u.stack_bytes},
          {"spill_stores", u.spill_stores}, {"spill_loads", u.spill_loads}, {"barriers", u.barriers}};
}

// A bundle's file names: the family and architecture, then the compile key's first characters.
std::string cubin_name(const std::string& family, const std::string& arch, const std::string& key) {
  std::string safe;
  for (char c : family) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return safe + "." + arch + "." + key.substr(0, 16) + ".cubin";
}

// The families a family needs to load: itself, the one whose folder holds its template, and the ones its
// reference names, transitively.
void needed_families(const std::vector<KernelFamily>& families, const std::string& name,
                     std::set<std::string>& out) {
  if (!out.insert(name).second) return;
  const KernelFamily& f = find_family(families, name);  // loaded together, so references resolve
  if (!f.source_from.empty()) needed_families(families, f.source_from, out);
  if (!f.reference.from.empty()) needed_families(families, f.reference.from, out);
  if (f.reference.kind == Reference::Kind::family && !f.reference.family.empty())
    needed_families(families, f.reference.family, out);
}

}  // namespace

std::optional<StoredResult> best_with_template(const Store& store, const std::string& family,
                                               const std::string& device_name, const ProblemKey& problem,
                                               const std::string& template_hash) {
  std::optional<StoredResult> best;
  for (const auto& s : store.sweeps(family, device_name, problem)) {
    if (s.kind != "sweep" || s.template_hash != template_hash || s.device.name != device_name) continue;
    for (auto& r : store.results(s.id, 1))
      if (r.record.outcome == Outcome::ok && r.record.median_ms &&
          (!best || *r.record.median_ms < *best->record.median_ms))
        best = std::move(r);
  }
  return best;
}

namespace {

// The first thing in an old bundle's folder that no export writes there ("" when none): replacing the
// folder would delete it. A bundle holds manifest.json, CUBIN files in cubins/, and family folders.
std::string foreign_entry(const std::filesystem::path& bundle) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(bundle, ec)) {
    const std::string name = e.path().filename().string();
    const bool dir = e.is_directory(ec) && !e.is_symlink(ec);
    if (name == "manifest.json" && e.is_regular_file(ec) && !e.is_symlink(ec)) continue;
    if (!dir || (name != "cubins" && name != "families")) return name;
    for (const auto& inner : fs::directory_iterator(e.path(), ec)) {
      const std::string file = inner.path().filename().string();
      if (name == "cubins"
              ? inner.path().extension() != ".cubin" || !inner.is_regular_file(ec) || inner.is_symlink(ec)
              : !inner.is_directory(ec) || inner.is_symlink(ec))
        return name + "/" + file;
    }
  }
  return ec ? "(a folder that cannot be listed: " + ec.message() + ")" : "";
}

// The folder a bundle goes to ("out/", "./out" and "out" are one folder), checked: a new folder, an empty
// one, or an old bundle holding nothing that an export does not write.
std::filesystem::path bundle_folder(const std::filesystem::path& directory) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = fs::absolute(directory, ec).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();
  const std::string folder = target.filename().string();
  if (ec || folder.empty() || folder == "." || folder == ".." || target == target.root_path())
    throw BundleError("bundle: " + directory.string() + " cannot be a bundle's folder: name a new folder");
  if (fs::exists(fs::symlink_status(target, ec)) &&
      (!fs::is_directory(target, ec) || (!fs::is_empty(target, ec) && !is_bundle(target))))
    throw BundleError("bundle: " + directory.string() + " exists and is not a bundle: name a new folder");
  if (fs::is_directory(target, ec) && !fs::is_empty(target, ec))
    if (const std::string foreign = foreign_entry(target); !foreign.empty())
      throw BundleError("bundle: " + directory.string() + " holds " + printable_line(foreign) +
                        ", which no export writes there; replacing the bundle would delete it: move it out "
                        "or name a new folder");
  return target;
}

// What an export gathers in its staging folder before the manifest is written.
struct Staging {
  std::filesystem::path dir;
  json entries = json::array();
  std::set<std::string> cubins, families;
};

std::string best_label(const BestConfig& best) {
  return best.family + " on " + best.device_name + " at " +
         (best.args_text.empty() ? best.size_text : best.size_text + " " + best.args_text);
}

// The result to bundle for `best`, with its sweep: the fastest measured on the family as it is now (an
// older template's may be faster). Returns why there is none, or "".
std::string current_result(const Store& store, const BestConfig& best, const KernelFamily& family,
                           std::optional<StoredResult>& chosen, std::optional<SweepInfo>& sweep) {
  chosen = best.result;
  sweep = store.sweep(best.result.sweep_id);
  if (sweep && sweep->template_hash != family.template_hash) {
    chosen = best_with_template(store, best.family, best.device_name, sweep->problem, family.template_hash);
    if (!chosen) return "the family changed since it was tuned (sweep " + std::to_string(sweep->id) + ")";
    sweep = store.sweep(chosen->sweep_id);
  }
  if (!sweep) return "its sweep is not in the database";
  return "";
}

json entry_json(const BestConfig& best, const StoredResult& chosen, const KernelFamily& family,
                const std::string& file, const CompiledKernel& kernel) {
  const auto& r = chosen.record;
  return {{"family", best.family},
          {"device", best.device_name},
          {"arch", best.arch},
          {"size", best.size_text},
          {"args", best.args_text},
          {"params", r.params},
          {"median_ms", r.median_ms ? json(*r.median_ms) : json()},
          {"metric", r.metric ? json(*r.metric) : json()},
          {"metric_unit", r.metric_unit},
          {"template_hash", family.template_hash},
          {"sweep", chosen.sweep_id},
          {"cubin", file},
          {"symbol", kernel.lowered_name.empty() ? family.kernel : kernel.lowered_name},
          {"usage", usage_json(kernel.usage)}};
}

// Stages best's CUBIN (compiled now when the cache lacks it) and its entry, and notes the families it
// needs. Returns why it cannot be bundled, or "" when staged.
std::string stage_entry(const Store& store, const std::vector<KernelFamily>& families, const BestConfig& best,
                        const CompileCache& cache, Staging& staging, BundleSummary& summary) {
  const KernelFamily* family = nullptr;
  for (const auto& f : families)
    if (f.name == best.family) family = &f;
  if (!family) return "the family is not known here";
  std::optional<StoredResult> chosen;
  std::optional<SweepInfo> sweep;
  if (const std::string why = current_result(store, best, *family, chosen, sweep); !why.empty()) return why;
  DeviceLimits device;
  try {
    device = device_from_json(sweep->device.properties_json);
  } catch (const std::exception& e) {
    return "the stored device cannot be read: " + first_line(e.what());
  }
  const CompileJob job = compile_job(*family, device, chosen->record.params);
  const std::string key = cache.key(job);
  bool compiled_now = false;
  const CompileResult compiled = cache.load_or_compile(key, job, &compiled_now);
  summary.compiled += compiled_now;
  if (const auto* error = std::get_if<CompileError>(&compiled))
    return "does not compile: " + first_line(error->log);
  const auto& kernel = std::get<CompiledKernel>(compiled);
  const std::string file = cubin_name(family->name, job.arch, key);
  if (staging.cubins.insert(file).second) write_file(staging.dir / "cubins" / file, kernel.cubin);
  staging.entries.push_back(entry_json(best, *chosen, *family, file, kernel));
  try {
    needed_families(families, family->name, staging.families);
  } catch (const FamilyError& e) {
    throw BundleError("bundle: " + family->name + ": " + first_line(e.what()));
  }
  return "";
}

void copy_families(const std::vector<KernelFamily>& families, const Staging& staging) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(staging.dir / "families", ec);
  for (const auto& name : staging.families) {
    const KernelFamily& f = find_family(families, name);
    fs::copy(f.directory, staging.dir / "families" / name, fs::copy_options::recursive, ec);
    if (ec) throw BundleError("bundle: cannot copy " + f.directory.string() + ": " + ec.message());
  }
}

void write_manifest(const Staging& staging) {
  const json manifest = {{"format", kBundleFormat},
                         {"tiletune", TILETUNE_VERSION},
                         {"commit", TILETUNE_GIT_SHA},
                         {"created_at", utc_now_iso8601()},
                         {"entries", staging.entries}};
  write_file(staging.dir / "manifest.json", manifest.dump(2) + "\n");
}

// Renames the staged bundle into place. An old bundle is moved aside first and removed only once the new
// one is in place, so that a failed export leaves it whole.
void move_into_place(const std::filesystem::path& staging, const std::filesystem::path& target,
                     const std::filesystem::path& old) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool replacing = fs::exists(fs::symlink_status(target, ec));
  if (replacing) {
    fs::rename(target, old, ec);
    if (ec)
      throw BundleError("bundle: cannot move the old bundle aside (" + old.string() + "): " + ec.message());
  }
  fs::rename(staging, target, ec);
  if (ec) {
    const std::string why = ec.message();
    if (replacing) fs::rename(old, target, ec);
    throw BundleError("bundle: cannot move it into " + target.string() + ": " + why);
  }
  if (replacing) fs::remove_all(old, ec);
}

}  // namespace

BundleSummary write_bundle(const Store& store, const std::vector<KernelFamily>& families,
                           const std::filesystem::path& directory, const std::string& family_filter,
                           const std::string& device_filter, const CompileCache& cache) {
  namespace fs = std::filesystem;
  const fs::path target = bundle_folder(directory);
  const std::string folder = target.filename().string();
  // Written beside the target, never inside, and renamed into place.
  const std::string pid = std::to_string(::getpid());
  Staging staging;
  staging.dir = target.parent_path() / (folder + ".tmp." + pid);
  const fs::path old = target.parent_path() / (folder + ".old." + pid);
  std::error_code ec;
  fs::remove_all(staging.dir, ec);
  if (!fs::create_directories(staging.dir / "cubins", ec) || ec)
    throw BundleError("bundle: cannot create " + staging.dir.string() + ": " + ec.message());
  BundleSummary summary;
  try {
    for (const auto& best : store.best_per_problem(family_filter, device_filter))
      if (const std::string why = stage_entry(store, families, best, cache, staging, summary); !why.empty())
        summary.skipped.push_back(best_label(best) + ": " + why);
    if (staging.entries.empty())
      throw BundleError("bundle: nothing to write: no ok result in the database matches" +
                        (summary.skipped.empty() ? std::string()
                                                 : " and can be bundled (" + summary.skipped.front() + ")"));
    copy_families(families, staging);
    write_manifest(staging);
    summary.entries = static_cast<int>(staging.entries.size());
    summary.cubins = static_cast<int>(staging.cubins.size());
    move_into_place(staging.dir, target, old);
  } catch (...) {
    fs::remove_all(staging.dir, ec);
    throw;
  }
  return summary;
}

}  // namespace tiletune
