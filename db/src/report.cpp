// The HTML report: one file with inline SVG charts, so that it opens anywhere without a server, a network
// or a script (a short inline script only offers the other parameter pairs of the heatmaps).
#include "tiletune/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sqlite.hpp"
#include "store_rows.hpp"
#include "tiletune/build_info.hpp"
#include "tiletune/json_depth.hpp"
#include "tiletune/store.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

namespace {

using nlohmann::json;

// ---- text ----

// At most `limit` bytes of valid UTF-8 (cut at a character boundary), with an ellipsis when cut: a compile
// log or a hostile name cannot make the page huge.
std::string clipped(std::string_view text, std::size_t limit) {
  std::string valid = replace_invalid_utf8(text);
  if (valid.size() <= limit) return valid;
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(valid[end]) & 0xC0) == 0x80) --end;
  valid.resize(end);
  return valid + "\xE2\x80\xA6";
}

// Text for HTML (element content and double-quoted attributes, SVG included): valid UTF-8, control
// characters shown as \xNN (see utf8.hpp), markup characters escaped.
std::string esc(std::string_view text, std::size_t limit = 300) {
  std::string out;
  for (const char c : printable(clipped(text, limit))) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string first_line(const std::string& text) {
  const std::size_t end = text.find_first_of("\r\n");
  return end == std::string::npos ? text : text.substr(0, end);
}

// Characters as drawn of escaped text: an entity is one, a UTF-8 sequence is one.
std::size_t display_length(std::string_view escaped) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '&') {
      const std::size_t end = escaped.find(';', i);
      if (end != std::string_view::npos) i = end;
    }
    n += (static_cast<unsigned char>(escaped[i]) & 0xC0) != 0x80;
  }
  return n;
}

// "2025-01-31T12:34:56.789Z" as "2025-01-31 12:34" for a table cell; anything else as it is.
std::string short_time(const std::string& iso) {
  if (iso.size() >= 16 && iso[10] == 'T') return iso.substr(0, 10) + " " + iso.substr(11, 5);
  return iso;
}

// A coordinate for SVG.
std::string px(double value) {
  if (!std::isfinite(value)) value = 0;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

// A measured value with three or four significant digits and no exponent for the usual range.
std::string value_text(double value) {
  if (!std::isfinite(value)) return "-";
  const double a = std::fabs(value);
  if (a == 0) return "0";
  char text[48];
  if (a >= 1e7 || (a > 0 && a < 1e-3))
    std::snprintf(text, sizeof text, "%.3g", value);
  else if (a >= 100)
    std::snprintf(text, sizeof text, "%.0f", value);
  else if (a >= 10)
    std::snprintf(text, sizeof text, "%.1f", value);
  else if (a >= 1)
    std::snprintf(text, sizeof text, "%.2f", value);
  else
    std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

std::string ms_text(double ms) { return value_text(ms) + " ms"; }

// "A=1, B=2" for display; never throws, whatever names a hand-edited database holds.
std::string params_display(const Params& params) {
  std::string text;
  for (const auto& [name, value] : params) {
    if (!text.empty()) text += ", ";
    text += name + "=" + std::to_string(value);
  }
  return text.empty() ? "(no parameters)" : text;
}

std::string problem_display(const ProblemKey& problem) {
  std::string text;
  for (std::size_t i = 0; i < problem.dims.size(); ++i)
    text += (i ? "x" : "") + std::to_string(problem.dims[i]);
  for (const auto& [name, value] : problem.args) text += " " + name + "=" + std::to_string(value);
  return text;
}

std::string args_display(const ProblemKey& problem) {
  std::string text;
  for (const auto& [name, value] : problem.args)
    text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  return text;
}

double problem_elements(const ProblemKey& problem) {
  double product = 1;
  for (const std::int64_t d : problem.dims) product *= static_cast<double>(std::max<std::int64_t>(d, 1));
  return product;
}

// ---- colours ----

// Viridis (perceptually uniform, readable in grey and by most colour-blind readers): t = 0 dark, 1 bright.
std::string viridis(double t) {
  static const double stops[][3] = {{68, 1, 84},    {72, 40, 120},  {62, 74, 137},  {49, 104, 142},
                                    {38, 130, 142}, {31, 158, 137}, {53, 183, 121}, {110, 206, 88},
                                    {181, 222, 43}, {253, 231, 37}};
  constexpr int n = sizeof stops / sizeof stops[0];
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, 0.0, 1.0) * (n - 1);
  const int i = std::min(static_cast<int>(t), n - 2);
  const double f = t - i;
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x",
                static_cast<int>(std::lround(stops[i][0] + f * (stops[i + 1][0] - stops[i][0]))),
                static_cast<int>(std::lround(stops[i][1] + f * (stops[i + 1][1] - stops[i][1]))),
                static_cast<int>(std::lround(stops[i][2] + f * (stops[i + 1][2] - stops[i][2]))));
  return text;
}

constexpr const char* winner_colour = "#e31a1c";
constexpr const char* bar_colour = "#8da9c4";
constexpr const char* axis_colour = "#555";
const char* const series_colours[] = {"#1f78b4", "#ff7f00", "#6a3d9a", "#33a02c",
                                      "#b15928", "#a6761d", "#e7298a"};
const char* series_colour(std::size_t i) {
  return series_colours[i % (sizeof series_colours / sizeof series_colours[0])];
}

// ---- axes ----

// A linear or logarithmic map from values to pixels, with ticks at round values.
struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  double p0 = 0, p1 = 1;  // pixels of lo and hi

  double operator()(double v) const {
    const double t =
        log ? (std::log10(std::max(v, 1e-300)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
            : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }

  std::vector<double> ticks() const {
    std::vector<double> out;
    if (log) {
      const int first = static_cast<int>(std::floor(std::log10(lo))),
                last = static_cast<int>(std::ceil(std::log10(hi)));
      const int decades = last - first;
      const std::vector<double> steps = decades <= 2   ? std::vector<double>{1, 2, 5}
                                        : decades <= 4 ? std::vector<double>{1, 3}
                                                       : std::vector<double>{1};
      const int every = std::max(1, decades / 8);
      for (int d = first; d <= last; ++d) {
        if ((d - first) % every) continue;
        for (const double s : steps) {
          const double v = s * std::pow(10.0, d);
          if (v >= lo * 0.999 && v <= hi * 1.001) out.push_back(v);
        }
      }
      if (out.size() < 2) out = {lo, hi};
      return out;
    }
    // Counted, not accumulated: a step below the values' precision must not loop forever.
    const double step = nice_step((hi - lo) / 5), start = std::ceil(lo / step - 1e-9) * step;
    for (int k = 0; k < 20; ++k) {
      const double v = start + k * step;
      if (v > hi + step * 1e-9) break;
      out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
    }
    return out;
  }

  // A tick's text: as many decimals as the step needs on a linear axis (0, 0.25, 0.5), %g on a log one.
  std::string label(double v) const {
    char text[32];
    if (log) {
      std::snprintf(text, sizeof text, "%g", v);
      return text;
    }
    const double step = nice_step((hi - lo) / 5);
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
    const int decimals =
        std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)) + (mantissa == 2.5 ? 1 : 0), 0, 9);
    std::snprintf(text, sizeof text, "%.*f", decimals, std::fabs(v) < step * 1e-9 ? 0.0 : v);
    return text;
  }

  static double nice_step(double raw) {
    if (!(raw > 0) || !std::isfinite(raw)) return 1;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / magnitude;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * magnitude;
  }
};

// A scale over positive values [lo, hi]: logarithmic where they span more than `log_ratio`, else linear from
// zero (from_zero) or from a round value below lo.
Scale scale_for(double lo, double hi, double p0, double p1, double log_ratio, bool from_zero) {
  Scale s;
  s.p0 = p0;
  s.p1 = p1;
  if (!(lo > 0) || !std::isfinite(lo) || !std::isfinite(hi) || hi < lo) lo = hi = 1;
  if (hi / lo > log_ratio) {
    s.log = true;
    // Out to the next 1, 2 or 5 beyond a small margin, so that both ends carry a tick.
    const auto snap = [](double v, bool up) {
      const double decade = std::pow(10.0, std::floor(std::log10(v)));
      for (const double m : up ? std::vector<double>{1, 2, 5, 10} : std::vector<double>{10, 5, 2, 1})
        if (up ? m * decade >= v : m * decade <= v) return m * decade;
      return v;
    };
    s.lo = snap(lo / 1.05, false);
    s.hi = snap(hi * 1.05, true);
    return s;
  }
  if (hi == lo) {
    lo *= 0.8;
    hi *= 1.2;
  }
  const double step = Scale::nice_step((hi - (from_zero ? 0 : lo)) / 5);
  s.lo = from_zero ? 0 : std::floor(lo / step) * step;
  s.hi = std::ceil(hi / step) * step;
  if (s.hi <= s.lo) s.hi = s.lo + step;
  return s;
}

// ---- SVG ----

std::string text_el(double x, double y, const std::string& escaped, const std::string& attrs = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" +
         escaped + "</text>";
}

std::string line_el(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\" " +
         attrs + "/>";
}

std::string rect_el(double x, double y, double w, double h, const std::string& attrs) {
  return "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) + "\" height=\"" +
         px(std::max(h, 0.0)) + "\" " + attrs + "/>";
}

std::string svg_open(const std::string& chart, std::int64_t id, int width, int height,
                     const std::string& title) {
  return "<svg class=\"tt-chart\" data-chart=\"" + chart + "\" data-id=\"" + std::to_string(id) +
         "\" width=\"" + std::to_string(width) + "\" height=\"" + std::to_string(height) +
         "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
         "\" role=\"img\"><title>" + title + "</title>";
}

// A chart with nothing to draw still says why inside its box, so the reader never meets a silent blank.
std::string placeholder_svg(const std::string& chart, std::int64_t id, int width, int height,
                            const std::string& why) {
  return svg_open(chart, id, width, height, why) +
         rect_el(0.5, 0.5, width - 1, height - 1, "fill=\"#f6f6f6\" stroke=\"#ccc\"") +
         text_el(width / 2.0, height / 2.0, why, "text-anchor=\"middle\" class=\"tt-note\"") + "</svg>";
}

// An axis name written upwards beside the y axis, centred at height y.
std::string y_axis_name(int x, double y, const std::string& escaped) {
  return text_el(x, y, escaped,
                 "text-anchor=\"middle\" class=\"tt-axis-name\" transform=\"rotate(-90 " + std::to_string(x) +
                     " " + px(y) + ")\"");
}

// Grid lines across the plot at the y scale's ticks (only whole ones where `whole`), labelled at the left.
std::string y_grid(const Scale& y, double left, double plot_w, bool whole) {
  std::string out;
  for (const double v : y.ticks()) {
    if (whole && v != std::floor(v)) continue;
    out += line_el(left, y(v), left + plot_w, y(v), "stroke=\"#eee\"");
    out += text_el(left - 6, y(v) + 4, y.label(v), "text-anchor=\"end\"");
  }
  return out;
}

// The x and y axes' lines along the plot's bottom and left.
std::string axis_lines(double left, double top, double plot_w, double plot_h) {
  return line_el(left, top + plot_h, left + plot_w, top + plot_h,
                 std::string("stroke=\"") + axis_colour + "\"") +
         line_el(left, top, left, top + plot_h, std::string("stroke=\"") + axis_colour + "\"");
}

// ---- what the report shows of a sweep ----

struct Marker {
  std::string label;  // escaped
  double ms = 0;
  std::optional<double> metric;
  std::string colour;
  bool dashed = true;
};

struct SweepView {
  SweepInfo info;
  std::vector<StoredResult> results;
  PrunedCounts pruned;                // what was pruned before compiling, counted (not in `results`)
  std::optional<std::size_t> winner;  // the fastest ok result with a time
  bool by_metric = false;             // every timed ok result has a metric, all in one unit
  std::string unit;                   // the metric's unit, or "ms"
  json description = json::object();
  std::optional<Params> defaults;
  std::vector<Marker> baselines;             // the default configuration, baseline families' best stored
  std::vector<std::string> not_stored;       // declared baselines the database has no result for (escaped)
  std::map<Params, std::size_t> by_params;   // result index by configuration
  std::vector<std::string> parameter_order;  // as the family's description lists them
};

std::optional<double> time_of(const ResultRecord& r) {
  if (r.outcome != Outcome::ok || !r.median_ms || !std::isfinite(*r.median_ms) || *r.median_ms <= 0)
    return std::nullopt;
  return r.median_ms;
}

// What the heatmap colours: the metric (higher is better) or the median time (lower is better).
std::optional<double> value_of(const SweepView& s, const ResultRecord& r) {
  if (!time_of(r)) return std::nullopt;
  if (!s.by_metric) return r.median_ms;
  if (!r.metric || !std::isfinite(*r.metric)) return std::nullopt;
  return r.metric;
}

// The index of each configuration's result, and the winner: the fastest ok result with a time, the first of
// equal ones.
void index_results(SweepView& s) {
  for (std::size_t i = 0; i < s.results.size(); ++i) {
    s.by_params.emplace(s.results[i].record.params, i);
    const auto t = time_of(s.results[i].record);
    if (t && (!s.winner || *t < *s.results[*s.winner].record.median_ms)) s.winner = i;
  }
}

// By the metric where every timed ok result has one, all in one unit; else by the median time.
void choose_unit(SweepView& s) {
  std::set<std::string> units;
  bool all_metric = true;
  for (const auto& r : s.results) {
    if (!time_of(r.record)) continue;
    if (!r.record.metric || !std::isfinite(*r.record.metric) || r.record.metric_unit.empty())
      all_metric = false;
    units.insert(r.record.metric_unit);
  }
  s.by_metric = s.winner && all_metric && units.size() == 1;
  s.unit = s.by_metric ? *units.begin() : "ms";
}

// The names of the description's parameters in the order it lists them.
std::vector<std::string> described_parameter_order(const std::string& description_text) {
  std::vector<std::string> order;
  if (json_depth(description_text) > kMaxJsonDepth) return order;
  // nlohmann::json sorts keys; the description's own order is the one its author chose.
  const auto ordered = nlohmann::ordered_json::parse(description_text, nullptr, false);
  if (ordered.is_object() && ordered.contains("parameters") && ordered["parameters"].is_object())
    for (const auto& item : ordered["parameters"].items()) order.push_back(item.key());
  return order;
}

// The description's default configuration, where it gives one that parses.
std::optional<Params> described_defaults(const std::string& description_text) {
  const auto text = rows::default_params_text(description_text);
  if (!text) return std::nullopt;
  try {
    return params_from_text(*text);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// The default configuration as the first baseline, where the sweep timed it.
void add_default_baseline(SweepView& s) {
  if (!s.defaults) return;
  const auto it = s.by_params.find(*s.defaults);
  if (it == s.by_params.end() || !time_of(s.results[it->second].record)) return;
  const ResultRecord& r = s.results[it->second].record;
  s.baselines.push_back(
      {"default (" + esc(params_display(*s.defaults), 120) + ")", *r.median_ms, r.metric, "#555", true});
}

// A baseline family: its best stored result on the sweep's device and problem, or a note that there is none.
void add_family_baseline(const Store& store, SweepView& s, const std::string& family) {
  const auto best = store.best(family, s.info.device.name, s.info.problem);
  if (best && time_of(best->record))
    s.baselines.push_back({esc(family, 80) + " (best stored)", *best->record.median_ms, best->record.metric,
                           series_colour(1 + s.baselines.size()), true});
  else
    s.not_stored.push_back(esc(family, 80) + " (no stored result for this device and problem)");
}

// The baselines the description declares: families (drawn where stored) and library calls (never stored).
void add_declared_baselines(const Store& store, SweepView& s) {
  const auto baselines = s.description.find("baselines");
  if (baselines == s.description.end() || !baselines->is_array()) return;
  for (const json& b : *baselines) {
    if (b.is_string()) {
      add_family_baseline(store, s, b.get<std::string>());
    } else if (b.is_object() && b.contains("library") && b["library"].is_string()) {
      s.not_stored.push_back(esc(b["library"].get<std::string>(), 80) +
                             " (a library call: measured by <code>tiletune bench</code>, not stored)");
    }
  }
}

SweepView view_of(const Store& store, const SweepInfo& info) {
  SweepView s;
  s.info = info;
  s.results = store.results(info.id);
  s.pruned = store.pruned_counts(info.id);
  index_results(s);
  choose_unit(s);
  const std::string description_text = store.family_description(info.family, info.template_hash);
  s.description = rows::object_or_empty(description_text);
  s.parameter_order = described_parameter_order(description_text);
  s.defaults = described_defaults(description_text);
  add_default_baseline(s);
  add_declared_baselines(store, s);
  return s;
}

// ---- heatmap ----

// How much of the variance of log time the groups of configurations that share the values of `names`
// explain (eta squared: the between-group sum of squares over the total); 0 when nothing varies.
double explained(const SweepView& s, const std::vector<std::string>& names) {
  std::vector<std::pair<std::vector<std::int64_t>, double>> rows;
  for (const auto& r : s.results) {
    const auto t = time_of(r.record);
    if (!t) continue;
    std::vector<std::int64_t> key;
    for (const std::string& name : names) {
      const auto it = r.record.params.find(name);
      key.push_back(it == r.record.params.end() ? 0 : it->second);
    }
    rows.emplace_back(std::move(key), std::log(*t));
  }
  double mean = 0;
  for (const auto& row : rows) mean += row.second / static_cast<double>(rows.size());
  double total = 0;
  std::map<std::vector<std::int64_t>, std::pair<double, int>> groups;  // values -> (sum, count)
  for (const auto& row : rows) {
    total += (row.second - mean) * (row.second - mean);
    groups[row.first].first += row.second;
    groups[row.first].second += 1;
  }
  double between = 0;
  for (const auto& entry : groups) {
    const double group_mean = entry.second.first / entry.second.second;
    between += entry.second.second * (group_mean - mean) * (group_mean - mean);
  }
  return total > 0 ? between / total : 0.0;
}

// The pairs of parameters to draw (x, y), the default first: the pair that together explains the most
// variance of log time. Only parameters with 2 to 64 values in
// the sweep (the 10 most telling); with one such parameter, the one pair (it, "").
std::vector<std::pair<std::string, std::string>> heatmap_pairs(const SweepView& s) {
  std::map<std::string, std::set<std::int64_t>> values;
  for (const auto& r : s.results)
    for (const auto& [name, value] : r.record.params) values[name].insert(value);
  std::vector<std::pair<double, std::string>> single;
  for (const auto& [name, set] : values)
    if (set.size() >= 2 && set.size() <= 64) single.emplace_back(explained(s, {name}), name);
  std::stable_sort(single.begin(), single.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (single.size() == 1) return {{single[0].second, ""}};
  std::vector<std::pair<double, std::pair<std::string, std::string>>> scored;
  for (std::size_t i = 0; i < single.size() && i < 10; ++i)
    for (std::size_t j = i + 1; j < single.size() && j < 10; ++j)
      scored.push_back(
          {explained(s, {single[i].second, single[j].second}), {single[i].second, single[j].second}});
  // Equal up to rounding counts as equal, so that ties keep the order of the single scores.
  for (auto& entry : scored) entry.first = std::round(entry.first * 1e9);
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  // Each pair's axes in the description's order (x first), so that every sweep of a family reads alike.
  const auto rank = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(s.parameter_order.begin(), s.parameter_order.end(), name) -
                                    s.parameter_order.begin());
  };
  // Every view is in the page: at most 20000 cells over all of them (the first is always drawn).
  std::vector<std::pair<std::string, std::string>> pairs;
  std::size_t cells = 0;
  for (const auto& entry : scored) {
    auto pair = entry.second;
    cells += values[pair.first].size() * values[pair.second].size();
    if (!pairs.empty() && cells > 20000) break;
    if (std::make_pair(rank(pair.second), pair.second) < std::make_pair(rank(pair.first), pair.first))
      std::swap(pair.first, pair.second);
    pairs.push_back(pair);
  }
  return pairs;
}

constexpr int heat_w = 660, heat_h = 400;

// One heatmap view as drawn: the values of its parameters (ys a single 0 without a second parameter), a
// cell's size, and the range of the whole sweep's values, so that every pair's view and the legend colour
// alike.
struct HeatGrid {
  static constexpr double left = 96, top = 14, plot_w = 440, plot_h = 316;
  std::vector<std::int64_t> xs, ys;
  double cw = 0, ch = 0;
  double lo = 0, hi = 0;

  double x(std::size_t xi) const { return left + xi * cw; }
  double y(std::size_t yi) const {
    return top + (ys.size() - 1 - yi) * ch;
  }                                                       // the smallest value at the bottom
  bool labelled() const { return cw >= 34 && ch >= 15; }  // room for a value in each cell

  // Where a value lies on the colour scale: 1 (bright) is the best.
  double shade(bool by_metric, double v) const {
    if (by_metric) return hi > lo ? (v - lo) / (hi - lo) : 1.0;
    return hi > lo ? (std::log(hi) - std::log(v)) / (std::log(hi) - std::log(lo)) : 1.0;
  }
};

HeatGrid heat_grid(const SweepView& s, const std::string& a, const std::string& b, double lo, double hi) {
  std::set<std::int64_t> xset, yset;
  for (const auto& r : s.results) {
    if (const auto it = r.record.params.find(a); it != r.record.params.end()) xset.insert(it->second);
    if (!b.empty())
      if (const auto it = r.record.params.find(b); it != r.record.params.end()) yset.insert(it->second);
  }
  if (b.empty()) yset.insert(0);
  HeatGrid g;
  g.xs.assign(xset.begin(), xset.end());
  g.ys.assign(yset.begin(), yset.end());
  g.cw = HeatGrid::plot_w / static_cast<double>(g.xs.size());
  g.ch = HeatGrid::plot_h / static_cast<double>(g.ys.size());
  g.lo = lo;
  g.hi = hi;
  return g;
}

// What a cell shows of its configuration: its fill, the end of its tooltip, and a note (with the note's
// attributes) drawn where the cell has room; tooltip and note escaped.
struct CellLook {
  std::string fill, tip, note, note_attrs;
};

CellLook measured_look(const SweepView& s, const HeatGrid& g, const ResultRecord& r, double v) {
  const double t = g.shade(s.by_metric, v);
  return {
      viridis(t),
      ": " + value_text(v) + " " + esc(s.unit, 20) + (s.by_metric ? ", " + ms_text(*r.median_ms) : ""),
      value_text(v),
      std::string("text-anchor=\"middle\" fill=\"") + (t > 0.55 ? "#111" : "#fff") + "\" class=\"tt-cell\""};
}

CellLook failed_look(const ResultRecord& r) {
  static const std::map<Outcome, std::string> short_name = {
      {Outcome::pruned, "pr"},         {Outcome::compile_failed, "cf"}, {Outcome::launch_failed, "lf"},
      {Outcome::runtime_failed, "rf"}, {Outcome::timeout, "to"},        {Outcome::wrong_result, "wr"}};
  const auto sn = short_name.find(r.outcome);
  return {"#d0d0d0",
          ": " + std::string(to_string(r.outcome)) +
              (r.reason.empty() ? "" : " \xE2\x80\x94 " + esc(first_line(r.reason), 200)),
          sn == short_name.end() ? "" : sn->second, "text-anchor=\"middle\" fill=\"#555\" class=\"tt-cell\""};
}

std::string heat_cell(const SweepView& s, const HeatGrid& g, const Params& p, std::size_t xi,
                      std::size_t yi) {
  CellLook look{"url(#tt-hatch)",
                s.pruned.empty() ? ": not in this sweep" : ": not in this sweep, or pruned before compiling",
                "", ""};
  if (const auto it = s.by_params.find(p); it != s.by_params.end()) {
    const ResultRecord& r = s.results[it->second].record;
    const auto v = value_of(s, r);
    look = v ? measured_look(s, g, r, *v) : failed_look(r);
  }
  const double x = g.x(xi), y = g.y(yi);
  const std::string note = g.labelled() && !look.note.empty()
                               ? text_el(x + g.cw / 2, y + g.ch / 2 + 4, look.note, look.note_attrs)
                               : "";
  return "<g>" + rect_el(x, y, g.cw, g.ch, "fill=\"" + look.fill + "\" stroke=\"#fff\" stroke-width=\"1\"") +
         "<title>" + esc(params_display(p), 200) + look.tip + "</title>" + note + "</g>";
}

// The winner's cell (every view goes through it), outlined.
std::string winner_outline(const HeatGrid& g, const Params& best, const std::string& a,
                           const std::string& b) {
  const auto xi = std::find(g.xs.begin(), g.xs.end(), best.count(a) ? best.at(a) : 0) - g.xs.begin();
  const auto yi =
      b.empty() ? 0 : std::find(g.ys.begin(), g.ys.end(), best.count(b) ? best.at(b) : 0) - g.ys.begin();
  if (xi >= static_cast<long>(g.xs.size()) || yi >= static_cast<long>(g.ys.size())) return "";
  return rect_el(g.left + xi * g.cw + 1.5, g.top + (g.ys.size() - 1 - yi) * g.ch + 1.5, g.cw - 3, g.ch - 3,
                 std::string("fill=\"none\" stroke=\"") + winner_colour + "\" stroke-width=\"3\"");
}

// The parameters' values along the axes (every value where it fits, else every k-th) and their names.
std::string heatmap_axes(const HeatGrid& g, const std::string& a, const std::string& b) {
  std::string out;
  const std::size_t xstep = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(36 / g.cw)));
  for (std::size_t xi = 0; xi < g.xs.size(); xi += xstep)
    out += text_el(g.left + (xi + 0.5) * g.cw, g.top + g.plot_h + 15, std::to_string(g.xs[xi]),
                   "text-anchor=\"middle\"");
  out += text_el(g.left + g.plot_w / 2, g.top + g.plot_h + 36, esc(a, 60),
                 "text-anchor=\"middle\" class=\"tt-axis-name\"");
  if (b.empty()) return out;
  const std::size_t ystep = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(14 / g.ch)));
  for (std::size_t yi = 0; yi < g.ys.size(); yi += ystep)
    out += text_el(g.left - 6, g.top + (g.ys.size() - 1 - yi + 0.5) * g.ch + 4, std::to_string(g.ys[yi]),
                   "text-anchor=\"end\"");
  return out + y_axis_name(16, g.top + g.plot_h / 2, esc(b, 40));
}

// The keys below the colour scale: the winner's outline, a cell not ok, a configuration not in the sweep.
std::string heatmap_keys(double lx, double ky) {
  std::string out =
      rect_el(lx, ky, 16, 14,
              std::string("fill=\"none\" stroke=\"") + winner_colour + "\" stroke-width=\"3\"") +
      text_el(lx + 22, ky + 11, "winner", "class=\"tt-small\"");
  ky += 20;
  out +=
      rect_el(lx, ky, 16, 14, "fill=\"#d0d0d0\"") + text_el(lx + 22, ky + 11, "not ok", "class=\"tt-small\"");
  ky += 20;
  out += rect_el(lx, ky, 16, 14, "fill=\"url(#tt-hatch)\" stroke=\"#ccc\"") +
         text_el(lx + 22, ky + 11, "not in sweep", "class=\"tt-small\"");
  return out;
}

// The legend: the colour scale from the best value (bright) to the worst, then the keys.
std::string heatmap_legend(const SweepView& s, const HeatGrid& g, const std::string& id) {
  const double lx = g.left + g.plot_w + 20, ly = g.top + 18, lh = 190;
  std::string out = "<defs><linearGradient id=\"tt-grad-" + id + "\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
  for (int i = 0; i <= 10; ++i)
    out += "<stop offset=\"" + px(i * 10) + "%\" stop-color=\"" + viridis(i / 10.0) + "\"/>";
  out += "</linearGradient></defs>";
  out += rect_el(lx, ly, 16, lh, "fill=\"url(#tt-grad-" + id + ")\" stroke=\"#999\"");
  const double bright = s.by_metric ? g.hi : g.lo, dark = s.by_metric ? g.lo : g.hi;
  out += text_el(lx, g.top + 6, esc(s.unit, 14), "class=\"tt-axis-name\"");
  out += text_el(lx + 22, ly + 10, value_text(bright));
  out += text_el(lx + 22, ly + lh, value_text(dark));
  out +=
      text_el(lx, ly + lh + 18, s.by_metric ? "higher is better" : "lower is better", "class=\"tt-small\"");
  return out + heatmap_keys(lx, ly + lh + 34);
}

std::string heatmap_svg(const SweepView& s, const std::string& a, const std::string& b, std::size_t view,
                        double lo, double hi, const std::string& title) {
  const HeatGrid g = heat_grid(s, a, b, lo, hi);
  const Params& best = s.results[*s.winner].record.params;
  std::string out = svg_open("heatmap", s.info.id, heat_w, heat_h, title);
  // A slice through the winner: the parameters not drawn keep its values.
  for (std::size_t yi = 0; yi < g.ys.size(); ++yi) {
    for (std::size_t xi = 0; xi < g.xs.size(); ++xi) {
      Params p = best;
      p[a] = g.xs[xi];
      if (!b.empty()) p[b] = g.ys[yi];
      out += heat_cell(s, g, p, xi, yi);
    }
  }
  out += winner_outline(g, best, a, b) + heatmap_axes(g, a, b);
  return out + heatmap_legend(s, g, std::to_string(s.info.id) + "-" + std::to_string(view)) + "</svg>";
}

std::string heatmap_figure(const SweepView& s) {
  const std::string fig_id = "heatmap-" + std::to_string(s.info.id);
  std::string out = "<figure class=\"tt-figure\" id=\"" + fig_id + "\">";
  const std::string what = s.by_metric ? esc(s.unit, 20) : "median time";
  if (!s.winner) {
    const std::string title = "Heatmap (sweep " + std::to_string(s.info.id) + ")";
    return out + "<h4>" + title + "</h4>" +
           placeholder_svg(
               "heatmap", s.info.id, heat_w, heat_h,
               s.info.kind == "plan" ? "a plan: nothing was measured" : "no ok configuration with a time") +
           "</figure>";
  }
  double lo = 0, hi = 0;
  bool first = true;
  for (const auto& r : s.results)
    if (const auto v = value_of(s, r.record)) {
      lo = first ? *v : std::min(lo, *v);
      hi = first ? *v : std::max(hi, *v);
      first = false;
    }
  const std::vector<std::pair<std::string, std::string>> pairs = heatmap_pairs(s);
  if (pairs.empty()) {
    const std::string title = "Heatmap (sweep " + std::to_string(s.info.id) + ")";
    return out + "<h4>" + title + "</h4>" +
           placeholder_svg("heatmap", s.info.id, heat_w, heat_h, "no parameter takes more than one value") +
           "</figure>";
  }
  const Params& best = s.results[*s.winner].record.params;
  std::string picker;
  if (pairs.size() > 1) {
    // Invisible until the script shows it (without script it could do nothing), but taking its place, so
    // that the page has one layout with and without script.
    picker += "<label class=\"tt-pick tt-off\">parameters <select class=\"tt-pair\" data-figure=\"" + fig_id +
              "\">";
    for (std::size_t i = 0; i < pairs.size(); ++i)
      picker += "<option value=\"" + std::to_string(i) + "\">" + esc(pairs[i].first, 60) + " \xC3\x97 " +
                esc(pairs[i].second, 60) + "</option>";
    picker += "</select></label>";
  }
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto& [a, b] = pairs[i];
    std::string fixed;
    for (const auto& [name, value] : best)
      if (name != a && name != b) fixed += (fixed.empty() ? "" : ", ") + name + "=" + std::to_string(value);
    const std::string title = "Heatmap: " + what + " over " + esc(a, 60) +
                              (b.empty() ? "" : " \xC3\x97 " + esc(b, 60)) + " (sweep " +
                              std::to_string(s.info.id) + ")";
    out += std::string("<div class=\"tt-view\"") + (i ? " hidden" : "") + "><h4>" + title + "</h4>";
    out +=
        "<p class=\"tt-sub\">" +
        (fixed.empty() ? std::string("no other parameters") : "others at the winner's: " + esc(fixed, 300)) +
        "</p>";
    out += heatmap_svg(s, a, b, i, lo, hi, title) + "</div>";
  }
  return out + picker + "</figure>";
}

// ---- distribution of times ----

constexpr int dist_w = 660, dist_h = 400;

// The best time and the baselines, each baseline with its time and how many times the best's it is.
std::vector<Marker> distribution_markers(const SweepView& s, double best) {
  std::vector<Marker> markers;
  markers.push_back({"best " + ms_text(best), best, std::nullopt, winner_colour, false});
  for (const Marker& b : s.baselines) {
    Marker m = b;
    m.label += " " + ms_text(b.ms) + " (" + value_text(b.ms / best) + "\xC3\x97)";
    markers.push_back(m);
  }
  return markers;
}

// Counts of times in bins of equal width on the axis as drawn (in log space on a log axis); a single bin
// where every time is the same.
struct Histogram {
  bool log = false;
  double a0 = 0, width = 0;  // the first bin's start and a bin's width, on the axis
  std::vector<int> counts;

  double to_axis(double v) const { return log ? std::log10(v) : v; }
  double from_axis(double a) const { return log ? std::pow(10.0, a) : a; }
};

// `times` sorted.
Histogram histogram(const std::vector<double>& times, bool log) {
  Histogram h;
  h.log = log;
  const std::size_t bins = std::clamp<std::size_t>(
      static_cast<std::size_t>(2 * std::sqrt(static_cast<double>(times.size()))), 5, 40);
  h.a0 = h.to_axis(times.front());
  const double a1 = h.to_axis(times.back());
  h.width = a1 > h.a0 ? (a1 - h.a0) / static_cast<double>(bins) : 0;
  h.counts.assign(a1 > h.a0 ? bins : 1, 0);
  for (const double t : times) {
    const std::size_t k =
        h.width > 0 ? std::min(bins - 1, static_cast<std::size_t>((h.to_axis(t) - h.a0) / h.width)) : 0;
    ++h.counts[k];
  }
  return h;
}

// The bins as bars; a single bin is a narrow bar at its time.
std::string histogram_bars(const Histogram& h, const Scale& x, const Scale& y, double first_time) {
  std::string out;
  for (std::size_t k = 0; k < h.counts.size(); ++k) {
    double x0 = h.counts.size() == 1 ? x(first_time) - 4 : x(h.from_axis(h.a0 + k * h.width));
    double x1 = h.counts.size() == 1 ? x(first_time) + 4 : x(h.from_axis(h.a0 + (k + 1) * h.width));
    if (h.counts[k] == 0) continue;
    out += "<g>" +
           rect_el(x0 + 0.5, y(h.counts[k]), std::max(x1 - x0 - 1, 1.0), y(0) - y(h.counts[k]),
                   std::string("fill=\"") + bar_colour + "\"") +
           "<title>" + std::to_string(h.counts[k]) + " configuration" + (h.counts[k] == 1 ? "" : "s") +
           "</title></g>";
  }
  return out;
}

// Ticks and their values below the x axis at `bottom`.
std::string x_ticks(const Scale& x, double bottom) {
  std::string out;
  for (const double v : x.ticks()) {
    out += line_el(x(v), bottom, x(v), bottom + 4, std::string("stroke=\"") + axis_colour + "\"");
    out += text_el(x(v), bottom + 16, x.label(v), "text-anchor=\"middle\"");
  }
  return out;
}

// Right of its line at mx where the label fits, else left of it, else as far right as it fits.
double marker_label_x(double mx, const std::string& label) {
  const double label_w = 7.0 * static_cast<double>(display_length(label));
  return mx + 4 + label_w <= dist_w - 4 ? mx + 4
         : mx - 4 - label_w >= 4        ? mx - 4 - label_w
                                        : std::max(4.0, dist_w - 4 - label_w);
}

// Marker lines down to `bottom`, their labels on rows above the plot so that close ones do not overprint each
// other.
std::string marker_lines(const std::vector<Marker>& markers, const Scale& x, double bottom) {
  std::string out;
  for (std::size_t i = 0; i < markers.size(); ++i) {
    const Marker& m = markers[i];
    const double mx = x(m.ms), ly = 14 + 15.0 * static_cast<double>(i % 4);
    out += line_el(mx, ly + 3, mx, bottom,
                   std::string("stroke=\"") + m.colour + "\" stroke-width=\"2\"" +
                       (m.dashed ? " stroke-dasharray=\"5 3\"" : ""));
    out += text_el(marker_label_x(mx, m.label), ly, m.label,
                   std::string("fill=\"") + m.colour + "\" class=\"tt-marker\"");
  }
  return out;
}

// The declared baselines that the chart cannot draw, if any.
std::string not_drawn_note(const SweepView& s) {
  if (s.not_stored.empty()) return "";
  std::string out = "<p class=\"tt-sub\">not drawn: ";
  for (std::size_t i = 0; i < s.not_stored.size(); ++i) out += (i ? "; " : "") + s.not_stored[i];
  return out + "</p>";
}

std::string distribution_figure(const SweepView& s) {
  std::vector<double> times;
  for (const auto& r : s.results)
    if (const auto t = time_of(r.record)) times.push_back(*t);
  std::string out = "<figure class=\"tt-figure\" id=\"distribution-" + std::to_string(s.info.id) + "\">";
  const std::string title = "Distribution: median times of " + std::to_string(times.size()) +
                            " ok configuration" + (times.size() == 1 ? "" : "s") + " (sweep " +
                            std::to_string(s.info.id) + ")";
  out += "<h4>" + title + "</h4>";
  if (times.empty())
    return out + "<p class=\"tt-sub\">&nbsp;</p>" +
           placeholder_svg(
               "distribution", s.info.id, dist_w, dist_h,
               s.info.kind == "plan" ? "a plan: nothing was measured" : "no ok configuration with a time") +
           "</figure>";
  std::sort(times.begin(), times.end());
  const std::vector<Marker> markers = distribution_markers(s, times.front());
  double lo = times.front(), hi = times.back();
  for (const Marker& m : markers) {
    lo = std::min(lo, m.ms);
    hi = std::max(hi, m.ms);
  }
  const double left = 56, right = 20, top = 66, bottom = 46;
  const double plot_w = dist_w - left - right, plot_h = dist_h - top - bottom;
  const Scale x = scale_for(lo, hi, left, left + plot_w, 4.0, false);
  const Histogram h = histogram(times, x.log);
  const int most = *std::max_element(h.counts.begin(), h.counts.end());
  const Scale y = scale_for(1, most, top + plot_h, top, 1e300, true);
  out += "<p class=\"tt-sub\">" + ms_text(times.front()) + " to " + ms_text(times.back()) +
         (x.log ? ", log axis" : "") + "; " + std::to_string(h.counts.size()) + " bins</p>";
  out += svg_open("distribution", s.info.id, dist_w, dist_h, title);
  out += y_grid(y, left, plot_w, true) + histogram_bars(h, x, y, times.front()) +
         axis_lines(left, top, plot_w, plot_h) + x_ticks(x, top + plot_h);
  out +=
      text_el(left + plot_w / 2, dist_h - 8, std::string("median time (ms") + (x.log ? ", log scale)" : ")"),
              "text-anchor=\"middle\" class=\"tt-axis-name\"");
  out += y_axis_name(12, top + plot_h / 2, "configurations");
  out += marker_lines(markers, x, top + plot_h) + "</svg>";
  return out + not_drawn_note(s) + "</figure>";
}

// ---- outcomes ----

std::string outcomes_figure(const SweepView& s) {
  struct Count {
    std::int64_t n = 0;
    std::map<std::string, std::int64_t> reasons;
  };
  std::map<Outcome, Count> counts;
  for (const auto& r : s.results) {
    Count& c = counts[r.record.outcome];
    ++c.n;
    if (r.record.outcome != Outcome::ok) ++c.reasons[clipped(first_line(r.record.reason), 160)];
  }
  for (const auto& [reason, n] : s.pruned) {
    counts[Outcome::pruned].n += n;
    counts[Outcome::pruned].reasons[clipped(first_line(reason), 160)] += n;
  }
  const std::int64_t total = static_cast<std::int64_t>(s.results.size()) + pruned_total(s.pruned);
  const std::string title = "Outcomes: " + std::to_string(total) + " configuration" +
                            (total == 1 ? "" : "s") + " (sweep " + std::to_string(s.info.id) + ")";
  std::string out = "<figure class=\"tt-figure tt-wide\" id=\"outcomes-" + std::to_string(s.info.id) +
                    "\"><h4>" + title + "</h4>";
  if (total == 0) return out + "<p class=\"tt-sub\">no results stored</p></figure>";
  out += "<table class=\"tt-outcomes\" data-chart=\"outcomes\" data-id=\"" + std::to_string(s.info.id) +
         "\"><thead><tr><th>outcome</th><th>count</th><th>share</th><th>most frequent "
         "reasons</th></tr></thead><tbody>";
  for (const auto& [outcome, c] : counts) {
    std::vector<std::pair<std::string, std::int64_t>> reasons(c.reasons.begin(), c.reasons.end());
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string shown;
    for (std::size_t i = 0; i < reasons.size() && i < 3; ++i)
      shown += "<div>" + std::to_string(reasons[i].second) + "\xC3\x97 " +
               (reasons[i].first.empty() ? std::string("<i>no reason given</i>")
                                         : "<code>" + esc(reasons[i].first, 200) + "</code>") +
               "</div>";
    if (reasons.size() > 3)
      shown += "<div class=\"tt-small\">and " + std::to_string(reasons.size() - 3) + " other reasons</div>";
    const double share = static_cast<double>(c.n) / static_cast<double>(total);
    const std::string colour = outcome == Outcome::ok       ? "#33a02c"
                               : outcome == Outcome::pruned ? "#a0a0a0"
                                                            : "#e31a1c";
    out += "<tr class=\"tt-outcome-" + std::string(to_string(outcome)) + "\"><td>" +
           std::string(to_string(outcome)) + "</td><td class=\"tt-num\">" + std::to_string(c.n) +
           "</td><td><svg width=\"160\" height=\"14\">" + rect_el(0, 1, 160, 12, "fill=\"#eee\"") +
           rect_el(0, 1, std::max(1.0, 160 * share), 12, "fill=\"" + colour + "\"") + "</svg> " +
           value_text(100 * share) + "%</td><td>" + shown + "</td></tr>";
  }
  return out + "</tbody></table></figure>";
}

// ---- best so far ----

constexpr int curve_w = 1320, curve_h = 260;

// The sweep's best time after each measurement, as a step line over the measurements, each improvement a
// dot with its configuration; the strategy and when the best was found in the subtitle.
std::string best_so_far_figure(const SweepView& s, const std::vector<BestSoFarPoint>& curve) {
  const std::string id = std::to_string(s.info.id);
  std::size_t measured = 0;
  for (const auto& r : s.results)
    measured += !(r.record.outcome == Outcome::pruned && !r.record.compile_ms && !r.record.registers);
  const std::string title = "Best so far: " + std::to_string(curve.size()) + " improvement" +
                            (curve.size() == 1 ? "" : "s") + " over " + std::to_string(measured) +
                            " measurements (sweep " + id + ", " + esc(s.info.strategy, 80) + ")";
  std::string out =
      "<figure class=\"tt-figure tt-wide\" id=\"best-so-far-" + id + "\"><h4>" + title + "</h4>";
  if (curve.empty())
    return out +
           placeholder_svg("best-so-far", s.info.id, curve_w, curve_h, "no ok configuration with a time") +
           "</figure>";
  const BestSoFarPoint& last = curve.back();
  out += "<p class=\"tt-sub\">best " + ms_text(last.median_ms) + " found at measurement " +
         std::to_string(last.measurement) + ", " + value_text(last.seconds) + " s after the sweep began</p>";
  const double left = 64, right = 20, top = 12, bottom = 40;
  const double plot_w = curve_w - left - right, plot_h = curve_h - top - bottom;
  const double n =
      static_cast<double>(std::max<std::size_t>(measured, static_cast<std::size_t>(last.measurement)));
  const Scale x = scale_for(1, std::max(2.0, n), left, left + plot_w, 1e300, false);
  const Scale y = scale_for(last.median_ms, curve.front().median_ms, top + plot_h, top, 10.0, false);
  out += svg_open("best-so-far", s.info.id, curve_w, curve_h, title);
  for (const double v : y.ticks()) {
    out += line_el(left, y(v), left + plot_w, y(v), "stroke=\"#eee\"");
    out += text_el(left - 6, y(v) + 4, y.label(v), "text-anchor=\"end\"");
  }
  std::string path =
      "M" + px(x(static_cast<double>(curve.front().measurement))) + "," + px(y(curve.front().median_ms));
  for (std::size_t i = 1; i < curve.size(); ++i)
    path += "H" + px(x(static_cast<double>(curve[i].measurement))) + "V" + px(y(curve[i].median_ms));
  path += "H" + px(x(n));
  out += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + bar_colour + "\" stroke-width=\"2\"/>";
  for (const BestSoFarPoint& p : curve)
    out += "<g><circle cx=\"" + px(x(static_cast<double>(p.measurement))) + "\" cy=\"" + px(y(p.median_ms)) +
           "\" r=\"3.5\" fill=\"" + winner_colour + "\"/><title>measurement " +
           std::to_string(p.measurement) + ", " + value_text(p.seconds) + " s: " + ms_text(p.median_ms) +
           " " + esc(params_display(p.params), 200) + "</title></g>";
  const std::string axis = std::string("stroke=\"") + axis_colour + "\"";
  out += line_el(left, top + plot_h, left + plot_w, top + plot_h, axis) +
         line_el(left, top, left, top + plot_h, axis);
  for (const double v : x.ticks()) {
    out += line_el(x(v), top + plot_h, x(v), top + plot_h + 4, axis);
    out += text_el(x(v), top + plot_h + 16, x.label(v), "text-anchor=\"middle\"");
  }
  out += text_el(left + plot_w / 2, curve_h - 6, "measurements",
                 "text-anchor=\"middle\" class=\"tt-axis-name\"");
  out += text_el(14, top + plot_h / 2, "best (ms)",
                 "text-anchor=\"middle\" class=\"tt-axis-name\" transform=\"rotate(-90 14 " +
                     px(top + plot_h / 2) + ")\"");
  return out + "</svg></figure>";
}

// ---- best metric against problem size, across the sweeps of a family on a device ----

constexpr int size_w = 1320, size_h = 360;

struct Point {
  double x = 0, y = 0;
  std::string size_text, tip;
};

struct Series {
  std::string label;  // escaped
  bool dashed = false;
  std::vector<Point> points;
};

// The best ok result of a problem over the selected sweeps.
struct ProblemBest {
  ProblemKey problem;
  double ms = 0;
  std::optional<double> metric;
  std::string unit;
  std::int64_t sweep = 0;
};

// The default configuration's fastest run on a problem.
struct DefaultRun {
  double ms = 0;
  std::optional<double> metric;
};

// What the chart draws of a family on a device, by problem (as problem_display writes it).
struct SizeData {
  std::string device;
  std::map<std::string, ProblemBest> best;
  std::map<std::string, DefaultRun> defaults;
  std::set<std::string> baseline_families;  // the families any sweep's description declares as baselines
  bool by_metric = false;                   // every problem's best has a metric, all in one unit
  std::string unit;                         // the metric's unit, or "ms"
};

std::map<std::string, ProblemBest> best_by_problem(const std::vector<const SweepView*>& sweeps) {
  std::map<std::string, ProblemBest> best;
  for (const SweepView* s : sweeps) {
    if (!s->winner) continue;
    const ResultRecord& w = s->results[*s->winner].record;
    const std::string key = problem_display(s->info.problem);
    const auto it = best.find(key);
    if (it == best.end() || *w.median_ms < it->second.ms)
      best.insert_or_assign(key,
                            ProblemBest{s->info.problem, *w.median_ms, w.metric, w.metric_unit, s->info.id});
  }
  return best;
}

std::map<std::string, DefaultRun> defaults_by_problem(const std::vector<const SweepView*>& sweeps) {
  std::map<std::string, DefaultRun> defaults;
  for (const SweepView* s : sweeps) {
    if (!s->winner || !s->defaults) continue;
    const auto d = s->by_params.find(*s->defaults);
    if (d == s->by_params.end() || !time_of(s->results[d->second].record)) continue;
    const ResultRecord& r = s->results[d->second].record;
    const std::string key = problem_display(s->info.problem);
    const auto known = defaults.find(key);
    if (known == defaults.end() || *r.median_ms < known->second.ms)
      defaults[key] = DefaultRun{*r.median_ms, r.metric};
  }
  return defaults;
}

std::set<std::string> declared_baseline_families(const std::vector<const SweepView*>& sweeps) {
  std::set<std::string> families;
  for (const SweepView* s : sweeps) {
    const auto b = s->description.find("baselines");
    if (b != s->description.end() && b->is_array())
      for (const json& name : *b)
        if (name.is_string()) families.insert(name.get<std::string>());
  }
  return families;
}

void choose_size_unit(SizeData& d) {
  std::set<std::string> units;
  bool all_metric = true;
  for (const auto& entry : d.best) {
    if (!entry.second.metric || !std::isfinite(*entry.second.metric) || entry.second.unit.empty())
      all_metric = false;
    units.insert(entry.second.unit);
  }
  d.by_metric = all_metric && units.size() == 1;
  d.unit = d.by_metric ? *units.begin() : "ms";
}

// A point of `problem` at y, its tooltip the problem's size and then `what`.
Point size_point(const ProblemKey& problem, double y, const std::string& what) {
  const std::string size = esc(problem_display(problem), 120);
  return {problem_elements(problem), y, size, size + ": " + what};
}

// The problem's best, on the line of its argument set.
void add_tuned_point(const SizeData& d, const ProblemBest& p, std::map<std::string, Series>& tuned) {
  const std::string args = args_display(p.problem);
  Series& series = tuned[args];
  if (series.label.empty())
    series.label = "tuned" + (args.empty() ? std::string() : " (" + esc(args, 80) + ")");
  const double y = d.by_metric ? *p.metric : p.ms;
  series.points.push_back(size_point(
      p.problem, y, value_text(y) + " " + esc(d.unit, 20) + " (sweep " + std::to_string(p.sweep) + ")"));
}

void add_default_point(const SizeData& d, const std::string& key, const ProblemKey& problem, Series& series) {
  const auto it = d.defaults.find(key);
  if (it == d.defaults.end()) return;
  const std::optional<double> y = d.by_metric ? it->second.metric : std::optional<double>(it->second.ms);
  if (y && std::isfinite(*y))
    series.points.push_back(size_point(problem, *y, "default " + value_text(*y) + " " + esc(d.unit, 20)));
}

// Each baseline family's best stored result on the problem, in the chart's unit (by metric: only in the same
// unit); baselines[i] is the i-th of d.baseline_families.
void add_baseline_points(const Store& store, const SizeData& d, const ProblemKey& problem,
                         std::vector<Series>& baselines) {
  std::size_t i = 0;
  for (const std::string& b : d.baseline_families) {
    const auto stored = store.best(b, d.device, problem);
    Series& series = baselines[i++];
    if (!stored || !time_of(stored->record)) continue;
    const std::optional<double> y =
        d.by_metric ? (stored->record.metric_unit == d.unit ? stored->record.metric : std::nullopt)
                    : stored->record.median_ms;
    if (y && std::isfinite(*y) && *y > 0)
      series.points.push_back(
          size_point(problem, *y, esc(b, 80) + " " + value_text(*y) + " " + esc(d.unit, 20)));
  }
}

// The lines with points: the tuned ones first (one per argument set; `tuned_count` of them), then the default
// configuration's, then each baseline family's best stored.
std::vector<Series> size_series(const Store& store, const SizeData& d, std::size_t& tuned_count) {
  std::map<std::string, Series> tuned;  // by problem args: each argument set is a line of its own
  Series default_series{"default configuration", true, {}};
  std::vector<Series> baselines;
  for (const std::string& b : d.baseline_families)
    baselines.push_back({esc(b, 80) + " (best stored)", true, {}});
  for (const auto& [key, p] : d.best) {
    add_tuned_point(d, p, tuned);
    add_default_point(d, key, p.problem, default_series);
    add_baseline_points(store, d, p.problem, baselines);
  }
  tuned_count = tuned.size();
  std::vector<Series> all;
  for (auto& entry : tuned) all.push_back(std::move(entry.second));
  if (!default_series.points.empty()) all.push_back(std::move(default_series));
  for (auto& b : baselines)
    if (!b.points.empty()) all.push_back(std::move(b));
  return all;
}

// The x axis is labelled at the problems themselves: "1024x1024x1024" says more than 1.07e9 elements. Labels
// closer than 110 pixels alternate between two rows.
std::string problem_ticks(const std::vector<Series>& all, const Scale& x, double bottom) {
  std::map<double, std::string> xlabels;
  for (const Series& series : all)
    for (const Point& p : series.points) xlabels.emplace(p.x, p.size_text);
  std::string out;
  std::size_t row = 0;
  double last_x = -1e9;
  for (const auto& [v, label] : xlabels) {
    const double px_ = x(v);
    row = px_ - last_x < 110 ? (row + 1) % 2 : 0;
    last_x = px_;
    out += line_el(px_, bottom, px_, bottom + 4 + 13.0 * row, std::string("stroke=\"") + axis_colour + "\"");
    out += text_el(px_, bottom + 16 + 13.0 * row, label, "text-anchor=\"middle\" class=\"tt-small\"");
  }
  return out;
}

// Series i's colour: the first tuned line blue, the others of the palette's end; the default grey.
std::string size_series_colour(std::size_t i, std::size_t tuned_count, const std::string& label) {
  return i < tuned_count                    ? series_colour(i == 0 ? 0 : 4 + i)
         : label == "default configuration" ? "#777"
                                            : series_colour(i);
}

// A series' line and dots, and its key in the legend at (lx, ly).
std::string series_lines(const Series& series, const Scale& x, const Scale& y, const std::string& colour,
                         double lx, double ly) {
  const std::string dash = series.dashed ? " stroke-dasharray=\"6 4\"" : "";
  std::string points;
  for (const Point& p : series.points) points += px(x(p.x)) + "," + px(y(p.y)) + " ";
  std::string out = "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + colour +
                    "\" stroke-width=\"2.5\"" + dash + "/>";
  for (const Point& p : series.points)
    out += "<g><circle cx=\"" + px(x(p.x)) + "\" cy=\"" + px(y(p.y)) + "\" r=\"4.5\" fill=\"" + colour +
           "\"/><title>" + p.tip + "</title></g>";
  out += line_el(lx, ly, lx + 28, ly, "stroke=\"" + colour + "\" stroke-width=\"2.5\"" + dash);
  return out + text_el(lx + 34, ly + 4, series.label);
}

std::string size_svg(std::vector<Series>& all, std::size_t tuned_count, const SizeData& d, std::int64_t id,
                     const std::string& title) {
  double xlo = 0, xhi = 0, ylo = 0, yhi = 0;
  bool first = true;
  for (const Series& series : all)
    for (const Point& p : series.points) {
      xlo = first ? p.x : std::min(xlo, p.x);
      xhi = first ? p.x : std::max(xhi, p.x);
      ylo = first ? p.y : std::min(ylo, p.y);
      yhi = first ? p.y : std::max(yhi, p.y);
      first = false;
    }
  const double left = 70, top = 20, legend_w = 260, bottom = 56;
  const double plot_w = size_w - left - legend_w - 20, plot_h = size_h - top - bottom;
  Scale x;
  x.log = true;
  x.lo = xlo / 2;
  x.hi = xhi * 2;
  x.p0 = left;
  x.p1 = left + plot_w;
  const Scale y = scale_for(ylo, yhi, top + plot_h, top, d.by_metric ? 1e300 : 20, d.by_metric);
  std::string out = svg_open("size", id, size_w, size_h, title);
  out += y_grid(y, left, plot_w, false) + axis_lines(left, top, plot_w, plot_h) +
         problem_ticks(all, x, top + plot_h);
  out +=
      text_el(left + plot_w / 2, size_h - 6, "problem size (elements of the problem's dimensions, log scale)",
              "text-anchor=\"middle\" class=\"tt-axis-name\"");
  out += y_axis_name(14, top + plot_h / 2, esc(d.unit, 20));
  for (std::size_t i = 0; i < all.size(); ++i) {
    Series& series = all[i];
    std::sort(series.points.begin(), series.points.end(),
              [](const Point& a, const Point& b) { return a.x < b.x; });
    out += series_lines(series, x, y, size_series_colour(i, tuned_count, series.label), left + plot_w + 24,
                        top + 10 + 20.0 * static_cast<double>(i));
  }
  return out + "</svg>";
}

std::string size_figure(const Store& store, const std::vector<const SweepView*>& sweeps, std::int64_t id) {
  const std::string family = sweeps.front()->info.family;
  SizeData d;
  d.device = sweeps.front()->info.device.name;
  d.best = best_by_problem(sweeps);
  d.defaults = defaults_by_problem(sweeps);
  d.baseline_families = declared_baseline_families(sweeps);
  const std::string title_base = " vs problem size: " + esc(family, 80) + " on " + esc(d.device, 120);
  std::string out = "<figure class=\"tt-figure tt-wide\" id=\"size-" + std::to_string(id) + "\">";
  if (d.best.empty()) {
    const std::string title = "Best time" + title_base;
    return out + "<h4>" + title + "</h4>" + placeholder_svg("size", id, size_w, size_h, "no measured sweep") +
           "</figure>";
  }
  choose_size_unit(d);
  const std::string title = std::string(d.by_metric ? "Best " + esc(d.unit, 20) : "Best time") + title_base;
  std::size_t tuned_count = 0;
  std::vector<Series> all = size_series(store, d, tuned_count);
  out +=
      "<h4>" + title +
      "</h4><p class=\"tt-sub\">the best ok configuration of each problem over the sweeps below; dashed: the "
      "family's default configuration and its baselines where stored</p>";
  return out + size_svg(all, tuned_count, d, id, title) + "</figure>";
}

// ---- page ----

// A name from the command line or the database inside a one-line message.
std::string quoted(const std::string& name) {
  std::string out = "'";
  for (const char c : printable(clipped(name, 100)))
    out += c == '\n' ? std::string("\\n") : c == '\t' ? std::string("\\t") : std::string(1, c);
  return out + "'";
}

std::string device_section(const DeviceRecord& d) {
  const json props = rows::object_or_empty(d.properties_json);
  const auto number = [&](const char* key) -> std::optional<double> {
    const auto it = props.find(key);
    if (it == props.end() || !it->is_number()) return std::nullopt;
    const double v = it->get<double>();
    return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
  };
  const auto version = [&](const char* key) -> std::string {
    const auto v = number(key);
    if (!v || *v <= 0) return "";
    const long n = std::lround(*v);  // CUDA's 12040 is 12.4
    return std::to_string(n / 1000) + "." + std::to_string((n % 1000) / 10);
  };
  std::vector<std::pair<std::string, std::string>> rows = {
      {"name", esc(d.name, 200)},
      {"uuid", esc(d.uuid, 200)},
      {"architecture", esc(d.arch, 40)},
      {"SMs", std::to_string(d.sm_count)},
      {"kind", d.is_profile ? "built-in profile (limits, not a measured device)" : "measured GPU"}};
  if (const auto v = number("clock_mhz")) rows.emplace_back("SM clock", value_text(*v) + " MHz");
  if (const auto v = number("clock_khz")) rows.emplace_back("SM clock", value_text(*v / 1000) + " MHz");
  if (const auto v = number("memory_clock_mhz")) rows.emplace_back("memory clock", value_text(*v) + " MHz");
  if (const auto v = number("global_memory_bytes"))
    rows.emplace_back("memory", value_text(*v / (1 << 30)) + " GiB");
  if (const auto v = number("l2_bytes")) rows.emplace_back("L2", value_text(*v / (1 << 20)) + " MiB");
  if (const std::string v = version("driver_version"); !v.empty())
    rows.emplace_back("driver (CUDA version)", v);
  if (const std::string v = version("runtime_version"); !v.empty()) rows.emplace_back("runtime (toolkit)", v);
  std::string out = "<table class=\"tt-device\">";
  for (const auto& [k, v] : rows) out += "<tr><th>" + k + "</th><td>" + v + "</td></tr>";
  out += "</table>";
  if (!props.empty()) {
    out += "<details><summary>every stored property</summary><table class=\"tt-device\">";
    std::size_t shown = 0;
    for (const auto& [k, v] : props.items()) {
      if (++shown > 200) break;
      out +=
          "<tr><th>" + esc(k, 80) + "</th><td>" +
          esc(v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace),
              200) +
          "</td></tr>";
    }
    out += "</table></details>";
  }
  return out;
}

std::string provenance(const SweepView& s) {
  const SweepInfo& i = s.info;
  std::string out = "<table class=\"tt-prov\"><tr><th>sweep</th><td>" + std::to_string(i.id) +
                    " (uid <code>" + esc(i.uid, 64) + "</code>)</td><th>kind</th><td>" + esc(i.kind, 20) +
                    ", " + esc(i.strategy, 40) + ", " + esc(i.status, 20) +
                    "</td></tr><tr><th>started</th><td>" + esc(i.started_at, 40) + "</td><th>ended</th><td>" +
                    (i.ended_at.empty() ? "-" : esc(i.ended_at, 40)) + "</td></tr><tr><th>tiletune</th><td>" +
                    esc(i.tiletune_version, 40) + " (git <code>" + esc(i.git_sha, 64) +
                    "</code>)</td><th>hashes</th><td>template <code>" + esc(i.template_hash, 64) +
                    "</code>, space <code>" + esc(i.space_hash, 64) + "</code></td></tr>";
  out += "<tr><th>winner</th><td colspan=\"3\">";
  if (s.winner) {
    const ResultRecord& w = s.results[*s.winner].record;
    out += "<b>" + esc(params_display(w.params), 300) + "</b>: " + ms_text(*w.median_ms);
    if (w.metric) out += ", " + value_text(*w.metric) + " " + esc(w.metric_unit, 20);
    if (w.spread) out += ", spread " + value_text(100 * *w.spread) + "%";
    if (w.registers) out += ", " + std::to_string(*w.registers) + " registers";
    if (w.occupancy)
      out += ", occupancy " + value_text(100 * *w.occupancy) + "% (" + esc(w.occupancy_limiter, 30) + ")";
  } else {
    out += "none (no ok configuration with a time)";
  }
  return out + "</td></tr></table>";
}

const char* const style = R"(
body{margin:0;background:#fff;color:#222;font:13px/1.45 "DejaVu Sans","Liberation Sans",Arial,sans-serif}
main{width:1340px;margin:0 auto;padding:12px 20px 40px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:2px solid #ccc}
h3{font-size:15px;margin:22px 0 6px}h4{font-size:13px;margin:4px 0}
table{border-collapse:collapse}th,td{text-align:left;vertical-align:top;padding:2px 8px;border-bottom:1px solid #eee}
th{color:#555;font-weight:600}.tt-num{text-align:right}code{font-size:12px}
.tt-row{display:flex;gap:20px;align-items:flex-start}
.tt-figure{margin:0 0 14px;width:660px}.tt-wide{width:1320px}
.tt-sub{margin:0 0 4px;color:#666;font-size:12px;min-height:16px}
.tt-chart{display:block;font-size:11px;fill:#333}
.tt-chart .tt-axis-name{font-size:12px;font-weight:600}.tt-chart .tt-small{font-size:10.5px}
.tt-chart .tt-note{font-size:14px;fill:#777}.tt-chart .tt-marker{font-size:11px;font-weight:600}
.tt-chart .tt-cell{font-size:10px}
.tt-pick{display:block;text-align:right;font-size:12px}.tt-off{visibility:hidden}.tt-small{color:#666;font-size:11px}
.tt-prov{margin-bottom:10px}.tt-device{margin-bottom:6px}
)";

// Offers the heatmaps' other parameter pairs; the page draws without it.
const char* const script = R"(
for (const select of document.querySelectorAll('select.tt-pair')) {
  select.parentElement.classList.remove('tt-off');
  select.addEventListener('change', () => {
    const views = document.getElementById(select.dataset.figure).querySelectorAll('.tt-view');
    views.forEach((view, i) => { view.hidden = String(i) !== select.value; });
  });
}
)";

// The sweeps named by id, each once in the order given, each of the family and on the device asked for.
std::vector<SweepInfo> sweeps_by_id(const Store& store, const ReportOptions& options,
                                    const std::string& where) {
  std::vector<SweepInfo> selected;
  std::set<std::int64_t> seen;
  for (const std::int64_t id : options.sweep_ids) {
    if (!seen.insert(id).second) continue;
    const auto s = store.sweep(id);
    if (!s) throw StoreError("no sweep " + std::to_string(id) + " in " + where);
    if (!options.family.empty() && s->family != options.family)
      throw StoreError("sweep " + std::to_string(id) + " is of family " + quoted(s->family) + ", not " +
                       quoted(options.family));
    if (!options.device_name.empty() && s->device.name != options.device_name)
      throw StoreError("sweep " + std::to_string(id) + " ran on " + quoted(s->device.name) + ", not " +
                       quoted(options.device_name));
    selected.push_back(*s);
  }
  return selected;
}

std::string quoted_list(const std::set<std::string>& names) {
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : ", ") + quoted(n);
  return clipped(text, 300);
}

// Why no sweep is of the family and on the device asked for: no sweeps at all, an unknown family, an unknown
// device, or no sweep of the two together.
[[noreturn]] void throw_none_selected(const Store& store, const ReportOptions& options,
                                      const std::string& where) {
  const auto all = store.sweeps();
  if (all.empty()) throw StoreError("no sweeps in " + where);
  std::set<std::string> families, devices;
  for (const auto& s : all) {
    families.insert(s.family);
    devices.insert(s.device.name);
  }
  if (!options.family.empty() && !families.count(options.family))
    throw StoreError("unknown family " + quoted(options.family) + " in " + where +
                     " (it has: " + quoted_list(families) + ")");
  if (!options.device_name.empty() && !devices.count(options.device_name))
    throw StoreError("no device named " + quoted(options.device_name) + " in " + where +
                     " (it has: " + quoted_list(devices) + ")");
  throw StoreError("no sweep of family " + quoted(options.family) + " on " + quoted(options.device_name) +
                   " in " + where);
}

std::vector<SweepInfo> selected_sweeps(const Store& store, const ReportOptions& options,
                                       const std::string& where) {
  if (!options.sweep_ids.empty()) return sweeps_by_id(store, options, where);
  std::vector<SweepInfo> selected = store.sweeps(options.family, options.device_name);
  if (selected.empty()) throw_none_selected(store, options, where);
  return selected;
}

// Device, then family, then problem size: the order a reader compares them in.
bool reads_before(const SweepView& a, const SweepView& b) {
  if (a.info.device.name != b.info.device.name) return a.info.device.name < b.info.device.name;
  if (a.info.device.uuid != b.info.device.uuid) return a.info.device.uuid < b.info.device.uuid;
  if (a.info.family != b.info.family) return a.info.family < b.info.family;
  const double pa = problem_elements(a.info.problem), pb = problem_elements(b.info.problem);
  if (pa != pb) return pa < pb;
  return a.info.id < b.info.id;
}

// The document's head, and one hatch pattern for every heatmap's "not in this sweep" cells.
std::string page_start() {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
         "'unsafe-inline'; "
         "script-src 'unsafe-inline'; img-src data:\">"
         "<title>tiletune report</title><style>" +
         std::string(style) +
         "</style></head><body>"
         "<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs><pattern "
         "id=\"tt-hatch\" "
         "width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect "
         "width=\"6\" "
         "height=\"6\" fill=\"#fafafa\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d8d8d8\" "
         "stroke-width=\"2\"/></pattern></defs></svg>";
}

// The title and what the report is of: the database, when and by what, the family and device asked for.
std::string page_header(const ReportOptions& options, const std::string& where) {
  std::string out = "<main><h1>tiletune report</h1><p class=\"tt-sub\">database <code>" +
                    esc(options.database_label.empty() ? where : options.database_label, 400) +
                    "</code>; generated " +
                    esc(options.generated_at.empty() ? sql::utc_now_iso8601() : options.generated_at, 40) +
                    " by tiletune " + TILETUNE_VERSION + " (git <code>" + TILETUNE_GIT_SHA + "</code>)";
  if (!options.family.empty()) out += "; family " + esc(options.family, 100);
  if (!options.device_name.empty()) out += "; device " + esc(options.device_name, 200);
  return out + "</p>";
}

std::string sweep_row(const SweepView& s) {
  const SweepInfo& i = s.info;
  int ok = 0;
  for (const auto& r : s.results) ok += r.record.outcome == Outcome::ok;
  std::string best_text = "-";
  if (s.winner) {
    const ResultRecord& w = s.results[*s.winner].record;
    best_text =
        ms_text(*w.median_ms) + (w.metric ? ", " + value_text(*w.metric) + " " + esc(w.metric_unit, 20) : "");
  }
  return "<tr><td><a href=\"#sweep-" + std::to_string(i.id) + "\">" + std::to_string(i.id) + "</a></td><td>" +
         esc(i.family, 80) + "</td><td>" + esc(problem_display(i.problem), 120) + "</td><td>" +
         esc(i.device.name, 120) + "</td><td>" + esc(i.kind, 20) + "</td><td>" + esc(i.status, 20) +
         "</td><td>" + esc(short_time(i.started_at), 40) + "</td><td>" +
         (i.ended_at.empty() ? "-" : esc(short_time(i.ended_at), 40)) + "</td><td class=\"tt-num\">" +
         std::to_string(static_cast<std::int64_t>(s.results.size()) + pruned_total(s.pruned)) +
         "</td><td class=\"tt-num\">" + std::to_string(ok) + "</td><td>" + best_text + "</td><td>" +
         esc(i.tiletune_version, 40) + " <code>" + esc(i.git_sha, 12) + "</code></td></tr>";
}

// Every selected sweep in one table, each linking to its section.
std::string sweeps_table(const std::vector<SweepView>& views) {
  std::string out =
      "<h2>Sweeps</h2><table "
      "class=\"tt-sweeps\"><thead><tr><th>id</th><th>family</th><th>problem</th><th>device</th>"
      "<th>kind</th><th>status</th><th>started</th><th>ended</th><th>results</th><th>ok</th><th>best</"
      "th><th>tiletune</th>"
      "</tr></thead><tbody>";
  for (const SweepView& s : views) out += sweep_row(s);
  return out + "</tbody></table>";
}

std::string sweep_section(const Store& store, const SweepView& s) {
  std::string out = "<section class=\"tt-sweep\" id=\"sweep-" + std::to_string(s.info.id) + "\"><h3>Sweep " +
                    std::to_string(s.info.id) + ": " + esc(s.info.family, 120) + " at " +
                    esc(problem_display(s.info.problem), 120) + " (" + esc(s.info.kind, 20) + ", " +
                    esc(s.info.status, 20) + ")</h3>" + provenance(s);
  out += "<div class=\"tt-row\">" + heatmap_figure(s) + distribution_figure(s) + "</div>" +
         best_so_far_figure(s, store.best_so_far(s.info.id)) + outcomes_figure(s) + "</section>";
  return out;
}

// The families of views [begin, end) (of one device, sorted): each its size chart and its sweeps' sections.
// `group_id` numbers the families over the whole page.
std::string family_sections(const Store& store, const std::vector<SweepView>& views, std::size_t begin,
                            std::size_t end, std::int64_t& group_id) {
  const std::string& device = views[begin].info.device.name;
  std::string out;
  for (std::size_t f = begin; f < end;) {
    std::size_t g = f;
    std::vector<const SweepView*> family_views;
    while (g < end && views[g].info.family == views[f].info.family) family_views.push_back(&views[g++]);
    ++group_id;
    out += "<section class=\"tt-family\" id=\"family-" + std::to_string(group_id) + "\"><h2>" +
           esc(views[f].info.family, 120) + " on " + esc(device, 200) + "</h2>";
    out += size_figure(store, family_views, group_id);
    for (const SweepView* s : family_views) out += sweep_section(store, *s);
    out += "</section>";
    f = g;
  }
  return out;
}

// A section per device (views sorted): its properties, then its families.
std::string device_sections(const Store& store, const std::vector<SweepView>& views) {
  std::string out;
  std::int64_t group_id = 0;
  for (std::size_t begin = 0; begin < views.size();) {
    const DeviceRecord& device = views[begin].info.device;
    std::size_t end = begin;
    while (end < views.size() && views[end].info.device.name == device.name &&
           views[end].info.device.uuid == device.uuid)
      ++end;
    out += "<section class=\"tt-device-section\"><h2>Device: " + esc(device.name, 200) + " (" +
           esc(device.arch, 40) + ", " + std::to_string(device.sm_count) + " SMs)</h2>" +
           device_section(device);
    out += family_sections(store, views, begin, end, group_id) + "</section>";
    begin = end;
  }
  return out;
}

}  // namespace

std::string render_report(const std::filesystem::path& database, const ReportOptions& options) {
  const Store store = Store::open(database, Store::Mode::read_only);
  const std::string where = database.string();
  const std::vector<SweepInfo> selected = selected_sweeps(store, options, where);
  std::vector<SweepView> views;
  views.reserve(selected.size());
  for (const SweepInfo& info : selected) views.push_back(view_of(store, info));
  std::stable_sort(views.begin(), views.end(), reads_before);
  std::string out = page_start();
  out += page_header(options, where);
  out += sweeps_table(views);
  out += device_sections(store, views);
  out += "</main><script>" + std::string(script) + "</script></body></html>\n";
  return out;
}

}  // namespace tiletune
