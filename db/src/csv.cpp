// CSV export and import of what the store holds: one RFC 4180 row per result that carries everything the JSON
// export does, so that a CSV export imports elsewhere as the same sweeps. db/SCHEMA.md lists the columns.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string_view>

#include "pruned.hpp"
#include "store_rows.hpp"
#include "tiletune/json_depth.hpp"
#include "tiletune/result_fields.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

namespace {

using nlohmann::json;
using rows::import_fail;
using rows::ImportedResult;
using rows::ImportedSweep;
using rows::in_quotes;

// The columns in the order the export writes them. The first 21 are those of earlier exports, so that what
// reads those by position keeps working; then the result values they lacked, the sweep's, and last the three
// JSON objects, which the export writes on a sweep's first row only (a family description is kilobytes).
// clang-format off
namespace col {
enum : std::size_t {
  sweep_uid, device, arch, family, size, args,                                      // the sweep
  params, outcome, reason, median_ms, min_ms, spread, repetitions, metric,          // the result ...
  metric_unit, error, registers, static_smem, dynamic_smem, occupancy, occupancy_limiter,
  local_bytes, spill_bytes, threads_per_block, active_blocks, active_warps, sm_clock_mhz,
  measured_at, compile_ms, measure_ms, times_ms,                                    // ... to here
  device_uuid, sm_count, is_profile, template_hash, space_hash, kind, strategy,     // the sweep
  status, started_at, ended_at, tiletune_version, git_sha, device_properties, family_description, pruned,
  count
};
}  // namespace col

constexpr std::array<std::string_view, col::count> column_names{
  "sweep_uid", "device", "arch", "family", "size", "args",
  "params", "outcome", "reason", "median_ms", "min_ms", "spread", "repetitions", "metric",
  "metric_unit", "error", "registers", "static_smem", "dynamic_smem", "occupancy", "occupancy_limiter",
  "local_bytes", "spill_bytes", "threads_per_block", "active_blocks", "active_warps", "sm_clock_mhz",
  "measured_at", "compile_ms", "measure_ms", "times_ms",
  "device_uuid", "sm_count", "is_profile", "template_hash", "space_hash", "kind", "strategy",
  "status", "started_at", "ended_at", "tiletune_version", "git_sha", "device_properties",
  "family_description", "pruned"};
// clang-format on

// The column of a result field (result_fields() names each one among column_names).
std::size_t column_of(std::string_view name) {
  for (std::size_t c = 0; c < column_names.size(); ++c)
    if (column_names[c] == name) return c;
  throw std::logic_error("csv: no column for the result field " + std::string(name));
}

constexpr bool is_result_column(std::size_t c) { return c >= col::params && c <= col::times_ms; }
// Columns that exports before schema version 2 lack (a file without them imports with no times), and the
// pruned counts that exports before version 4 lack (their pruned configurations are rows).
constexpr bool is_optional_column(std::size_t c) {
  return c == col::compile_ms || c == col::measure_ms || c == col::times_ms || c == col::pruned;
}
constexpr bool is_json_column(std::size_t c) {
  return c == col::device_properties || c == col::family_description || c == col::pruned;
}
// Where SweepRows::objects_given keeps whether a JSON column was given.
constexpr std::size_t json_index(std::size_t c) {
  return c == col::device_properties ? 0 : c == col::family_description ? 1 : 2;
}

std::optional<std::size_t> column_named(std::string_view name) {
  for (std::size_t c = 0; c < col::count; ++c)
    if (column_names[c] == name) return c;
  return std::nullopt;
}

// ---- export ----

// RFC 4180: a field with a comma, a quote or a line break is quoted, and its quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted_text = "\"";
  for (char c : text) {
    if (c == '"') quoted_text += '"';
    quoted_text += c;
  }
  return quoted_text + '"';
}

// Empty for "not measured"; like the JSON export's null, also for a value that is not finite.
template <typename T>
std::string csv_number(const std::optional<T>& value) {
  if (!value) return "";
  if constexpr (std::is_floating_point_v<T>) {
    return std::isfinite(*value) ? rows::number_text(*value) : "";
  } else {
    return std::to_string(*value);
  }
}

using Cells = std::array<std::string, col::count>;

void write_row(std::ostream& out, const Cells& cells) {
  for (std::size_t c = 0; c < col::count; ++c) out << (c == 0 ? "" : ",") << csv_field(cells[c]);
  out << "\r\n";
}

template <typename T>
std::string csv_cell(const std::optional<T>& value) {
  return csv_number(value);
}
std::string csv_cell(const std::string& value) { return value; }

void set_result_cells(Cells& cells, const StoredResult& stored) {
  const ResultRecord& r = stored.record;
  cells[col::params] = params_to_text(r.params);
  cells[col::outcome] = std::string(to_string(r.outcome));
  cells[col::reason] = r.reason;
  cells[col::repetitions] = std::to_string(r.repetitions);
  for (const ResultField& f : result_fields())
    visit_field(f, r, [&](const auto& value) { cells[column_of(f.name)] = csv_cell(value); });
  cells[col::measured_at] = stored.measured_at;
  cells[col::times_ms] = r.times_ms.empty() ? "" : rows::times_json(r.times_ms);
}

// ---- import ----

struct Field {
  std::string text;
  std::size_t line = 0;  // where the field starts; a quoted field may span lines
};

// RFC 4180 records, one at a time: fields separated by commas, records by CRLF or LF; a field in double
// quotes may hold commas, line breaks and quotes written twice. Every malformation is a one-line StoreError
// naming the line and the field.
class Reader {
 public:
  Reader(std::string_view text, std::size_t max_field_bytes)
      : text_(text), max_field_bytes_(max_field_bytes) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 byte order mark
  }

  // The header's names, for naming the fields of the rows after it.
  void set_names(std::vector<std::string> names) { names_ = std::move(names); }

  std::string place(std::size_t line, std::size_t index) const {
    std::string text = "line " + std::to_string(line) + ", field " + std::to_string(index + 1);
    if (index < names_.size()) text += " (" + names_[index] + ")";
    return text;
  }

  // Reads the next record into `fields` (at most max_fields of them); false at the end of the text.
  bool next(std::vector<Field>& fields, std::size_t max_fields) {
    if (pos_ >= text_.size()) return false;
    fields.clear();
    const std::size_t record_line = line_;
    for (;;) {
      if (fields.size() == max_fields)
        import_fail("line " + std::to_string(record_line),
                    "has more than " + std::to_string(max_fields) + " fields");
      Field& field = fields.emplace_back();
      field.line = line_;
      const std::size_t index = fields.size() - 1;
      if (pos_ < text_.size() && text_[pos_] == '"') {
        read_quoted(field, index);
      } else {
        const std::size_t end = std::min(text_.find_first_of(",\r\n\"", pos_), text_.size());
        if (end < text_.size() && text_[end] == '"')
          import_fail(place(line_, index),
                      "has a quote but does not start with one (quote the field and write its quotes twice)");
        append(field, index, text_.substr(pos_, end - pos_));
        pos_ = end;
      }
      if (pos_ >= text_.size()) break;  // the last record need not end in a line break
      const char c = text_[pos_];
      if (c == ',') {
        ++pos_;
        continue;
      }
      if (c == '\r' && (pos_ + 1 >= text_.size() || text_[pos_ + 1] != '\n'))
        import_fail(place(line_, index), "is followed by a carriage return that does not end the line");
      pos_ += c == '\r' ? 2 : 1;
      ++line_;
      break;
    }
    for (Field& field : fields)
      if (!valid_utf8(field.text)) field.text = replace_invalid_utf8(field.text);
    return true;
  }

 private:
  void append(Field& field, std::size_t index, std::string_view piece) {
    if (piece.size() > max_field_bytes_ - std::min(field.text.size(), max_field_bytes_))
      import_fail(place(field.line, index), "is longer than " + std::to_string(max_field_bytes_) + " bytes");
    field.text.append(piece);
  }

  void read_quoted(Field& field, std::size_t index) {
    ++pos_;
    for (;;) {
      const std::size_t quote = text_.find('"', pos_);
      if (quote == std::string_view::npos)
        import_fail(place(field.line, index), "opens a quote that is never closed");
      const std::string_view piece = text_.substr(pos_, quote - pos_);
      append(field, index, piece);
      line_ += static_cast<std::size_t>(std::count(piece.begin(), piece.end(), '\n'));
      pos_ = quote + 1;
      if (pos_ < text_.size() && text_[pos_] == '"') {  // a quote written twice
        append(field, index, "\"");
        ++pos_;
        continue;
      }
      break;
    }
    if (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n' &&
        !(text_[pos_] == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n'))
      import_fail(place(line_, index),
                  "has text after its closing quote (a quote inside a quoted field is written twice)");
  }

  std::string_view text_;
  std::size_t max_field_bytes_;
  std::size_t pos_ = 0, line_ = 1;
  std::vector<std::string> names_;
};

// One data row, its fields found by column.
class Row {
 public:
  Row(const Reader& reader, const std::vector<Field>& fields,
      const std::array<std::size_t, col::count>& position)
      : reader_(reader), fields_(fields), position_(position) {}

  // An optional column the header lacks reads as empty.
  const std::string& text(std::size_t c) const {
    static const std::string absent;
    return position_[c] < fields_.size() ? fields_[position_[c]].text : absent;
  }
  std::size_t line(std::size_t c) const {
    return position_[c] < fields_.size() ? fields_[position_[c]].line : line();
  }
  std::size_t line() const { return fields_.front().line; }
  std::string where(std::size_t c) const { return reader_.place(line(c), position_[c]); }
  [[noreturn]] void fail(std::size_t c, const std::string& why) const { import_fail(where(c), why); }

  // The place of a value by its key in the JSON export, as the shared checks name it.
  rows::Where where_of_key() const {
    return [this](const std::string& key) {
      static const std::map<std::string, std::size_t> renamed{
          {"uid", col::sweep_uid}, {"device.sm_count", col::sm_count}, {"family.name", col::family}};
      // An item of a list column, "times_ms[3]", is named by its column and then its index.
      const std::size_t bracket = std::min(key.find('['), key.size());
      const std::string column = key.substr(0, bracket);
      const auto it = renamed.find(column);
      const auto c = it != renamed.end() ? std::optional<std::size_t>(it->second) : column_named(column);
      return c ? where(*c) + (bracket < key.size()
                                  ? " item " + key.substr(bracket + 1, key.size() - bracket - 2)
                                  : std::string())
               : "line " + std::to_string(line());
    };
  }

  std::optional<std::int64_t> integer(std::size_t c) const {
    const std::string& t = text(c);
    if (t.empty()) return std::nullopt;
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (ec != std::errc() || end != t.data() + t.size()) fail(c, "must be an integer, got " + in_quotes(t));
    return value;
  }

  std::optional<int> optional_int(std::size_t c) const {
    const auto value = integer(c);
    if (!value) return std::nullopt;
    if (*value < std::numeric_limits<int>::min() || *value > std::numeric_limits<int>::max())
      fail(c, "is out of range");
    return static_cast<int>(*value);
  }

  // A number as the export writes it (the shortest text that reads back as the same double); infinities and
  // NaN read here, and the measurement checks refuse them with the other values out of bounds.
  std::optional<double> optional_double(std::size_t c) const {
    const std::string& t = text(c);
    if (t.empty()) return std::nullopt;
    double value = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (ec != std::errc() || end != t.data() + t.size())
      fail(c, "must be a number or empty, got " + in_quotes(t));
    return value;
  }

  // A result field's cell (see result_fields()).
  void read(std::size_t c, std::optional<int>& value) const { value = optional_int(c); }
  void read(std::size_t c, std::optional<double>& value) const { value = optional_double(c); }
  void read(std::size_t c, std::string& value) const { value = text(c); }

  // Run times as the export writes them, "[0.5,0.25]"; empty means none. Read without a JSON parser, so that
  // no field can nest.
  std::vector<double> numbers(std::size_t c) const {
    const std::string& t = text(c);
    std::vector<double> out;
    if (t.empty()) return out;
    if (t.size() < 2 || t.front() != '[' || t.back() != ']')
      fail(c, "must be a list of numbers like [0.5,0.25], got " + in_quotes(t));
    std::size_t i = 1;
    while (i < t.size() - 1) {
      const std::size_t comma = std::min(t.find(',', i), t.size() - 1);
      double value = 0;
      const char* first = t.data() + i;
      const char* last = t.data() + comma;
      const auto [end, ec] = std::from_chars(first, last, value);
      if (ec != std::errc() || end != last)
        fail(c, "item " + std::to_string(out.size()) + " is not a number: " +
                    in_quotes(std::string_view(first, static_cast<std::size_t>(last - first))));
      out.push_back(value);
      i = comma + 1;
      if (comma < t.size() - 1 && i == t.size() - 1) fail(c, "ends with a comma: " + in_quotes(t));
    }
    return out;
  }

  // A JSON object kept as compact text; empty means {}.
  std::string object_text(std::size_t c) const {
    const std::string& t = text(c);
    if (t.empty()) return "{}";
    // Deeper text would make the parser's and printer's recursion overflow the stack.
    if (json_depth(t) > kMaxJsonDepth)
      fail(c, "is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    json parsed;
    try {
      parsed = json::parse(t);
    } catch (const json::exception& e) {
      fail(c, "is not valid JSON: " + rows::shown(e.what(), 200));
    }
    if (!parsed.is_object()) fail(c, "must be a JSON object");
    return parsed.dump();
  }

 private:
  const Reader& reader_;
  const std::vector<Field>& fields_;
  const std::array<std::size_t, col::count>& position_;
};

// What the rows of one sweep have said so far. Only what the sweep does not hold as written is kept a second
// time, so that what a file costs in memory stays a small multiple of its size.
struct SweepRows {
  std::size_t index = 0;  // in the sweeps read
  Cells written;  // size, args, sm_count, is_profile, kind, status, ended_at as its first row has them
  std::array<std::size_t, col::count> lines{};  // where each sweep column was first given
  std::array<bool, 3> objects_given{};          // device_properties, family_description, pruned
  std::string pruned_text;                      // the pruned counts as given, compact JSON
  std::size_t without_results = 0;              // the line of its row without results, 0 when none
  std::size_t with_results = 0;                 // the line of its first result row, 0 when none
  std::map<std::string, std::size_t> params_lines;
};

// The sweep column that the sweep holds as written, or nullptr.
const std::string* held_as_written(const ImportedSweep& s, std::size_t c) {
  switch (c) {
    case col::sweep_uid:
      return &s.uid;
    case col::device:
      return &s.device.name;
    case col::arch:
      return &s.device.arch;
    case col::family:
      return &s.family;
    case col::device_uuid:
      return &s.device.uuid;
    case col::template_hash:
      return &s.template_hash;
    case col::space_hash:
      return &s.space_hash;
    case col::strategy:
      return &s.strategy;
    case col::started_at:
      return &s.started_at;
    case col::tiletune_version:
      return &s.tiletune_version;
    case col::git_sha:
      return &s.git_sha;
    default:
      return nullptr;
  }
}

// The pruned counts of a row's sweep; none where the column is empty.
PrunedCounts pruned_of(const Row& row) {
  if (row.text(col::pruned).empty()) return {};
  try {
    return rows::pruned_from_json(json::parse(row.object_text(col::pruned)));
  } catch (const std::invalid_argument& e) {
    row.fail(col::pruned, e.what());
  }
}

// A later row of a sweep says what its first row said. The JSON objects, which the export writes on a sweep's
// first row only, may come on any row (rows sorted otherwise) or none; the rows that have them agree.
void check_same_sweep(const Row& row, ImportedSweep& sweep, SweepRows& earlier) {
  for (std::size_t c = 0; c < col::count; ++c) {
    if (is_result_column(c)) continue;
    const std::string& text = row.text(c);
    const auto differs = [&](const std::string& before) {
      row.fail(c, "is " + in_quotes(text) + ", but line " + std::to_string(earlier.lines[c]) +
                      " of the same sweep has " + in_quotes(before));
    };
    if (is_json_column(c)) {
      if (text.empty()) continue;
      std::string& held = c == col::device_properties    ? sweep.device.properties_json
                          : c == col::family_description ? sweep.description_json
                                                         : earlier.pruned_text;
      std::string object = row.object_text(c);
      if (!earlier.objects_given[json_index(c)]) {
        if (c == col::pruned) sweep.pruned = pruned_of(row);
        held = std::move(object);
        earlier.objects_given[json_index(c)] = true;
        earlier.lines[c] = row.line(c);
      } else if (object != held) {
        differs(held);
      }
      continue;
    }
    const std::string* held = held_as_written(sweep, c);
    const std::string& before = held != nullptr ? *held : earlier.written[c];
    if (text != before) differs(before);
  }
}

ImportedSweep read_sweep(const Row& row) {
  ImportedSweep s;
  s.uid = row.text(col::sweep_uid);
  s.device.name = row.text(col::device);
  s.device.uuid = row.text(col::device_uuid);
  s.device.arch = row.text(col::arch);
  if (row.text(col::sm_count).empty()) row.fail(col::sm_count, "is missing");
  const std::int64_t sm_count = *row.integer(col::sm_count);
  if (sm_count < 1 || sm_count > std::numeric_limits<int>::max())
    row.fail(col::sm_count, "must be a positive integer, got " + std::to_string(sm_count));
  s.device.sm_count = static_cast<int>(sm_count);
  const std::string& profile = row.text(col::is_profile);
  if (profile != "" && profile != "true" && profile != "false")
    row.fail(col::is_profile, "must be true or false, got " + in_quotes(profile));
  s.device.is_profile = profile == "true";
  s.device.properties_json = row.object_text(col::device_properties);
  s.family = row.text(col::family);
  s.template_hash = row.text(col::template_hash);
  s.description_json = row.object_text(col::family_description);
  s.pruned = pruned_of(row);
  try {
    s.problem.dims = parse_size_text(row.text(col::size));
  } catch (const std::invalid_argument& e) {
    row.fail(col::size, "is not a size: " + rows::shown(e.what(), 200));
  }
  try {
    s.problem.args = parse_args_text(row.text(col::args));
  } catch (const std::invalid_argument& e) {
    row.fail(col::args, "is not problem arguments: " + rows::shown(e.what(), 200));
  }
  s.space_hash = row.text(col::space_hash);
  // Empty as the JSON export's absent keys: a measured sweep that is done.
  s.kind = row.text(col::kind).empty() ? "sweep" : row.text(col::kind);
  s.strategy = row.text(col::strategy);
  s.status = row.text(col::status).empty() ? "done" : row.text(col::status);
  s.started_at = row.text(col::started_at);
  if (!row.text(col::ended_at).empty()) s.ended_at = row.text(col::ended_at);
  s.tiletune_version = row.text(col::tiletune_version);
  s.git_sha = row.text(col::git_sha);
  rows::check_sweep(s, row.where_of_key());
  return s;
}

ImportedResult read_result(const Row& row, const ImportedSweep& sweep) {
  ImportedResult imported;
  ResultRecord& r = imported.record;
  try {
    r.params = params_from_text(row.text(col::params));
  } catch (const std::invalid_argument& e) {
    row.fail(col::params, "is not NAME=INTEGER pairs: " + rows::shown(e.what(), 200));
  }
  const auto outcome = outcome_from_string(row.text(col::outcome));
  if (!outcome) row.fail(col::outcome, in_quotes(row.text(col::outcome)) + " is not an outcome name");
  r.outcome = *outcome;
  r.reason = row.text(col::reason);
  const std::int64_t repetitions = row.integer(col::repetitions).value_or(0);
  if (repetitions < 0 || repetitions > std::numeric_limits<int>::max())
    row.fail(col::repetitions, "is out of range");
  r.repetitions = static_cast<int>(repetitions);
  for (const ResultField& f : result_fields())
    visit_field(f, r, [&](auto& value) { row.read(column_of(f.name), value); });
  r.times_ms = row.numbers(col::times_ms);
  // Empty as the JSON export's absent key: measured when the sweep started.
  imported.measured_at = row.text(col::measured_at).empty() ? sweep.started_at : row.text(col::measured_at);
  rows::check_measurement(r, sweep.kind == "sweep", row.where_of_key());
  return imported;
}

// The header names every column once, in any order.
std::array<std::size_t, col::count> read_header(Reader& reader, const std::vector<Field>& header) {
  std::array<std::size_t, col::count> position;
  position.fill(col::count);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < header.size(); ++i) {
    const std::string& name = header[i].text;
    const auto c = column_named(name);
    if (!c)
      import_fail(reader.place(1, i),
                  "is " + in_quotes(name) +
                      ", which is not a column of a tiletune CSV export (read as CSV: a JSON "
                      "export starts with '{')");
    if (position[*c] != col::count)
      import_fail(reader.place(1, i),
                  "repeats column " + in_quotes(name) + " (field " + std::to_string(position[*c] + 1) + ")");
    position[*c] = i;
    names.push_back(name);
  }
  std::string missing;
  for (std::size_t c = 0; c < col::count; ++c)
    if (position[c] == col::count && !is_optional_column(c))
      missing += std::string(missing.empty() ? "" : ", ") + std::string(column_names[c]);
  // An export by an older tiletune has just the first 21 columns, and cannot come back without the others.
  if (!missing.empty())
    import_fail("line 1", "lacks the column(s) " + missing + " of a tiletune CSV export" +
                              (header.size() == 21 && position[col::occupancy_limiter] == 20
                                   ? " (written by an older tiletune: export it again with this one)"
                                   : ""));
  reader.set_names(std::move(names));
  return position;
}

struct ReadCsv {
  std::vector<ImportedSweep> sweeps;
  std::vector<std::string> places;  // "line 3 (sweep 'UID')" for each sweep
};

// A data row has as many fields as the header, and is not one row more than a CSV import reads.
void check_data_row(const std::vector<Field>& fields, std::size_t columns, std::size_t rows_read,
                    std::size_t max_rows) {
  const std::size_t line = fields.front().line;
  if (fields.size() == 1 && fields.front().text.empty())
    import_fail("line " + std::to_string(line), "is empty");
  if (fields.size() != columns)
    import_fail("line " + std::to_string(line),
                "has " + std::to_string(fields.size()) + " fields, the header " + std::to_string(columns));
  if (rows_read > max_rows)
    import_fail("line " + std::to_string(line),
                "is one row more than the " + std::to_string(max_rows) + " a CSV import reads");
}

// What the first row of a sweep says, as later rows of it are held to.
SweepRows first_sweep_row(const Row& row, const ImportedSweep& sweep, std::size_t index) {
  SweepRows first;
  first.index = index;
  for (std::size_t c = 0; c < col::count; ++c) {
    if (is_result_column(c)) continue;
    first.lines[c] = row.line(c);
    if (!is_json_column(c) && held_as_written(sweep, c) == nullptr) first.written[c] = row.text(c);
  }
  first.objects_given = {!row.text(col::device_properties).empty(),
                         !row.text(col::family_description).empty(), !row.text(col::pruned).empty()};
  if (first.objects_given[2]) first.pruned_text = row.object_text(col::pruned);
  return first;
}

// The sweep columns: read on the sweep's first row, the same on every other. Returns the sweep's rows so far.
SweepRows& sweep_of_row(const Row& row, ReadCsv& read, std::map<std::string, SweepRows>& by_uid,
                        std::size_t max_sweeps) {
  const std::string& uid = row.text(col::sweep_uid);
  if (const auto found = by_uid.find(uid); found != by_uid.end()) {
    check_same_sweep(row, read.sweeps[found->second.index], found->second);
    return found->second;
  }
  const std::size_t line = row.line();
  if (read.sweeps.size() == max_sweeps)
    import_fail("line " + std::to_string(line),
                "starts one sweep more than the " + std::to_string(max_sweeps) + " a CSV import reads");
  read.sweeps.push_back(read_sweep(row));
  read.places.push_back("line " + std::to_string(line) + " (sweep " + in_quotes(uid) + ")");
  return by_uid.emplace(uid, first_sweep_row(row, read.sweeps.back(), read.sweeps.size() - 1)).first->second;
}

// A row without an outcome stands for a sweep without results: no result column set, and the sweep's only
// row.
void read_row_without_results(const Row& row, SweepRows& seen) {
  for (std::size_t c = col::params; c <= col::times_ms; ++c)
    if (!row.text(c).empty())
      row.fail(c, "is set on a row without an outcome (such a row stands for a sweep without results)");
  if (seen.with_results != 0)
    row.fail(col::outcome, "is empty, but the sweep has results (line " + std::to_string(seen.with_results) +
                               "): only a sweep without results has a row without an outcome");
  if (seen.without_results != 0)
    row.fail(col::outcome, "is empty, as on line " + std::to_string(seen.without_results) +
                               ": a sweep without results has one such row");
  seen.without_results = row.line();
}

// A row with an outcome: one result of the sweep, its params not those of another.
void read_result_row(const Row& row, ImportedSweep& sweep, SweepRows& seen) {
  const std::size_t line = row.line();
  if (seen.without_results != 0)
    row.fail(col::outcome, "is set, but line " + std::to_string(seen.without_results) +
                               " says the sweep has no results (its outcome is empty)");
  if (seen.with_results == 0) seen.with_results = line;
  sweep.results.push_back(read_result(row, sweep));
  const auto [it, added] =
      seen.params_lines.emplace(params_to_text(sweep.results.back().record.params), line);
  if (!added)
    row.fail(col::params, "repeats the params of line " + std::to_string(it->second) + " of the same sweep");
}

ReadCsv read_csv(const std::string& text, const CsvImportLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw StoreError("import: the text is " + std::to_string(text.size()) + " bytes, more than the " +
                     std::to_string(limits.max_bytes) + " a CSV import reads");
  Reader reader(text, limits.max_field_bytes);
  std::vector<Field> fields;
  // Twice the columns: a header with more than col::count names repeats one or has an unknown one, which
  // read_header names.
  if (!reader.next(fields, 2 * col::count))
    throw StoreError("import: the text is empty, without the header row of a CSV export");
  const auto position = read_header(reader, fields);
  const std::size_t columns = fields.size();

  ReadCsv read;
  std::map<std::string, SweepRows> by_uid;
  std::size_t rows_read = 0;
  while (reader.next(fields, columns)) {
    check_data_row(fields, columns, ++rows_read, limits.max_rows);
    const Row row(reader, fields, position);
    if (row.text(col::sweep_uid).empty()) row.fail(col::sweep_uid, "is empty");
    SweepRows& seen = sweep_of_row(row, read, by_uid, limits.max_sweeps);
    // The result columns: one result, or none at all for a sweep without results.
    if (row.text(col::outcome).empty())
      read_row_without_results(row, seen);
    else
      read_result_row(row, read.sweeps[seen.index], seen);
  }
  return read;
}

}  // namespace

void Store::export_csv(std::ostream& out, const std::string& family, const std::string& device_name) const {
  const sql::Db& db = impl_->db;
  for (std::size_t c = 0; c < col::count; ++c) out << (c == 0 ? "" : ",") << column_names[c];
  out << "\r\n";
  std::map<std::pair<std::string, std::string>, std::string> descriptions;
  for (const SweepInfo& s : rows::sweeps_for_export(db, family, device_name)) {
    Cells cells;
    cells[col::sweep_uid] = s.uid;
    cells[col::device] = s.device.name;
    cells[col::arch] = s.device.arch;
    cells[col::family] = s.family;
    cells[col::size] = s.problem.size_text();
    cells[col::args] = s.problem.args_text();
    cells[col::device_uuid] = s.device.uuid;
    cells[col::sm_count] = std::to_string(s.device.sm_count);
    cells[col::is_profile] = s.device.is_profile ? "true" : "false";
    cells[col::template_hash] = s.template_hash;
    cells[col::space_hash] = s.space_hash;
    cells[col::kind] = s.kind;
    cells[col::strategy] = s.strategy;
    cells[col::status] = s.status;
    cells[col::started_at] = s.started_at;
    cells[col::ended_at] = s.ended_at;
    cells[col::tiletune_version] = s.tiletune_version;
    cells[col::git_sha] = s.git_sha;
    cells[col::device_properties] = rows::object_text_or_empty(s.device.properties_json);
    auto key = std::make_pair(s.family, s.template_hash);
    auto description = descriptions.find(key);
    if (description == descriptions.end())
      description =
          descriptions
              .emplace(key,
                       rows::object_text_or_empty(rows::family_description(db, s.family, s.template_hash)))
              .first;
    cells[col::family_description] = description->second;
    const PrunedCounts pruned = rows::select_pruned(db, s.id);
    cells[col::pruned] = pruned.empty() ? "" : rows::pruned_json(pruned).dump();
    const std::vector<StoredResult> results = rows::select_results(db, s.id);
    // A sweep without results is one row whose result columns are empty, so that it comes back on import.
    if (results.empty()) write_row(out, cells);
    for (const StoredResult& stored : results) {
      set_result_cells(cells, stored);
      write_row(out, cells);
      cells[col::device_properties].clear();
      cells[col::family_description].clear();
      cells[col::pruned].clear();
    }
  }
  if (!out) throw StoreError("export_csv: writing the output failed");
}

ImportSummary Store::import_csv(const std::string& text, const CsvImportLimits& limits) {
  const ReadCsv read = read_csv(text, limits);
  return rows::write_imported(
      impl_->db, read.sweeps,
      [&read](std::size_t i, const std::string& part) {
        return read.places[i] + (part.empty() ? "" : ", " + part);
      },
      impl_->import_check);
}

}  // namespace tiletune
