// The small CSV form of a replay space that bench/spaces holds.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tiletune/replay.hpp"

namespace tiletune {

namespace {

constexpr const char* kMagic = "# tiletune replay space: ";
constexpr const char* kFamily = "# family: ";
constexpr const char* kProblem = "# problem: ";  // optional: a file written before it came names it only
const std::vector<std::string> kColumns = {"outcome", "median_ms", "compile_ms", "measure_ms"};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// The problem a space's name holds after its family, for a file without a problem line ("gemm_regtile
// 4096x4096x4096 NVIDIA H100 ...", or with args "conv2d_tiled 8192x8192 boundary=0,mask_width=15 ...");
// nullopt where it holds none.
std::optional<ProblemKey> problem_in_name(const std::string& name, const std::string& family) {
  if (name.rfind(family + " ", 0) != 0) return std::nullopt;
  std::istringstream words(name.substr(family.size() + 1));
  std::string size, args;
  words >> size >> args;
  try {
    return parse_problem_text(args.find('=') == std::string::npos ? size : size + " " + args);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// Reads one file, remembering where it is, so that every refusal names the file, the line and the field.
class SpaceReader {
 public:
  explicit SpaceReader(const std::filesystem::path& path) : path_(path), in_(path) {
    if (!in_) fail("cannot be read");
  }

  ReplaySpace read() {
    ReplaySpace s;
    s.name = after(kMagic, "the first line must start with '# tiletune replay space: '");
    s.family = after(kFamily, "the second line must start with '# family: '");
    next_header_line();
    if (line_.rfind(kProblem, 0) == 0) {
      s.problem = problem(line_.substr(std::char_traits<char>::length(kProblem)));
      next_header_line();
    } else {
      s.problem = problem_in_name(s.name, s.family);
    }
    header(s);
    while (next_line())
      if (!line_.empty()) s.points.push_back(row(split(line_)));
    if (s.points.empty()) fail("holds no configurations");
    if (!s.best_ms()) fail("holds no ok configuration");
    return s;
  }

 private:
  [[noreturn]] void fail(const std::string& what, const std::string& field = "") const {
    throw std::invalid_argument(path_.string() + (line_no_ ? ": line " + std::to_string(line_no_) : "") +
                                (field.empty() ? "" : ", field " + field) + ": " + what);
  }
  bool next_line() {
    if (!std::getline(in_, line_)) return false;
    ++line_no_;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    return true;
  }
  void next_header_line() {
    if (!next_line()) fail("the header line is missing");
  }
  std::string after(const std::string& prefix, const std::string& what) {
    if (!next_line() || line_.rfind(prefix, 0) != 0) fail(what);
    return line_.substr(prefix.size());
  }
  ProblemKey problem(const std::string& text) const {
    try {
      return parse_problem_text(text);
    } catch (const std::invalid_argument& e) {
      fail(e.what(), "problem");
    }
  }
  // The header, in line_.
  void header(ReplaySpace& s) {
    names_ = split(line_);
    const auto at = std::find(names_.begin(), names_.end(), kColumns.front());
    if (at == names_.end() || static_cast<std::size_t>(names_.end() - at) < kColumns.size())
      fail("the header must name the parameters, then outcome, median_ms, compile_ms, measure_ms");
    params_ = static_cast<std::size_t>(at - names_.begin());
    for (std::size_t j = 0; j < kColumns.size(); ++j)
      if (names_[params_ + j] != kColumns[j]) fail("expected " + kColumns[j], names_[params_ + j]);
    s.plan_names.assign(at + static_cast<std::ptrdiff_t>(kColumns.size()), names_.end());
  }
  double number(const std::string& text, std::size_t column) const {
    std::size_t used = 0;
    double v = NAN;
    try {
      v = std::stod(text, &used);
    } catch (const std::exception&) {
    }
    if (used != text.size() || !std::isfinite(v)) fail("not a number: '" + text + "'", names_[column]);
    return v;
  }
  ReplayPoint row(const std::vector<std::string>& f) const {
    if (f.size() != names_.size())
      fail(std::to_string(f.size()) + " fields, the header has " + std::to_string(names_.size()));
    ReplayPoint p;
    for (std::size_t j = 0; j < params_; ++j) {
      const double v = number(f[j], j);
      if (v != std::floor(v)) fail("a parameter value must be an integer", names_[j]);
      p.params[names_[j]] = static_cast<std::int64_t>(v);
    }
    const std::string& outcome = f[params_];
    if (outcome != "ok" && outcome != "compile_failed" && outcome != "failed")
      fail("must be ok, compile_failed or failed, got '" + outcome + "'", "outcome");
    p.compiled = outcome != "compile_failed";
    if (outcome == "ok") p.median_ms = number(f[params_ + 1], params_ + 1);
    if (p.median_ms && *p.median_ms <= 0) fail("must be positive", "median_ms");
    p.compile_ms = number(f[params_ + 2], params_ + 2);
    p.measure_ms = number(f[params_ + 3], params_ + 3);
    if (p.compile_ms < 0 || p.measure_ms < 0) fail("a time must not be negative", "compile_ms/measure_ms");
    for (std::size_t j = params_ + kColumns.size(); j < f.size(); ++j)
      p.plan.push_back(static_cast<float>(number(f[j], j)));
    return p;
  }

  std::filesystem::path path_;
  std::ifstream in_;
  std::string line_;
  std::size_t line_no_ = 0, params_ = 0;
  std::vector<std::string> names_;
};

}  // namespace

void write_replay_space(const ReplaySpace& space, std::ostream& out) {
  out << kMagic << space.name << "\n" << kFamily << space.family << "\n";
  if (space.problem) out << kProblem << space.problem->text() << "\n";
  const auto& first = space.points.front().params;
  for (const auto& [name, v] : first) out << name << ",";
  out << "outcome,median_ms,compile_ms,measure_ms";
  for (const auto& n : space.plan_names) out << "," << n;
  out << "\n";
  for (const auto& p : space.points) {
    for (const auto& [name, v] : p.params) out << v << ",";
    out << (p.median_ms ? "ok" : p.compiled ? "failed" : "compile_failed") << ",";
    out << (p.median_ms ? *p.median_ms : 0) << "," << p.compile_ms << "," << p.measure_ms;
    for (float v : p.plan) out << "," << v;
    out << "\n";
  }
}

ReplaySpace read_replay_space(const std::filesystem::path& path) { return SpaceReader(path).read(); }

}  // namespace tiletune
