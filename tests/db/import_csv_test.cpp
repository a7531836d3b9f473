// Store::import_csv: a CSV export imports elsewhere as the same sweeps, and hostile text fails in one line
// naming the line and the field, leaving the database as it was.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_support.hpp"
#include "tiletune/client.hpp"

namespace tiletune {
namespace {

using nlohmann::json;
using test::failed;
using test::h100;
using test::ok;
using test::row_counts;
using test::spec;
using test::without_export_time;
using Table = std::vector<std::vector<std::string>>;

const DeviceRecord odd_device = test::device(R"(Lab "GPU" \ #2, rev. é)", "GPU-odd", "sm_89");
const std::string awkward_reason = "bad, \"quoted\" text";
// Spans three lines of the file, with a CRLF, a control character and a tab inside its quotes.
const std::string multi_line_reason = "first line\r\nsecond, \"line\"\nthird \x01\ttab";

// Five sweeps: every kind of row the export writes. Line numbers of the export, header on line 1:
//   2-5   gemm_tiled at 1000^3, done: ok 0.3 ms (sparse), ok 1 ms, pruned, compile_failed
//   6-9   conv1d on a profile with an awkward name, interrupted: ok 0.25 ms (6), runtime_failed (7-9)
//   10    gemm_tiled at 2000^3, still running: ok 7.5 ms
//   11    a plan without results
//   12    a plan whose ok result has no time
void fill(Store& store) {
  const std::int64_t a = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  ResultRecord sparse = ok({{"TILE", 64}, {"BLOCK_Y", -1}}, 0.1 + 0.2);
  sparse.min_ms.reset();
  sparse.metric = 5e-324;
  sparse.error.reset();
  sparse.registers.reset();
  sparse.sm_clock_mhz = 123456.789012345;
  store.add_results(a, {ok({{"TILE", 32}, {"BLOCK_Y", 8}}, 1.0), sparse,
                        failed({{"TILE", 8}, {"BLOCK_Y", 8}}, Outcome::compile_failed, awkward_reason),
                        failed({{"TILE", 4}, {"BLOCK_Y", 8}}, Outcome::pruned, "smem 99000 > 49152")});
  store.finish_sweep(a, "done");
  SweepSpec profile = spec("conv1d", odd_device, {1 << 20}, {{"mask_width", 5}});
  profile.device.is_profile = true;
  profile.strategy = "random";
  profile.family_json =
      R"({"name": "conv1d", "parameters": {"TILE": {"values": [128, 256]}}, "note": "a, \"b\""})";
  const std::int64_t b = store.begin_sweep(profile);
  store.add_results(
      b, {ok({{"TILE", 256}}, 0.25), failed({{"TILE", 128}}, Outcome::runtime_failed, multi_line_reason)});
  store.finish_sweep(b, "interrupted");
  const std::int64_t c = store.begin_sweep(spec("gemm_tiled", h100, {2000, 2000, 2000}));
  store.add_results(c, {ok({{"TILE", 64}, {"BLOCK_Y", 8}}, 7.5)});
  SweepSpec plan = spec("gemm_tiled", h100, {64, 64, 64});
  plan.kind = "plan";
  store.add_sweep(plan, {});
  SweepSpec measured_plan = spec("gemm_tiled", h100, {128, 128, 128});
  measured_plan.kind = "plan";
  ResultRecord runnable;
  runnable.params = {{"TILE", 16}, {"BLOCK_Y", 4}};
  runnable.reason = "planned: runnable, not measured";
  runnable.registers = 32;
  store.add_sweep(measured_plan, {runnable});
}

std::string csv_of(const Store& store, const std::string& family = "") {
  std::ostringstream out;
  store.export_csv(out, family);
  return out.str();
}

std::size_t column(const Table& table, const std::string& name) {
  const auto& header = table.front();
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) throw std::logic_error("no column " + name);
  return static_cast<std::size_t>(it - header.begin());
}

// The row of the table that starts on `line` of the file (see fill: the field on lines 7 to 9).
std::size_t row_at(std::size_t line) {
  if (line == 8 || line == 9) throw std::logic_error("line inside a quoted field");
  return line <= 7 ? line - 1 : line - 3;
}

// The store's CSV with one cell changed, in the row that starts on `line` of the file.
std::function<std::string(Table)> set(std::size_t line, const std::string& name, const std::string& value) {
  return [=](Table t) {
    t.at(row_at(line)).at(column(t, name)) = value;
    return test::write_csv(t);
  };
}

class ImportCsv : public ::testing::Test {
 protected:
  test::TempDir dir;
  Store source = Store::open(dir / "source.db");
  void SetUp() override { fill(source); }
};

TEST_F(ImportCsv, RoundTripGivesTheSameJsonAsTheOriginal) {
  const std::string csv = csv_of(source);
  ASSERT_EQ(test::parse_csv(csv).size(), 10u);  // header, 8 results, the plan without results
  Store copy = Store::open(dir / "copy.db");
  const ImportSummary summary = copy.import_csv(csv);
  EXPECT_EQ(summary.sweeps_added, 5);
  EXPECT_EQ(summary.sweeps_skipped, 0);
  EXPECT_EQ(summary.results_added, 8);
  EXPECT_EQ(without_export_time(copy.export_json()), without_export_time(source.export_json()));
  EXPECT_EQ(csv_of(copy), csv);  // and the CSV is the same, byte for byte
  const auto original = source.sweeps();
  const auto imported = copy.sweeps();
  ASSERT_EQ(imported.size(), original.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    EXPECT_EQ(imported[i].uid, original[i].uid);
    EXPECT_EQ(imported[i].device.uuid, original[i].device.uuid);
    EXPECT_EQ(imported[i].result_count, original[i].result_count);
  }
  // The description came along: the client answers with the family's defaults for an unknown device.
  const auto client = Client::open(dir / "copy.db");
  ASSERT_TRUE(client.has_value());
  EXPECT_EQ(client->best({"gemm_tiled", "Some GPU", "sm_120", ProblemKey{{1000, 1000, 1000}, {}}}).params,
            (Params{{"TILE", 16}, {"BLOCK_Y", 4}}));
  EXPECT_EQ(copy.best("gemm_tiled", h100.name, ProblemKey{{1000, 1000, 1000}, {}})->record.median_ms,
            0.1 + 0.2);
  EXPECT_TRUE(copy.integrity_ok());
}

TEST_F(ImportCsv, ImportingTwiceSkipsWhatIsThere) {
  const std::string csv = csv_of(source);
  Store copy = Store::open(dir / "copy.db");
  copy.import_csv(csv);
  const auto before = row_counts(dir / "copy.db");
  const json dump_before = without_export_time(copy.export_json());
  const ImportSummary again = copy.import_csv(csv);
  EXPECT_EQ(again.sweeps_added, 0);
  EXPECT_EQ(again.sweeps_skipped, 5);
  EXPECT_EQ(again.results_added, 0);
  EXPECT_EQ(row_counts(dir / "copy.db"), before);
  EXPECT_EQ(without_export_time(copy.export_json()), dump_before);
  // Into the database it came from, and the JSON export of the same sweeps: nothing new either.
  EXPECT_EQ(source.import_csv(csv).sweeps_skipped, 5);
  EXPECT_EQ(copy.import_json(source.export_json()).sweeps_skipped, 5);
  // A filtered export adds its sweeps to a database that lacks them, and only those.
  Store third = Store::open(dir / "third.db");
  EXPECT_EQ(third.import_csv(csv_of(source, "conv1d")).sweeps_added, 1);
  EXPECT_EQ(third.import_csv(csv).sweeps_added, 4);
  EXPECT_EQ(without_export_time(third.export_json()), without_export_time(source.export_json()));
}

// What an editor or a spreadsheet may do to the file without changing its content.
TEST_F(ImportCsv, TakesLineFeedsAByteOrderMarkReorderedColumnsAndRows) {
  const std::string csv = csv_of(source);
  const json expected = without_export_time(source.export_json());
  Table table = test::parse_csv(csv);
  std::string no_final_break = csv;
  no_final_break.resize(no_final_break.size() - 2);
  Table reordered = table;
  for (auto& row : reordered) std::reverse(row.begin(), row.end());
  Table interleaved = table;
  // A row of the second sweep between two of the first, before the row that carries its JSON objects.
  std::swap(interleaved[2], interleaved[6]);
  const std::pair<const char*, std::string> variants[] = {
      {"line feeds", test::write_csv(table, "\n")},
      {"byte order mark", "\xEF\xBB\xBF" + csv},
      {"no final line break", no_final_break},
      {"columns reversed", test::write_csv(reordered)},
      {"rows interleaved", test::write_csv(interleaved)},
  };
  for (const auto& [name, text] : variants) {
    SCOPED_TRACE(name);
    test::TempDir other;
    Store copy = Store::open(other / "copy.db");
    EXPECT_EQ(copy.import_csv(text).sweeps_added, 5);
    EXPECT_EQ(without_export_time(copy.export_json()), expected);
  }
}

// Invalid UTF-8 becomes U+FFFD, so that the JSON export (which needs valid UTF-8) still works; control
// characters are kept, and escaped where a message shows them.
TEST_F(ImportCsv, ReplacesInvalidUtf8AndKeepsControlCharacters) {
  Table table = test::parse_csv(csv_of(source));
  table[4][column(table, "reason")] = "bad \xFF\xC0 bytes \x1b[31m";
  Store copy = Store::open(dir / "copy.db");
  ASSERT_EQ(copy.import_csv(test::write_csv(table)).sweeps_added, 5);
  const json doc = json::parse(copy.export_json());
  EXPECT_EQ(doc["sweeps"][0]["results"][3]["reason"], "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes \x1b[31m");

  table[0][column(table, "reason")] = "reason\x1b[2J\xFF";
  try {
    Store::open(dir / "other.db").import_csv(test::write_csv(table));
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(
        std::string(e.what()).find("line 1, field 9 is 'reason\\x1b[2J\xEF\xBF\xBD', which is not a column"),
        std::string::npos)
        << e.what();
  }
}

struct BadCsv {
  const char* name;
  std::function<std::string(Table)> make;
  const char* expected;
};

// A hostile CSV made by changing the valid export's text, or its table of fields.
std::function<std::string(Table)> edit_text(std::function<std::string(std::string)> change) {
  return [change](Table t) { return change(test::write_csv(t)); };
}
std::function<std::string(Table)> edit_table(std::function<void(Table&)> change) {
  return [change](Table t) {
    change(t);
    return test::write_csv(t);
  };
}

// Hostile CSV: the shape of the file.
std::vector<BadCsv> bad_csv_shapes() {
  return {
      {"empty", [](Table) { return std::string(); }, "import: the text is empty, without the header row"},
      {"only a byte order mark", [](Table) { return std::string("\xEF\xBB\xBF"); }, "the text is empty"},
      {"JSON-like", [](Table) { return std::string("[1, 2]"); },
       "import: line 1, field 1 is '[1', which is not a column of a tiletune CSV export"},
      {"unknown column", edit_table([](Table& t) { t[0][8] = "why"; }),
       "import: line 1, field 9 is 'why', which is not a column of a tiletune CSV export"},
      {"repeated column", edit_table([](Table& t) { t[0][8] = "params"; }),
       "import: line 1, field 9 repeats column 'params' (field 7)"},
      {"missing columns", edit_table([](Table& t) {
         for (auto& row : t) row.resize(43);
       }),
       "import: line 1 lacks the column(s) device_properties, family_description of a tiletune CSV export"},
      {"an older export", edit_table([](Table& t) {
         for (auto& row : t) row.resize(21);
       }),
       "lacks the column(s) local_bytes, spill_bytes, threads_per_block, active_blocks, active_warps, "
       "sm_clock_mhz, "
       "measured_at, device_uuid, sm_count, is_profile, template_hash, space_hash, kind, strategy, status, "
       "started_at, ended_at, tiletune_version, git_sha, device_properties, family_description of a tiletune "
       "CSV "
       "export (written by an older tiletune: export it again with this one)"},
      {"a header of 200 columns", edit_table([](Table& t) { t[0].resize(200, "x"); }),
       "line 1 has more than 92 fields"},
      {"short row", edit_table([](Table& t) { t[2].pop_back(); }),
       "import: line 3 has 45 fields, the header 46"},
      {"long row", edit_table([](Table& t) { t[2].push_back("x"); }),
       "import: line 3 has more than 46 fields"},
      {"empty line", edit_text([](std::string s) { return s.insert(s.find("\r\n") + 2, "\r\n"); }),
       "import: line 2 is empty"},
      {"trailing empty line", edit_text([](std::string s) { return s + "\r\n"; }),
       "import: line 13 is empty"},
      {"unterminated quote", edit_text([](std::string s) { return s + "\"abc,def\r\n"; }),
       "import: line 13, field 1 (sweep_uid) opens a quote that is never closed"},
      {"unterminated quote in a later field", edit_text([](std::string s) { return s + "abc,\"def,,\r\n"; }),
       "import: line 13, field 2 (device) opens a quote that is never closed"},
      {"bare quote inside a field",
       edit_text([](std::string s) { return s.replace(s.find(",pruned,") + 8, 4, "sm\"e"); }),
       "import: line 4, field 9 (reason) has a quote but does not start with one"},
      {"text after a closing quote",
       edit_text([](std::string s) { return s.replace(s.find("\"bad, "), 1, "\"x\"bad, "); }),
       "import: line 5, field 9 (reason) has text after its closing quote"},
      {"carriage return alone",
       edit_text([](std::string s) { return s.replace(s.find(",pruned,") + 8, 1, std::string(1, '\r')); }),
       "import: line 4, field 9 (reason) is followed by a carriage return that does not end the line"},
  };
}

// Hostile CSV: a sweep is the same on each of its rows, and its values.
std::vector<BadCsv> bad_csv_sweeps() {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  return {
      {"contradicting device", set(3, "device", "Another GPU"),
       "import: line 3, field 2 (device) is 'Another GPU', but line 2 of the same sweep has 'NVIDIA H100 "
       "80GB "
       "HBM3'"},
      {"contradicting start", set(4, "started_at", "2020-01-01T00:00:00.000Z"),
       "import: line 4, field 40 (started_at) is '2020-01-01T00:00:00.000Z', but line 2 of the same sweep "
       "has"},
      {"contradicting properties", set(5, "device_properties", "{\"clock_khz\": 1}"),
       "import: line 5, field 44 (device_properties) is '{\"clock_khz\": 1}', but line 2 of the same sweep "
       "has"},
      {"repeated params", set(3, "params", "BLOCK_Y=-1,TILE=64"),
       "import: line 3, field 7 (params) repeats the params of line 2 of the same sweep"},
      {"repeated params, spelled otherwise", set(3, "params", " TILE = 64 , BLOCK_Y=-1"),
       "repeats the params of line 2"},
      // Sweep values.
      {"empty uid", set(2, "sweep_uid", ""), "import: line 2, field 1 (sweep_uid) is empty"},
      {"unknown kind", set(11, "kind", "guess"),
       "import: line 11, field 37 (kind) 'guess' is not sweep or plan"},
      {"unknown status", set(10, "status", "fine"),
       "import: line 10, field 39 (status) 'fine' is not running, done or interrupted"},
      {"no SMs", set(10, "sm_count", "0"),
       "import: line 10, field 33 (sm_count) must be a positive integer, got 0"},
      {"SM count missing", set(10, "sm_count", ""), "import: line 10, field 33 (sm_count) is missing"},
      {"SM count text", set(10, "sm_count", "132 SMs"), "(sm_count) must be an integer, got '132 SMs'"},
      {"profile flag", set(10, "is_profile", "yes"),
       "import: line 10, field 34 (is_profile) must be true or false, got 'yes'"},
      {"no device name", set(10, "device", ""), "import: line 10, field 2 (device) needs a name and a uuid"},
      {"no device uuid", set(10, "device_uuid", ""),
       "import: line 10, field 2 (device) needs a name and a uuid"},
      {"no family", set(10, "family", ""), "import: line 10, field 4 (family) is empty"},
      {"no start", set(10, "started_at", ""), "import: line 10, field 40 (started_at) is empty"},
      {"bad size", set(10, "size", "0x5"),
       "import: line 10, field 5 (size) is not a size: size must be positive"},
      {"bad args", set(10, "args", "bogus"),
       "import: line 10, field 6 (args) is not problem arguments: args must be"},
      {"properties not JSON", set(10, "device_properties", "{\"a\": "),
       "import: line 10, field 44 (device_properties) is not valid JSON: "},
      {"properties not an object", set(10, "device_properties", "[1]"),
       "import: line 10, field 44 (device_properties) must be a JSON object"},
      {"description nested deep", set(10, "family_description", "{\"x\": " + deep + "}"),
       "import: line 10, field 45 (family_description) is nested deeper than 64 levels"},
  };
}

// Hostile CSV: result values, held to what a measurement produces.
std::vector<BadCsv> bad_csv_results() {
  return {
      {"unknown outcome", set(3, "outcome", "exploded"),
       "import: line 3, field 8 (outcome) 'exploded' is not an outcome name"},
      {"bad params", set(3, "params", "TILE=x"),
       "import: line 3, field 7 (params) is not NAME=INTEGER pairs: params must be NAME=INTEGER pairs"},
      {"bad param name", set(3, "params", "2D=1"), "'2D' is not a C identifier"},
      {"negative time", set(10, "median_ms", "-1"),
       "import: line 10, field 10 (median_ms) must be a positive, finite time in ms, got -1"},
      {"zero time", set(3, "median_ms", "0"),
       "import: line 3, field 10 (median_ms) must be a positive, finite time"},
      {"infinite time", set(3, "median_ms", "inf"),
       "(median_ms) must be a positive, finite time in ms, got inf"},
      {"NaN time", set(3, "median_ms", "nan"), "(median_ms) must be a positive, finite time in ms, got nan"},
      {"text time", set(3, "median_ms", "fast"),
       "import: line 3, field 10 (median_ms) must be a number or empty, got 'fast'"},
      {"time out of range", set(3, "median_ms", "1e999"),
       "(median_ms) must be a number or empty, got '1e999'"},
      {"time with a plus", set(3, "median_ms", "+1"), "(median_ms) must be a number or empty, got '+1'"},
      {"time with spaces", set(3, "median_ms", " 1"), "(median_ms) must be a number or empty"},
      {"minimum above median", set(10, "min_ms", "8"),
       "import: line 10, field 11 (min_ms) is larger than median_ms (8 > 7.5)"},
      {"negative spread", set(3, "spread", "-0.1"), "(spread) must be non-negative and finite"},
      {"negative metric", set(3, "metric", "-3"), "(metric) must be non-negative"},
      {"negative error", set(3, "error", "-1e-7"), "(error) must be non-negative"},
      {"zero clock", set(3, "sm_clock_mhz", "0"), "(sm_clock_mhz) must be positive and finite"},
      {"occupancy above one", set(3, "occupancy", "1.5"),
       "import: line 3, field 20 (occupancy) must be between 0 and 1, got 1.5"},
      {"negative registers", set(3, "registers", "-4"),
       "import: line 3, field 17 (registers) must not be negative, got -4"},
      {"registers out of range", set(3, "registers", "99999999999"), "(registers) is out of range"},
      {"fractional registers", set(3, "registers", "40.5"), "(registers) must be an integer, got '40.5'"},
      {"negative shared memory", set(4, "static_smem", "-1"),
       "import: line 4, field 18 (static_smem) must not be negative"},
      {"negative spill", set(4, "spill_bytes", "-1"), "(spill_bytes) must not be negative"},
      {"negative warps", set(4, "active_warps", "-1"), "(active_warps) must not be negative"},
      {"ok time from no run", set(10, "repetitions", "0"),
       "import: line 10, field 13 (repetitions) must be at least 1 for an ok result with a time, got 0"},
      {"negative repetitions", set(4, "repetitions", "-2"),
       "import: line 4, field 13 (repetitions) is out of range"},
      {"measured ok without time", set(10, "median_ms", ""),
       "import: line 10, field 10 (median_ms) is missing: an ok result of a measured sweep has a time"},
  };
}

// Hostile CSV: rows without results.
std::vector<BadCsv> bad_csv_rows_without_results() {
  return {
      {"a value on a row without outcome", set(11, "median_ms", "1"),
       "import: line 11, field 10 (median_ms) is set on a row without an outcome"},
      {"a row without outcome in a sweep with results", set(3, "outcome", ""),
       "import: line 3, field 7 (params) is set on a row without an outcome"},
      {"an empty row in a sweep with results", edit_table([](Table& t) {
         for (std::size_t c = column(t, "params"); c <= column(t, "measured_at"); ++c) t[2][c] = "";
       }),
       "import: line 3, field 8 (outcome) is empty, but the sweep has results (line 2)"},
      {"a result after an empty row", edit_table([](Table& t) {
         auto row = t[1];
         const auto& plan = t[row_at(11)];
         for (const char* name : {"sweep_uid", "device", "arch", "family", "size", "args"})
           row[column(t, name)] = plan[column(t, name)];
         for (std::size_t c = column(t, "device_uuid"); c < row.size(); ++c) row[c] = plan[c];
         t.push_back(row);
       }),
       "import: line 13, field 8 (outcome) is set, but line 11 says the sweep has no results"},
      {"two empty rows", edit_table([](Table& t) { t.push_back(t[row_at(11)]); }),
       "import: line 13, field 8 (outcome) is empty, as on line 11: a sweep without results has one such "
       "row"},

  };
}

std::vector<BadCsv> bad_csvs() {
  std::vector<BadCsv> all;
  for (auto group : {bad_csv_shapes(), bad_csv_sweeps(), bad_csv_results(), bad_csv_rows_without_results()})
    all.insert(all.end(), group.begin(), group.end());
  return all;
}

TEST_F(ImportCsv, HostileTextThrowsOneLineAndChangesNothing) {
  const Table valid = test::parse_csv(csv_of(source));
  const auto target_path = dir / "target.db";
  Store target = Store::open(target_path);
  const std::int64_t own = target.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64}));
  target.add_results(own, {ok({{"TILE", 8}}, 0.05)});
  const json dump_before = without_export_time(target.export_json());
  const auto counts_before = row_counts(target_path);
  const std::string bytes_before = test::read_bytes(target_path);
  const std::string wal_before = test::read_bytes(target_path.string() + "-wal");

  for (const BadCsv& bad : bad_csvs()) {
    SCOPED_TRACE(bad.name);
    const std::string text = bad.make(valid);
    try {
      target.import_csv(text);
      ADD_FAILURE() << "no StoreError";
    } catch (const StoreError& e) {
      EXPECT_TRUE(test::one_line(e.what())) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.expected), std::string::npos) << e.what();
    }
    EXPECT_EQ(test::read_bytes(target_path), bytes_before);
    EXPECT_EQ(test::read_bytes(target_path.string() + "-wal"), wal_before);
  }
  EXPECT_EQ(without_export_time(target.export_json()), dump_before);
  EXPECT_EQ(row_counts(target_path), counts_before);
  // The valid file still imports afterwards.
  EXPECT_EQ(target.import_csv(test::write_csv(valid)).sweeps_added, 5);
}

TEST_F(ImportCsv, LinesCountTheLineBreaksInsideQuotes) {
  Table table = test::parse_csv(csv_of(source));
  ASSERT_EQ(table[6][column(table, "reason")], multi_line_reason);
  table[row_at(10)][column(table, "median_ms")] = "-1";  // the row after the three-line field
  Store copy = Store::open(dir / "copy.db");
  try {
    copy.import_csv(test::write_csv(table));
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("import: line 10, field 10 (median_ms) must be a positive"),
              std::string::npos)
        << e.what();
  }
  // A quote inside a quoted field is fine.
  table = test::parse_csv(csv_of(source));
  table[2][column(table, "reason")] = "a \"quoted\" word";
  EXPECT_EQ(copy.import_csv(test::write_csv(table)).sweeps_added, 5);
}

TEST_F(ImportCsv, BoundsWhatItHolds) {
  const std::string csv = csv_of(source);
  Store target = Store::open(dir / "target.db");
  const auto expect_error = [&](const std::string& text, const CsvImportLimits& limits,
                                const std::string& expected) {
    try {
      target.import_csv(text, limits);
      ADD_FAILURE() << "no StoreError for " << expected;
    } catch (const StoreError& e) {
      EXPECT_TRUE(test::one_line(e.what())) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  Table table = test::parse_csv(csv);
  table[4][column(table, "reason")] = std::string((1 << 20) + 1, 'x');
  expect_error(test::write_csv(table), {}, "import: line 5, field 9 (reason) is longer than 1048576 bytes");
  table[4][column(table, "reason")] =
      "\"" + std::string(1 << 20, 'x');  // a doubled quote makes it one too many
  expect_error(test::write_csv(table), {}, "import: line 5, field 9 (reason) is longer than 1048576 bytes");
  CsvImportLimits few_rows;
  few_rows.max_rows = 8;
  expect_error(csv, few_rows, "import: line 12 is one row more than the 8 a CSV import reads");
  CsvImportLimits few_bytes;
  few_bytes.max_bytes = 1000;
  expect_error(
      csv, few_bytes,
      "import: the text is " + std::to_string(csv.size()) + " bytes, more than the 1000 a CSV import reads");
  CsvImportLimits few_sweeps;
  few_sweeps.max_sweeps = 3;
  expect_error(csv, few_sweeps, "import: line 11 starts one sweep more than the 3 a CSV import reads");
  EXPECT_TRUE(target.sweeps().empty());
  few_rows.max_rows = 9;
  EXPECT_EQ(target.import_csv(csv, few_rows).sweeps_added, 5);
}

// The database refuses the last sweep's rows as it would on a full disk: the whole file is one transaction.
TEST_F(ImportCsv, IsOneTransactionPerFile) {
  Table table = test::parse_csv(csv_of(source));
  table[row_at(12)][column(table, "reason")] = "refuse me";
  const auto target_path = dir / "target.db";
  Store target = Store::open(target_path);
  target.add_results(target.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64})), {ok({{"TILE", 8}}, 0.05)});
  ASSERT_NO_THROW(test::refuse_results_with_reason(target_path, "refuse me"));
  const auto counts_before = row_counts(target_path);
  try {
    target.import_csv(test::write_csv(table));
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_TRUE(test::one_line(e.what())) << e.what();
    const std::string uid = table[row_at(12)][column(table, "sweep_uid")];
    EXPECT_EQ(std::string(e.what()).rfind("import: line 12 (sweep '" + uid + "'): ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("simulated write failure"), std::string::npos) << e.what();
  }
  EXPECT_EQ(row_counts(target_path), counts_before);
  EXPECT_TRUE(target.integrity_ok());
}

TEST_F(ImportCsv, NeverTakesOverAStoredDevice) {
  Store target = Store::open(dir / "target.db");
  target.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64}));
  Store other = Store::open(dir / "other.db");
  other.add_sweep(spec("gemm_tiled", test::device("Some Other GPU", h100.uuid, "sm_90"), {128, 128, 128}),
                  {ok({{"TILE", 8}}, 0.5)});
  const auto counts_before = row_counts(dir / "target.db");
  try {
    target.import_csv(csv_of(other));
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_TRUE(test::one_line(e.what())) << e.what();
    EXPECT_NE(
        std::string(e.what()).find(", device: device GPU-h100-0001 is stored as the GPU '" + h100.name + "'"),
        std::string::npos)
        << e.what();
  }
  EXPECT_EQ(row_counts(dir / "target.db"), counts_before);
}

}  // namespace
}  // namespace tiletune
