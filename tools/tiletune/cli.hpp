// Shared pieces of the tiletune command: option groups, problem parsing, table printing.
#pragma once

#include <boost/program_options.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/records.hpp"

namespace tiletune::cli {

namespace po = boost::program_options;

// A user-facing failure: printed as one line, exit status 1.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Common {
  std::string family;
  std::string size;
  std::vector<std::string> args;
  std::string db = "tiletune.db";
  std::vector<std::string> templates;
  std::string device_profile;
  int gpu = 0;
};

// Adds --family --size --arg --db --templates (and optionally --device-profile, --gpu). --db refuses an empty
// path, ":memory:" and a directory.
void add_common(po::options_description& desc, Common& c, bool with_profile, bool with_gpu);

// The notifier of an --output option: an empty one (what an unset shell variable gives) is refused.
void check_output_option(const std::string& output);
// Throws UsageError when writing `output` (named by `option`, e.g. "--output") would write over the
// database `db` (the file itself, through a link, or its -wal, -shm or -journal file), over any other SQLite
// database, or over a directory.
void check_output_path(const std::string& output, const std::string& option, const std::string& db);
// Writes `text` to a temporary file beside `path` and renames it over `path` once complete, so that a
// failure leaves `path` as it was; through a link, over the file it points to. A device or pipe
// (/dev/stdout) is written in place.
void write_file_replacing(const std::filesystem::path& path, const std::string& text);

// Parses the subcommand's options; prints help and returns false on --help.
bool parse(const std::string& command, const std::string& synopsis, po::options_description& desc,
           const std::vector<std::string>& argv, po::positional_options_description* positional = nullptr);

std::vector<KernelFamily> families(const Common& c);
// The built-in families and those under the extra `templates` folders.
std::vector<KernelFamily> families(const std::vector<std::string>& templates);
// "1000x1000x1000"; each dimension may be written 2^28.
std::vector<std::int64_t> parse_size(const std::string& text);
std::map<std::string, std::int64_t> parse_args(const std::vector<std::string>& args);
// The problem for a family: --size (or the family's first default size) and --arg.
ProblemKey problem_for(const KernelFamily& family, const Common& c);

// The device to plan for: a profile, or the local GPU, or (with none) the H100 profile; `note` says which.
DeviceLimits device_for_plan(const Common& c, std::string* note);

// Fixed-width table with a header row.
void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows);
std::string fmt(double value, int precision);
std::string fmt(const std::optional<double>& value, int precision);

int cmd_devices(const std::vector<std::string>& argv);
int cmd_plan(const std::vector<std::string>& argv);
int cmd_query(const std::vector<std::string>& argv);
int cmd_show(const std::vector<std::string>& argv);
int cmd_export(const std::vector<std::string>& argv);
int cmd_import(const std::vector<std::string>& argv);
int cmd_import_space(const std::vector<std::string>& argv);
int cmd_merge(const std::vector<std::string>& argv);
int cmd_sweep(const std::vector<std::string>& argv);
int cmd_bench(const std::vector<std::string>& argv);
int cmd_report(const std::vector<std::string>& argv);
int cmd_replay(const std::vector<std::string>& argv);

}  // namespace tiletune::cli
