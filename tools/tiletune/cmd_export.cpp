#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "tiletune/bundle.hpp"
#include "tiletune/import_check.hpp"
#include "tiletune/kernel_tuner.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/store.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune::cli {

namespace {

// What an export writes from: the database and the options that select what goes out.
struct ExportRequest {
  const Store& store;
  const Common& common;
  std::string device;
  std::int64_t sweep_id = 0;  // 0: not given
};

struct ExportFormat {
  const char* name;
  bool one_sweep;  // writes exactly one sweep, chosen by --sweep or by filters that select one
  std::function<std::string(const ExportRequest&)> write;
  bool takes_sweep = one_sweep;  // --sweep is allowed (it picks what the filters would otherwise)
};

// The one measured sweep an export of a single sweep writes: --sweep, or the filters when they select one.
std::int64_t one_sweep(const ExportRequest& r, const std::string& format) {
  if (r.sweep_id != 0) return r.sweep_id;
  std::optional<ProblemKey> problem;
  if (!r.common.size.empty()) problem = ProblemKey{parse_size(r.common.size), parse_args(r.common.args)};
  std::vector<SweepInfo> matches;
  for (auto& s : r.store.sweeps(r.common.family, r.device, problem))
    if (s.kind == "sweep") matches.push_back(std::move(s));
  if (matches.size() == 1) return matches.front().id;
  if (matches.empty())
    throw std::runtime_error("export: no measured sweep matches --family, --device and --size in " +
                             r.common.db);
  std::string ids;
  for (std::size_t i = 0; i < matches.size() && i < 10; ++i)
    ids += (i ? ", " : "") + std::to_string(matches[i].id);
  throw UsageError("export: --format " + format + " writes one sweep, and " + std::to_string(matches.size()) +
                   " match (ids " + ids + (matches.size() > 10 ? ", ..." : "") +
                   "): pick one with --sweep ID, or narrow --family, --device, --size");
}

const std::vector<ExportFormat>& export_formats() {
  static const std::vector<ExportFormat> formats = {
      {"json", false,
       [](const ExportRequest& r) { return r.store.export_json(r.common.family, r.device) + "\n"; }},
      {"csv", false,
       [](const ExportRequest& r) {
         std::ostringstream text;
         r.store.export_csv(text, r.common.family, r.device);
         return text.str();
       }},
      {"header", false,
       [](const ExportRequest& r) {
         std::ostringstream text;
         r.store.export_header(text, r.common.family, r.device);
         return text.str();
       }},
      {"kernel_tuner", true,
       [](const ExportRequest& r) { return export_kernel_tuner(r.store, one_sweep(r, "kernel_tuner")); }},
      {"t4", false,
       [](const ExportRequest& r) {
         std::ostringstream text;
         std::vector<std::int64_t> ids;
         if (r.sweep_id != 0) ids.push_back(r.sweep_id);
         r.store.export_t4(text, r.common.family, r.device, ids);
         return text.str();
       },
       /*takes_sweep=*/true},
  };
  return formats;
}

// The format of that name; else a UsageError saying `choices` ("--format must be ...").
template <typename Format>
const Format& find_format(const std::vector<Format>& formats, const std::string& name,
                          const std::string& choices) {
  for (const auto& f : formats)
    if (name == f.name) return f;
  throw UsageError(choices);
}

}  // namespace

int cmd_export(const std::vector<std::string>& argv) {
  Common c;
  std::string format = "json", output, device;
  std::int64_t sweep_id = 0;
  po::options_description desc("options");
  add_common(desc, c, false, false);
  desc.add_options()(
      "format", po::value(&format)->default_value(format),
      "json, csv, header (a C++ header of the best configurations), t4 (the T4 results "
      "format, with metadata), kernel_tuner (one sweep as a Kernel Tuner cache file) or bundle "
      "(a folder of the best configurations' CUBINs for the runtime to launch without compiling)")(
      "output,o", po::value(&output)->notifier(check_output_option),
      "file to write (default: standard output); bundle: the folder to write")("device", po::value(&device),
                                                                               "only this device name")(
      "sweep", po::value(&sweep_id),
      "kernel_tuner: the sweep to write (default: the one sweep --family, --device and --size select); t4: "
      "only this sweep (default: every sweep --family and --device select)");
  if (!parse("export",
             "Writes stored results as JSON (for import elsewhere), CSV, a C++ header, T4, a Kernel Tuner "
             "cache, or a bundle of compiled kernels.",
             desc, argv))
    return 0;
  if (format == "bundle") {
    if (output.empty()) throw UsageError("export: --format bundle writes a folder: name it with --output");
    if (sweep_id != 0) throw UsageError("export: --format bundle takes --family and --device, not --sweep");
    const Store store = Store::open(c.db, Store::Mode::read_only);
    const CompileCache cache(CompileCache::default_dir());
    const BundleSummary summary = write_bundle(store, families(c), output, c.family, device, cache);
    for (const auto& line : summary.skipped) std::cerr << "left out: " << line << "\n";
    std::cerr << "wrote " << output << ": " << summary.entries << " configurations, " << summary.cubins
              << " CUBINs (" << summary.compiled << " compiled, the rest from the compile cache)\n";
    return 0;
  }
  const ExportFormat& chosen = find_format(
      export_formats(), format, "export: --format must be json, csv, header, t4, kernel_tuner or bundle");
  if (sweep_id != 0 && !chosen.takes_sweep)
    throw UsageError("export: --sweep picks the sweep of --format kernel_tuner or t4; --format " + format +
                     " takes --family and --device");
  if (!output.empty()) check_output_path(output, "export: --output", c.db);
  const Store store = Store::open(c.db, Store::Mode::read_only);
  const std::string text = chosen.write(ExportRequest{store, c, device, sweep_id});
  if (output.empty()) {
    std::cout << text;
    return 0;
  }
  write_file_replacing(output, text);
  std::cerr << "wrote " << output << "\n";
  return 0;
}

namespace {

// A JSON export starts with '{' (after a byte order mark and white space); anything else is read as CSV.
std::string format_of(const std::string& text) {
  std::size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  i = std::min(text.find_first_not_of(" \t\r\n", i), text.size());
  return i < text.size() && text[i] == '{' ? "json" : "csv";
}

[[noreturn]] void import_error(const std::string& why) { throw StoreError("import: " + why); }

// The device a Kernel Tuner cache was tuned on, which the cache names only: --device-profile; else a stored
// device of that name (the one a tiletune export names by uuid, a GPU before a profile, the newest); else the
// built-in profile of that name.
DeviceRecord device_for_cache(const Store& store, const KernelTunerCache& cache, const Common& c) {
  if (!c.device_profile.empty()) return load_profile(c.device_profile).record();
  const std::vector<SweepInfo> stored = store.sweeps("", cache.device_name);
  if (cache.device_uuid)
    for (const auto& s : stored)
      if (s.device.uuid == *cache.device_uuid) return s.device;
  for (const auto& s : stored)
    if (!s.device.is_profile) return s.device;
  if (!stored.empty()) return stored.front().device;
  const std::vector<std::string> names = profile_names();
  for (const auto& name : names)
    if (const DeviceLimits d = load_profile(name); d.name == cache.device_name) return d.record();
  std::string list;
  for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
  import_error("device_name '" + printable(cache.device_name) +
               "' is no device in the database and no built-in profile (" + list +
               "): pass --device-profile NAME|FILE");
}

ProblemKey problem_for_cache(const KernelFamily& family, const KernelTunerCache& cache, const Common& c) {
  std::vector<std::int64_t> dims;
  if (!c.size.empty()) {
    dims = parse_size(c.size);
  } else {
    std::string family_dims;
    for (const auto& d : family.dims) family_dims += (family_dims.empty() ? "" : ", ") + d;
    if (!cache.problem_size)
      import_error("problem_size is not a list of sizes: give --size (" + family.name + ": " + family_dims +
                   ")");
    dims = *cache.problem_size;
    if (dims.size() != family.dims.size()) {
      std::string size;
      for (const auto d : dims) size += (size.empty() ? "" : ", ") + std::to_string(d);
      import_error("problem_size [" + size + "] has " + std::to_string(dims.size()) + " dimension" +
                   (dims.size() == 1 ? "" : "s") + ", " + family.name + " has " +
                   std::to_string(family.dims.size()) + " (" + family_dims + "): give --size");
    }
  }
  std::map<std::string, std::int64_t> args;
  if (!c.args.empty())
    args = parse_args(c.args);
  else if (cache.problem_args)
    args = parse_args_text(*cache.problem_args);
  try {
    return family.make_problem(dims, args);
  } catch (const FamilyError& e) {
    import_error(e.what());
  }
}

// The limits of the device a cache is imported for, which its stored properties hold; the plan checks the
// cache's ok entries against them.
DeviceLimits limits_of(const DeviceRecord& device) {
  try {
    return device_from_json(device.properties_json);
  } catch (const std::exception&) {
    import_error("device '" + printable(device.name) + "' (" + printable(device.uuid) +
                 "): its stored properties are not a device's limits, so the cache cannot be checked "
                 "against them: pass --device-profile NAME|FILE");
  }
}

// Why the family's plan for this device and problem does not run a configuration ("" when it does).
std::function<std::string(const std::vector<std::pair<std::string, std::int64_t>>&)> plan_check(
    const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem) {
  return [&family, device, problem](const std::vector<std::pair<std::string, std::int64_t>>& values) {
    const Params params(values.begin(), values.end());
    const PlannedConfig c = prune_before_compile(family, device, problem, params);
    return c.outcome == Outcome::ok ? std::string() : c.reason;
  };
}

// A Kernel Tuner cache as one sweep of --family: read, mapped onto the family, device and problem, then
// stored through the JSON importer (all checks, one transaction, a sweep already present skipped).
ImportSummary import_kernel_tuner(Store& store, const std::string& text, const Common& c) {
  if (c.family.empty())
    throw UsageError(
        "import: --format kernel_tuner needs --family NAME, the tiletune family the cache tuned");
  const KernelTunerCache cache = read_kernel_tuner_cache(text);
  const auto fams = families(c);
  const KernelFamily& family = find_family(fams, c.family);
  KernelTunerTarget target;
  target.family = family.name;
  target.template_hash = family.template_hash;
  target.description_json = family.description_json;
  target.space_hash = family.space_hash();
  for (const auto& p : family.parameters) target.parameters.emplace_back(p.name, p.values);
  target.metric_unit = family.metric_unit;
  target.problem = problem_for_cache(family, cache, c);
  target.device = device_for_cache(store, cache, c);
  target.plan_refuses = plan_check(family, limits_of(target.device), target.problem);
  try {
    target.work = static_cast<double>(family.metric_work.eval(family.vars(target.problem, {})));
  } catch (const std::exception&) {
    target.work.reset();  // no metric where the work cannot be computed
  }
  std::cout << "Kernel Tuner cache of " << cache.entries.size() << " configurations: " << family.name
            << " at " << target.problem.text() << " on " << target.device.name << " (" << target.device.uuid
            << ")\n";
  return store.import_json(kernel_tuner_import_document(cache, target));
}

struct ImportFormat {
  const char* name;
  std::function<ImportSummary(Store&, const std::string&, const Common&)> read;
};

constexpr const char* import_choices =
    "import: --format must be json or csv (a tiletune export), or kernel_tuner (a Kernel Tuner cache file)";

const std::vector<ImportFormat>& import_formats() {
  static const std::vector<ImportFormat> formats = {
      {"json", [](Store& s, const std::string& text, const Common&) { return s.import_json(text); }},
      {"csv", [](Store& s, const std::string& text, const Common&) { return s.import_csv(text); }},
      {"kernel_tuner", import_kernel_tuner},
  };
  return formats;
}

void add_import_options(po::options_description& desc, std::string& input, std::string& format, Common& c) {
  desc.add_options()("input,i", po::value(&input),
                     "JSON or CSV file written by 'tiletune export', or a Kernel Tuner cache file")(
      "format", po::value(&format),
      "json, csv or kernel_tuner (default: json or csv by content; a JSON export starts with '{')")(
      "device-profile", po::value(&c.device_profile),
      "kernel_tuner: the device the cache was tuned on, a built-in profile or a JSON file (default: the "
      "stored "
      "device or built-in profile of the cache's device_name)");
}

const char* const kImportHelp =
    "Reads results exported as JSON or CSV into the database, or a Kernel Tuner cache file as one "
    "sweep\n"
    "of --family (--format kernel_tuner; --size and --arg name the problem when its problem_size does\n"
    "not). Sweeps already present are skipped; a malformed file changes nothing.";

// The options checked before the file is opened, in this order.
void check_import_options(const std::string& input, const std::string& format, const Common& c) {
  if (input.empty()) throw UsageError("import: give the JSON or CSV file (or Kernel Tuner cache) to read");
  if (!format.empty()) (void)find_format(import_formats(), format, import_choices);
  if (!c.device_profile.empty() && format != "kernel_tuner")
    throw UsageError("import: --device-profile applies to --format kernel_tuner only");
}

// The file's bytes. A CSV import holds at most CsvImportLimits::max_bytes: reading stops past that, whatever
// the file's size.
std::string read_import_file(const std::string& input, const std::string& format) {
  std::error_code ec;
  if (std::filesystem::is_directory(input, ec))
    throw std::runtime_error("cannot read " + input + ": a directory");
  std::ifstream in(input, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + input);
  const std::size_t csv_limit = CsvImportLimits{}.max_bytes;
  std::string text;
  std::vector<char> buffer(std::size_t{1} << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    text.append(buffer.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > csv_limit && (format.empty() ? format_of(text) : format) == "csv") break;
  }
  if (in.bad()) throw std::runtime_error("cannot read " + input);
  return text;
}

// Stores `text` read as `format`; a file the store refuses is one line naming `input`, and changes nothing. A
// Kernel Tuner cache taken for a JSON export by its content gets a hint.
ImportSummary import_text(Store& store, const std::string& input, const std::string& text,
                          const std::string& format, bool by_content, const Common& c) {
  try {
    return find_format(import_formats(), format, import_choices).read(store, text, c);
  } catch (const StoreError& e) {
    std::string why = e.what();
    if (why.rfind("import: ", 0) == 0) why.erase(0, 8);
    if (by_content && format == "json" && text.find("\"tune_params_keys\"") != std::string::npos)
      why += "; a Kernel Tuner cache? read it with --format kernel_tuner --family NAME";
    throw std::runtime_error(input + ": " + why + " (nothing imported)");
  }
}

}  // namespace

int cmd_import(const std::vector<std::string>& argv) {
  Common c;
  std::string input, format;
  po::options_description desc("options");
  add_common(desc, c, false, false);
  add_import_options(desc, input, format, c);
  po::positional_options_description pos;
  pos.add("input", 1);
  if (!parse("import", kImportHelp, desc, argv, &pos)) return 0;
  check_import_options(input, format, c);
  const std::string text = read_import_file(input, format);
  const bool by_content = format.empty();
  if (by_content) format = format_of(text);
  const std::size_t csv_limit = CsvImportLimits{}.max_bytes;
  if (format == "csv" && text.size() > csv_limit)
    throw std::runtime_error(input + ": more than " + std::to_string(csv_limit) +
                             " bytes, more than a CSV import reads (nothing imported)");
  Store store = Store::open(c.db);
  const std::vector<KernelFamily> known = families(c);
  const auto unchecked = std::make_shared<UncheckedImports>();
  store.check_imports_with(import_plan_check(known, unchecked));
  const ImportSummary s = import_text(store, input, text, format, by_content, c);
  std::cout << "imported " << s.sweeps_added << " sweeps (" << s.results_added << " results), skipped "
            << s.sweeps_skipped << " already present\n";
  if (const std::string line = unchecked_imports_line(*unchecked); !line.empty()) std::cout << line << "\n";
  return 0;
}

}  // namespace tiletune::cli
