// What a result's times are made of (schema version 2: compile time, measurement time, every timed run), how
// they travel through the exports and imports, how a version 1 database is read and upgraded, and the T4
// export. The T4 document is also validated against the schemas Kernel Tuner ships (tests/interop).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "test_support.hpp"

namespace tiletune {
namespace {

using nlohmann::json;
using test::failed;
using test::h100;
using test::ok;
using test::spec;

ResultRecord timed(Params params, double median_ms, std::vector<double> times) {
  ResultRecord r = ok(std::move(params), median_ms);
  r.compile_ms = 812.5;
  r.measure_ms = 40.125;
  r.times_ms = std::move(times);
  return r;
}

// One sweep with every outcome; the ok results carry their runs.
std::int64_t fill(Store& store) {
  const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  store.add_results(id, {timed({{"TILE", 32}, {"BLOCK_Y", 8}}, 1.0, {1.5, 1.0, 0.98, 1.0, 1.25}),
                         timed({{"TILE", 16}, {"BLOCK_Y", 8}}, 2.0, {2.0}),
                         failed({{"TILE", 8}, {"BLOCK_Y", 4}}, Outcome::pruned, "threads limit"),
                         failed({{"TILE", 8}, {"BLOCK_Y", 8}}, Outcome::compile_failed, "error: x"),
                         failed({{"TILE", 2}, {"BLOCK_Y", 8}}, Outcome::launch_failed, "too many resources"),
                         failed({{"TILE", 1}, {"BLOCK_Y", 8}}, Outcome::runtime_failed, "illegal address"),
                         failed({{"TILE", 3}, {"BLOCK_Y", 8}}, Outcome::timeout, "10 s"),
                         failed({{"TILE", 5}, {"BLOCK_Y", 8}}, Outcome::wrong_result, "1 of 9 differ")});
  store.finish_sweep(id, "done");
  return id;
}

void run_sql(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(Times, StoredAndReadBackExactly) {
  test::TempDir dir;
  Store store = Store::open(dir / "a.db");
  const std::int64_t id = fill(store);
  const auto results = store.results(id);
  ASSERT_EQ(results.size(), 8u);
  EXPECT_EQ(results[0].record.times_ms, (std::vector<double>{1.5, 1.0, 0.98, 1.0, 1.25}));
  EXPECT_EQ(results[0].record.compile_ms, 812.5);
  EXPECT_EQ(results[0].record.measure_ms, 40.125);
  EXPECT_EQ(results[1].record.times_ms, std::vector<double>{2.0});
  EXPECT_TRUE(results[2].record.times_ms.empty());
  EXPECT_FALSE(results[2].record.compile_ms);
}

TEST(Times, TravelThroughJsonAndCsvExports) {
  test::TempDir dir;
  Store source = Store::open(dir / "source.db");
  fill(source);
  Store from_json = Store::open(dir / "json.db");
  from_json.import_json(source.export_json());
  std::ostringstream csv;
  source.export_csv(csv);
  Store from_csv = Store::open(dir / "csv.db");
  from_csv.import_csv(csv.str());
  for (Store* copy : {&from_json, &from_csv}) {
    const auto results = copy->results(copy->sweeps().front().id);
    ASSERT_EQ(results.size(), 8u);
    EXPECT_EQ(results[0].record.times_ms, (std::vector<double>{1.5, 1.0, 0.98, 1.0, 1.25}));
    EXPECT_EQ(results[0].record.compile_ms, 812.5);
    EXPECT_EQ(results[0].record.measure_ms, 40.125);
    EXPECT_TRUE(results[3].record.times_ms.empty());
  }
  EXPECT_EQ(test::without_export_time(from_csv.export_json()),
            test::without_export_time(source.export_json()));
}

TEST(Times, CsvOfTheEarlierVersionWithoutTimesStillImports) {
  test::TempDir dir;
  Store source = Store::open(dir / "source.db");
  fill(source);
  std::ostringstream csv;
  source.export_csv(csv);
  auto table = test::parse_csv(csv.str());
  // The 42 columns of the export of schema version 1: drop compile_ms, measure_ms, times_ms and pruned.
  std::set<std::size_t> dropped;
  for (std::size_t c = 0; c < table[0].size(); ++c)
    if (table[0][c] == "compile_ms" || table[0][c] == "measure_ms" || table[0][c] == "times_ms" ||
        table[0][c] == "pruned")
      dropped.insert(c);
  ASSERT_EQ(dropped.size(), 4u);
  for (auto& row : table)
    for (auto it = dropped.rbegin(); it != dropped.rend(); ++it)
      row.erase(row.begin() + static_cast<long>(*it));
  ASSERT_EQ(table[0].size(), 42u);
  Store copy = Store::open(dir / "copy.db");
  EXPECT_EQ(copy.import_csv(test::write_csv(table)).results_added, 8);
  const auto results = copy.results(copy.sweeps().front().id);
  EXPECT_EQ(results[0].record.median_ms, 1.0);
  EXPECT_TRUE(results[0].record.times_ms.empty());
  EXPECT_FALSE(results[0].record.compile_ms);
}

TEST(Times, HostileTimesAreRefusedWithOneLineAndChangeNothing) {
  test::TempDir dir;
  Store source = Store::open(dir / "source.db");
  fill(source);
  std::ostringstream csv;
  source.export_csv(csv);
  const auto table = test::parse_csv(csv.str());
  std::size_t times_column = 0;
  while (table[0][times_column] != "times_ms") ++times_column;
  const struct {
    const char* times;
    const char* expected;
  } bad_csv[] = {
      {"[1,-2]", "(times_ms) item 1 must be a positive, finite time in ms, got -2"},
      {"[1,0]", "(times_ms) item 1 must be a positive, finite time in ms, got 0"},
      {"[1,inf]", "(times_ms) item 1 must be a positive, finite time in ms, got inf"},
      {"[1,,2]", "(times_ms) item 1 is not a number: ''"},
      {"[1,2,]", "(times_ms) ends with a comma"},
      {"[1,x]", "(times_ms) item 1 is not a number: 'x'"},
      {"1,2", "(times_ms) must be a list of numbers like [0.5,0.25], got '1,2'"},
      {"[[1]]", "(times_ms) item 0 is not a number: '[1]'"},
      {"[", "(times_ms) must be a list of numbers"},
  };
  Store target = Store::open(dir / "target.db");
  const std::string before = test::read_bytes(dir / "target.db");
  for (const auto& bad : bad_csv) {
    SCOPED_TRACE(bad.times);
    auto edited = table;
    edited[1][times_column] = bad.times;
    try {
      target.import_csv(test::write_csv(edited));
      ADD_FAILURE() << "imported";
    } catch (const StoreError& e) {
      EXPECT_TRUE(test::one_line(e.what())) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.expected), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("import: line 2, field ", 0), 0u) << e.what();
    }
  }
  const json doc = json::parse(source.export_json());
  const struct {
    json times;
    const char* expected;
  } bad_json[] = {
      {json("1,2"), "sweeps[0].results[0].times_ms must be an array of numbers"},
      {json::array({1, "2"}), "sweeps[0].results[0].times_ms[1] must be a number"},
      {json::array({1, -2}),
       "sweeps[0].results[0].times_ms[1] must be a positive, finite time in ms, got -2"},
      {json::array({json::array({1})}), "sweeps[0].results[0].times_ms[0] must be a number"},
  };
  for (const auto& bad : bad_json) {
    SCOPED_TRACE(bad.times.dump());
    json edited = doc;
    edited["sweeps"][0]["results"][0]["times_ms"] = bad.times;
    try {
      target.import_json(edited.dump());
      ADD_FAILURE() << "imported";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.expected), std::string::npos) << e.what();
    }
  }
  json negative_compile = doc;
  negative_compile["sweeps"][0]["results"][0]["compile_ms"] = -1;
  EXPECT_THROW(target.import_json(negative_compile.dump()), StoreError);
  EXPECT_EQ(test::read_bytes(dir / "target.db"), before);
  EXPECT_TRUE(target.sweeps().empty());
}

// A database written by the previous version (schema 1, no time columns) is read as it is where it cannot be
// written, and upgraded in place, keeping every row, where it can.
TEST(Times, AVersionOneDatabaseIsReadAndUpgraded) {
  test::TempDir dir;
  const auto path = dir / "v1.db";
  {
    Store store = Store::open(path);
    fill(store);
  }
  // Make it exactly what version 1 created: the same tables without the three columns.
  run_sql(path,
          "ALTER TABLE results DROP COLUMN compile_ms; ALTER TABLE results DROP COLUMN measure_ms; "
          "ALTER TABLE results DROP COLUMN times_json; ALTER TABLE sweeps DROP COLUMN best_found_count; "
          "ALTER TABLE sweeps DROP COLUMN best_found_seconds; DROP TABLE pruned; PRAGMA user_version = 1;");
  {
    const Store reader = Store::open(path, Store::Mode::read_only);
    const auto results = reader.results(reader.sweeps().front().id);
    ASSERT_EQ(results.size(), 8u);
    EXPECT_EQ(results[0].record.median_ms, 1.0);
    EXPECT_TRUE(results[0].record.times_ms.empty());
    EXPECT_FALSE(results[0].record.compile_ms);
    std::ostringstream t4;
    reader.export_t4(t4);
    EXPECT_EQ(json::parse(t4.str())["results"].size(), 8u);
  }
  Store writer = Store::open(path);
  const auto sweeps = writer.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(writer.results(sweeps[0].id).size(), 8u);
  const std::int64_t id = writer.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64}));
  writer.add_results(id, {timed({{"TILE", 8}, {"BLOCK_Y", 4}}, 0.5, {0.5, 0.5})});
  EXPECT_EQ(writer.results(id)[0].record.times_ms, (std::vector<double>{0.5, 0.5}));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), Store::schema_version);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(T4, EveryResultWithItsTimesAndOutcomeAsInvalidity) {
  test::TempDir dir;
  Store store = Store::open(dir / "a.db");
  const std::int64_t id = fill(store);
  std::ostringstream out;
  store.export_t4(out);
  const json doc = json::parse(out.str());
  EXPECT_EQ(doc["schema_version"], "1.0.0");
  EXPECT_EQ(doc["metadata"]["timeunit"], "milliseconds");
  EXPECT_EQ(doc["metadata"]["hardware"]["hardware_description"][0]["name"], h100.name);
  EXPECT_EQ(doc["metadata"]["environment"]["device_query"][h100.uuid]["clock_khz"], 1980000);
  EXPECT_TRUE(doc["metadata"]["environment"]["requirements"].is_array());
  ASSERT_EQ(doc["metadata"]["sweeps"].size(), 1u);
  EXPECT_EQ(doc["metadata"]["sweeps"][0]["problem"], "1000x1000x1000");
  const json& results = doc["results"];
  ASSERT_EQ(results.size(), 8u);
  std::map<std::string, std::string> invalidity;
  for (const json& r : results) {
    for (const char* key : {"configuration", "times", "invalidity", "correctness"})
      EXPECT_TRUE(r.contains(key)) << key;
    invalidity[r["outcome"].get<std::string>()] = r["invalidity"].get<std::string>();
    EXPECT_EQ(r["correctness"], r["outcome"] == "wrong_result" ? 0 : 1);
    EXPECT_EQ(r["objectives"], json::array({"time"}));
    EXPECT_EQ(r["sweep"], store.sweep(id)->uid);
  }
  EXPECT_EQ(invalidity, (std::map<std::string, std::string>{{"ok", "correct"},
                                                            {"pruned", "constraints"},
                                                            {"compile_failed", "compile"},
                                                            {"launch_failed", "runtime"},
                                                            {"runtime_failed", "runtime"},
                                                            {"timeout", "timeout"},
                                                            {"wrong_result", "correctness"}}));
  const json& best = results[0];
  EXPECT_EQ(best["configuration"], (json{{"BLOCK_Y", 8}, {"TILE", 32}}));
  EXPECT_EQ(best["times"]["runtimes"], json::array({1.5, 1.0, 0.98, 1.0, 1.25}));
  EXPECT_EQ(best["times"]["compilation_time"], 812.5);
  EXPECT_EQ(best["times"]["benchmark"], 40.125);
  std::map<std::string, json> measured;
  for (const json& m : best["measurements"]) measured[m["name"]] = m;
  EXPECT_EQ(measured.at("time")["value"], 1.0);
  EXPECT_EQ(measured.at("time")["unit"], "ms");
  EXPECT_EQ(measured.at("throughput")["unit"], "GFLOP/s");
  EXPECT_EQ(measured.at("registers")["value"], 40);
  EXPECT_EQ(results[2]["times"]["runtimes"], json::array());
  EXPECT_EQ(results[2]["reason"], "threads limit");
}

TEST(T4, SelectsSweepsAndRefusesUnknownOnes) {
  test::TempDir dir;
  Store store = Store::open(dir / "a.db");
  const std::int64_t first = fill(store);
  const std::int64_t second = store.begin_sweep(spec("conv1d", h100, {1 << 20}));
  store.add_results(second, {timed({{"TILE", 256}}, 0.25, {0.25})});
  auto export_of = [&](const std::string& family, std::vector<std::int64_t> ids) {
    std::ostringstream out;
    store.export_t4(out, family, "", ids);
    return json::parse(out.str());
  };
  EXPECT_EQ(export_of("", {})["results"].size(), 9u);
  EXPECT_EQ(export_of("conv1d", {})["results"].size(), 1u);
  EXPECT_EQ(export_of("", {first})["results"].size(), 8u);
  EXPECT_EQ(export_of("", {second})["metadata"]["sweeps"][0]["family"], "conv1d");
  EXPECT_EQ(export_of("nothing", {})["results"], json::array());
  std::ostringstream out;
  try {
    store.export_t4(out, "gemm_tiled", "", {second});
    ADD_FAILURE() << "exported";
  } catch (const StoreError& e) {
    EXPECT_STREQ(e.what(),
                 ("export: no sweep " + std::to_string(second) + " of the chosen family and device").c_str());
  }
  EXPECT_THROW(store.export_t4(out, "", "", {9999}), StoreError);
}

}  // namespace
}  // namespace tiletune
