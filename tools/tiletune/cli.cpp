#include "cli.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "tiletune/utf8.hpp"

namespace tiletune::cli {

namespace {

void check_db_option(const std::string& db) {
  if (db.empty()) throw po::error("--db is empty: give a database file");
  if (db == ":memory:")
    throw po::error("--db :memory: is SQLite's in-memory database, which keeps nothing: give a file");
  std::error_code ec;
  if (std::filesystem::is_directory(db, ec))
    throw po::error("--db " + db + " is a directory: give a database file");
}

bool starts_with_sqlite_header(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 16> head{};
  return in.read(head.data(), head.size()) &&
         std::string_view(head.data(), head.size()) == std::string_view("SQLite format 3\0", 16);
}

// Writes all of `text`; 0, or the errno of the failure.
int write_all(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    written += static_cast<std::size_t>(n);
  }
  return 0;
}

// Absolute, with links and dot segments resolved as far as the path exists.
std::filesystem::path resolved(const std::filesystem::path& path) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  if (ec) return path.lexically_normal();
  auto canonical = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : canonical;
}

// resolved() after following a link at the end of the path, dangling ones too (weakly_canonical takes a
// link whose target does not exist yet as a name of its own, but writing through it creates the target).
std::filesystem::path followed(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(p, ec); ++hops) {
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return resolved(p);
}

}  // namespace

void check_output_option(const std::string& output) {
  if (output.empty())
    throw po::error("--output is empty (an unset shell variable?): give a file name, or leave it out");
}

void add_common(po::options_description& desc, Common& c, bool with_profile, bool with_gpu) {
  desc.add_options()("family,f", po::value(&c.family),
                     "kernel family (see 'tiletune plan --help' for the built-in ones)")(
      "size,s", po::value(&c.size),
      "problem size: MxNxK for GEMM, n for conv1d, HxW for conv2d (2^28 allowed)")(
      "arg,a", po::value(&c.args)->composing(),
      "problem argument NAME=VALUE, e.g. mask_width=5 (repeatable)")(
      "db", po::value(&c.db)->default_value(c.db)->notifier(check_db_option), "SQLite database")(
      "templates", po::value(&c.templates)->composing(), "extra folder of kernel families (repeatable)");
  if (with_profile)
    desc.add_options()("device-profile", po::value(&c.device_profile),
                       "plan for a built-in profile (h100, h200, a100, l40s, rtx4090) or a JSON file");
  if (with_gpu) desc.add_options()("gpu", po::value(&c.gpu)->default_value(0), "CUDA device index");
}

bool parse(const std::string& command, const std::string& synopsis, po::options_description& desc,
           const std::vector<std::string>& argv, po::positional_options_description* positional) {
  desc.add_options()("help,h", "show this help");
  po::variables_map vm;
  try {
    auto parser = po::command_line_parser(argv).options(desc);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: tiletune " << command << " [options]\n" << synopsis << "\n\n" << desc << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(command + ": " + e.what() + " (see 'tiletune " + command + " --help')");
  }
  return true;
}

void check_output_path(const std::string& output, const std::string& option, const std::string& db) {
  namespace fs = std::filesystem;
  const auto refuse = [&](const std::string& why) {
    throw UsageError(option + " " + output + " " + why + ": refusing to write over it");
  };
  std::error_code ec;
  if (output.empty()) throw UsageError(option + " is empty: give a file name");
  if (fs::is_directory(output, ec)) throw UsageError(option + " " + output + " is a directory");
  const fs::path target = followed(output);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const fs::path file = db + suffix;
    if (target == resolved(file) || fs::equivalent(output, file, ec) ||
        target == fs::path(resolved(db).string() + suffix))
      refuse(*suffix == '\0' ? "is the database (--db " + db + ")"
                             : "is the database's " + std::string(suffix) + " file (--db " + db + ")");
  }
  // Only a regular file has a header to read: opening a FIFO to read would wait for a writer.
  if (fs::is_regular_file(output, ec) && starts_with_sqlite_header(output)) refuse("is an SQLite database");
}

void write_file_replacing(const std::filesystem::path& path, const std::string& text) {
  namespace fs = std::filesystem;
  const auto fail = [&](int error) {
    return std::runtime_error("cannot write " + path.string() + ": " + std::strerror(error));
  };
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A device or a pipe (/dev/stdout, a FIFO) is written in place: renaming over it would replace it.
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw fail(errno);
    const int error = write_all(fd, text);
    if (::close(fd) != 0 || error != 0) throw fail(error != 0 ? error : EIO);
    return;
  }
  // Through a link, the file it points to is replaced and the link kept.
  const fs::path target = fs::is_symlink(path, ec) ? followed(path) : path;
  std::string temp = target.string() + ".XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) throw fail(errno);
  // mkstemp makes the file private; give it the mode of the file it replaces, or of a new file.
  struct stat existing {};
  mode_t mode = 0;
  if (::stat(target.c_str(), &existing) == 0) {
    mode = existing.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  int error = ::fchmod(fd, mode) == 0 ? write_all(fd, text) : errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temp.c_str(), target.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temp.c_str());
    throw fail(error);
  }
}

std::vector<KernelFamily> families(const Common& c) { return families(c.templates); }

std::vector<KernelFamily> families(const std::vector<std::string>& templates) {
  std::vector<std::filesystem::path> roots = {builtin_templates_dir()};
  for (const auto& t : templates) roots.emplace_back(t);
  return load_families(roots);
}

// The parts between 'x's, empty ones too (getline drops an empty last part, so "10x10x" would read as 10x10).
std::vector<std::string> size_parts(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t x = text.find('x'); x != std::string::npos; x = text.find('x', start)) {
    parts.push_back(text.substr(start, x - start));
    start = x + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

std::vector<std::int64_t> parse_size(const std::string& text) {
  std::string plain;
  bool first = true;
  for (std::string part : size_parts(text)) {
    if (const auto caret = part.find('^'); caret != std::string::npos) {
      try {
        const long long base = std::stoll(part.substr(0, caret)), exp = std::stoll(part.substr(caret + 1));
        if (base < 1 || exp < 0 || exp > 62) throw std::invalid_argument("range");
        long long v = 1;
        for (long long i = 0; i < exp; ++i)
          if (__builtin_mul_overflow(v, base, &v)) throw std::invalid_argument("overflow");
        part = std::to_string(v);
      } catch (const std::exception&) {
        throw UsageError("bad size '" + text + "': '" + part + "' is not a power like 2^28");
      }
    }
    plain += (first ? "" : "x") + part;
    first = false;
  }
  try {
    return parse_size_text(plain);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

std::map<std::string, std::int64_t> parse_args(const std::vector<std::string>& args) {
  std::string joined;
  for (const auto& a : args) joined += (joined.empty() ? "" : ",") + a;
  try {
    return parse_args_text(joined);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

ProblemKey problem_for(const KernelFamily& family, const Common& c) {
  std::string size = c.size;
  if (size.empty()) {
    if (family.default_sizes.empty()) throw UsageError(family.name + " has no default size: give --size");
    size = family.default_sizes.front();
  }
  return family.make_problem(parse_size(size), parse_args(c.args));
}

DeviceLimits device_for_plan(const Common& c, std::string* note) {
  if (!c.device_profile.empty()) {
    DeviceLimits d = load_profile(c.device_profile);
    *note = "planning for the " + d.name + " profile";
    return d;
  }
  std::string why;
  auto present = present_devices(&why);
  for (auto& d : present)
    if (d.ordinal == c.gpu) {
      *note = "planning for GPU " + std::to_string(c.gpu) + ": " + d.name;
      return d;
    }
  DeviceLimits d = load_profile("h100");
  *note = (why.empty() ? "GPU " + std::to_string(c.gpu) + " not found" : why) + "; planning for the " +
          d.name + " profile";
  return d;
}

void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows) {
  // Cells come from stored text (reasons, names): printed with control characters escaped.
  std::vector<std::vector<std::string>> safe;
  for (const auto& r : rows) {
    safe.emplace_back();
    for (const auto& cell : r) safe.back().push_back(printable(cell));
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : safe)
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (std::size_t i = 0; i < header.size(); ++i) {
      const std::string cell = i < r.size() ? r[i] : "";
      s += cell + (i + 1 < header.size() ? std::string(width[i] - cell.size() + 2, ' ') : "");
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  };
  line(header);
  std::vector<std::string> rule;
  for (auto w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& r : safe) line(r);
}

std::string fmt(double value, int precision) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << value;
  return out.str();
}

std::string fmt(const std::optional<double>& value, int precision) {
  return value ? fmt(*value, precision) : "-";
}

}  // namespace tiletune::cli
