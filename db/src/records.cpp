#include "tiletune/records.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include "tiletune/utf8.hpp"

namespace tiletune {

bool is_identifier(std::string_view name) {
  if (name.empty()) return false;
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name.front())) return false;
  for (char c : name)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

namespace {

constexpr std::array<std::pair<Outcome, std::string_view>, 7> outcome_names{{
    {Outcome::ok, "ok"},
    {Outcome::pruned, "pruned"},
    {Outcome::compile_failed, "compile_failed"},
    {Outcome::launch_failed, "launch_failed"},
    {Outcome::runtime_failed, "runtime_failed"},
    {Outcome::timeout, "timeout"},
    {Outcome::wrong_result, "wrong_result"},
}};

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::optional<std::int64_t> parse_int64(std::string_view text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// Text from the input as a message quotes it: one line, control characters escaped, cut after 200 bytes.
std::string quoted(std::string_view text) {
  constexpr std::size_t limit = 200;
  return "'" + printable_line(text.substr(0, limit)) + (text.size() > limit ? "...'" : "'");
}

// "a=1,b=-2" with C-identifier names and int64 values; `what` names the text in messages.
std::map<std::string, std::int64_t> parse_pairs(std::string_view text, std::string_view what) {
  std::map<std::string, std::int64_t> pairs;
  if (trim(text).empty()) return pairs;
  const auto fail = [&](const std::string& why) -> std::invalid_argument {
    return std::invalid_argument(std::string(what) + " must be NAME=INTEGER pairs separated by ',', got " +
                                 quoted(text) + ": " + why);
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) throw fail(quoted(item) + " has no '='");
    const std::string_view name = trim(item.substr(0, eq));
    const std::string_view value_text = trim(item.substr(eq + 1));
    if (!is_identifier(name)) throw fail(quoted(name) + " is not a C identifier");
    const auto value = parse_int64(value_text);
    if (!value) throw fail(quoted(value_text) + " is not a 64-bit integer");
    if (!pairs.emplace(std::string(name), *value).second) throw fail(quoted(name) + " appears twice");
    start = comma + 1;
  }
  return pairs;
}

std::string pairs_to_text(const std::map<std::string, std::int64_t>& pairs, std::string_view what) {
  std::string text;
  for (const auto& [name, value] : pairs) {
    if (!is_identifier(name))
      throw std::invalid_argument(std::string(what) + " name " + quoted(name) + " is not a C identifier");
    if (!text.empty()) text += ',';
    text += name;
    text += '=';
    text += std::to_string(value);
  }
  return text;
}

}  // namespace

std::string_view to_string(Outcome outcome) {
  for (const auto& [value, name] : outcome_names)
    if (value == outcome) return name;
  return "unknown";
}

std::optional<Outcome> outcome_from_string(std::string_view text) {
  for (const auto& [value, name] : outcome_names)
    if (name == text) return value;
  return std::nullopt;
}

std::string params_to_text(const Params& params) { return pairs_to_text(params, "parameter"); }

Params params_from_text(std::string_view text) { return parse_pairs(text, "params"); }

std::string ProblemKey::size_text() const {
  std::string text;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += 'x';
    text += std::to_string(dims[i]);
  }
  return text;
}

std::string ProblemKey::args_text() const { return pairs_to_text(args, "argument"); }

std::string ProblemKey::text() const { return problem_text(size_text(), args_text()); }

std::string problem_text(const std::string& size_text, const std::string& args_text) {
  return args_text.empty() ? size_text : size_text + " " + args_text;
}

std::vector<std::int64_t> parse_size_text(std::string_view text) {
  const auto fail = [&] {
    return std::invalid_argument("size must be positive integers separated by 'x', got " + quoted(text));
  };
  std::vector<std::int64_t> dims;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t x = std::min(text.find('x', start), text.size());
    const std::string_view part = text.substr(start, x - start);
    // from_chars accepts a leading '-', which a size never has.
    if (part.empty() || part.front() == '-') throw fail();
    const auto value = parse_int64(part);
    if (!value || *value <= 0) throw fail();
    dims.push_back(*value);
    start = x + 1;
  }
  return dims;
}

std::map<std::string, std::int64_t> parse_args_text(std::string_view text) {
  return parse_pairs(text, "args");
}

ProblemKey parse_problem_text(std::string_view text) {
  const std::size_t space = std::min(text.find(' '), text.size());
  ProblemKey key;
  key.dims = parse_size_text(text.substr(0, space));
  if (space < text.size()) key.args = parse_args_text(text.substr(space + 1));
  return key;
}

}  // namespace tiletune
