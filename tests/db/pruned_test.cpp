// What sweeps pruned before compiling, stored as counts per reason (schema version 4): the Store methods, a
// version 3 file with pruned rows, and every way the counts leave or enter a database (merge, JSON, CSV, T4,
// the report).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <iostream>
#include <sstream>

#include "test_support.hpp"
#include "tiletune/report.hpp"

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using test::h100;
using test::ok;
using test::spec;
using test::sql_exec;

const PrunedCounts kCounts{{"constraint: TILE_K must equal TILE_WIDTH", 576},
                           {"threads: 2048 per block > 1024", 26}};

std::int64_t sql_count(const fs::path& path, const std::string& query) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &stmt, nullptr), SQLITE_OK) << query;
  const std::int64_t n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

// A measured sweep of two ok results that pruned kCounts.
std::int64_t counted_sweep(Store& store, std::vector<std::int64_t> dims = {64, 64, 64}) {
  return store.add_sweep(spec("gemm_tiled", h100, std::move(dims)),
                         {ok({{"TILE", 16}, {"BLOCK_Y", 4}}, 1.0), ok({{"TILE", 32}, {"BLOCK_Y", 4}}, 2.0)},
                         "done", kCounts);
}

TEST(Pruned, AddSweepStoresTheCountsAndNoRowPerConfiguration) {
  test::TempDir dir;
  Store store = Store::open(dir / "t.db");
  const std::int64_t id = counted_sweep(store);
  EXPECT_EQ(store.pruned_counts(id), kCounts);
  EXPECT_EQ(store.results(id).size(), 2u);
  EXPECT_EQ(pruned_total(store.pruned_counts(id)), 602);
  EXPECT_EQ(sql_count(dir / "t.db", "SELECT COUNT(*) FROM configurations"), 2);
  EXPECT_TRUE(store.pruned_counts(id + 1).empty());
}

// A resumed run prunes again what the runs before it pruned: each reason keeps its larger count.
TEST(Pruned, RecordPrunedKeepsTheLargerCountOfEachReason) {
  test::TempDir dir;
  Store store = Store::open(dir / "t.db");
  const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64}));
  store.record_pruned(id, {{"a", 5}, {"b", 2}});
  store.record_pruned(id, {{"a", 3}, {"c", 1}});
  store.record_pruned(id, {{"b", 4}});
  store.record_pruned(id, {});
  EXPECT_EQ(store.pruned_counts(id), (PrunedCounts{{"a", 5}, {"b", 4}, {"c", 1}}));
  EXPECT_THROW(store.record_pruned(id + 1, {{"a", 1}}), StoreError);
  EXPECT_THROW(store.record_pruned(id, {{"a", 0}}), StoreError);
  EXPECT_THROW(store.record_pruned(id, {{"", 1}}), StoreError);
  EXPECT_EQ(store.pruned_counts(id), (PrunedCounts{{"a", 5}, {"b", 4}, {"c", 1}}));
}

// A version 3 file holds its pruned configurations as results: read-only it reads as it is, read-write it
// migrates to version 4 without losing a row, and the old sweep reports the same pruned figures.
TEST(Pruned, AVersion3FileKeepsItsPrunedRowsThroughTheMigration) {
  test::TempDir dir;
  const auto path = dir / "v3.db";
  std::int64_t id = 0;
  {
    Store store = Store::open(path);
    id = store.add_sweep(
        spec("gemm_tiled", h100, {64, 64, 64}),
        {ok({{"TILE", 16}, {"BLOCK_Y", 4}}, 1.0),
         test::failed({{"TILE", 64}, {"BLOCK_Y", 32}}, Outcome::pruned, "threads: 2048 > 1024"),
         test::failed({{"TILE", 8}, {"BLOCK_Y", 32}}, Outcome::pruned, "threads: 2048 > 1024")});
  }
  sql_exec(path, "DROP TABLE pruned; PRAGMA user_version = 3");
  const auto pruned_rows = [](const Store& s, std::int64_t sweep) {
    int n = 0;
    for (const auto& r : s.results(sweep)) n += r.record.outcome == Outcome::pruned;
    return n;
  };
  {
    const Store reader = Store::open(path, Store::Mode::read_only);
    EXPECT_TRUE(reader.pruned_counts(id).empty());
    EXPECT_EQ(pruned_rows(reader, id), 2);
    EXPECT_EQ(reader.measured_results(id).size(), 1u);
  }
  EXPECT_EQ(sql_count(path, "PRAGMA user_version"), 3);  // the read-only open changed nothing
  const std::string before = render_report(path, {"", "", {}, "fixed", "db"});
  {
    Store store = Store::open(path);
    EXPECT_EQ(pruned_rows(store, id), 2);
    EXPECT_TRUE(store.pruned_counts(id).empty());
    EXPECT_EQ(store.results(id).size(), 3u);
    // The old sweep can gain counts too (a resume after the upgrade prunes what it has no row for).
    const std::int64_t fresh = counted_sweep(store, {128, 128, 128});
    EXPECT_EQ(store.pruned_counts(fresh), kCounts);
  }
  EXPECT_EQ(sql_count(path, "PRAGMA user_version"), 4);
  const std::string after = render_report(path, {"", "", {id}, "fixed", "db"});
  EXPECT_NE(before.find("Outcomes: 3 configurations"), std::string::npos);
  EXPECT_NE(after.find("Outcomes: 3 configurations"), std::string::npos);
  EXPECT_NE(after.find("2\xC3\x97 <code>threads: 2048 &gt; 1024</code>"), std::string::npos);
}

// The report counts what was pruned among the outcomes, with the reasons.
TEST(Pruned, TheReportCountsThePrunedConfigurations) {
  test::TempDir dir;
  std::int64_t id = 0;
  {
    Store store = Store::open(dir / "t.db");
    id = counted_sweep(store);
  }
  const std::string html = render_report(dir / "t.db", {"", "", {id}, "fixed", "db"});
  EXPECT_NE(html.find("Outcomes: 604 configurations"), std::string::npos);
  EXPECT_NE(html.find("576\xC3\x97 <code>constraint: TILE_K must equal TILE_WIDTH</code>"),
            std::string::npos);
  EXPECT_NE(html.find("26\xC3\x97 <code>threads: 2048 per block &gt; 1024</code>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"tt-num\">604</td>"), std::string::npos);  // the sweeps table
}

TEST(Pruned, MergeCarriesTheCountsWithTheSweep) {
  test::TempDir dir;
  std::string uid;
  {
    Store store = Store::open(dir / "a.db");
    uid = store.sweep(counted_sweep(store))->uid;
  }
  std::ostringstream report;
  const auto summary = Store::merge({dir / "a.db"}, dir / "all.db", report);
  EXPECT_EQ(summary.total.sweeps_added, 1);
  const Store merged = Store::open(dir / "all.db", Store::Mode::read_only);
  const auto sweeps = merged.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps.front().uid, uid);
  EXPECT_EQ(merged.pruned_counts(sweeps.front().id), kCounts);
}

// A snapshot of a sampled sweep (its counts stored when it ends) meets the finished copy: the counts grow.
TEST(Pruned, MergeTakesTheCountsOfAMoreCompleteCopy) {
  test::TempDir dir;
  {
    Store store = Store::open(dir / "a.db");
    const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64}));
    store.add_results(id, {ok({{"TILE", 16}, {"BLOCK_Y", 4}}, 1.0)});
  }
  fs::copy_file(dir / "a.db", dir / "snapshot.db");
  {
    Store store = Store::open(dir / "a.db");
    const std::int64_t id = store.sweeps().front().id;
    store.add_results(id, {ok({{"TILE", 32}, {"BLOCK_Y", 4}}, 2.0)});
    store.record_pruned(id, kCounts);
    store.finish_sweep(id, "done");
  }
  std::ostringstream report;
  Store::merge({dir / "snapshot.db", dir / "a.db"}, dir / "all.db", report);
  const Store merged = Store::open(dir / "all.db", Store::Mode::read_only);
  ASSERT_EQ(merged.sweeps().size(), 1u);
  EXPECT_EQ(merged.pruned_counts(merged.sweeps().front().id), kCounts);
  EXPECT_EQ(merged.sweeps().front().status, "done");
}

TEST(Pruned, JsonAndCsvExportsCarryTheCountsBackIn) {
  test::TempDir dir;
  std::string json_text, csv_text;
  {
    Store store = Store::open(dir / "a.db");
    counted_sweep(store);
    // A sweep whose every configuration was pruned: one CSV row without results carries the counts.
    store.add_sweep(spec("gemm_tiled", h100, {8, 8, 8}), {}, "done", {{"threads: 4096 per block > 1024", 9}});
    json_text = store.export_json();
    std::ostringstream csv;
    store.export_csv(csv);
    csv_text = csv.str();
  }
  const auto doc = nlohmann::json::parse(json_text);
  EXPECT_EQ(doc["sweeps"][0]["pruned"]["threads: 2048 per block > 1024"], 26);
  for (const bool csv : {false, true}) {
    Store store = Store::open(dir / (csv ? "csv.db" : "json.db"));
    const ImportSummary s = csv ? store.import_csv(csv_text) : store.import_json(json_text);
    EXPECT_EQ(s.sweeps_added, 2);
    EXPECT_EQ(test::without_export_time(store.export_json()), test::without_export_time(json_text)) << csv;
  }
}

TEST(Pruned, ImportsRefuseCountsThatAreNotCounts) {
  test::TempDir dir;
  Store store = Store::open(dir / "a.db");
  counted_sweep(store);
  const std::string text = store.export_json();
  Store other = Store::open(dir / "b.db");
  for (const auto& bad : {nlohmann::json::array(), nlohmann::json{{"a", 0}}, nlohmann::json{{"a", "1"}},
                          nlohmann::json{{"", 1}}}) {
    auto doc = nlohmann::json::parse(text);
    doc["sweeps"][0]["pruned"] = bad;
    try {
      other.import_json(doc.dump());
      ADD_FAILURE() << bad.dump() << " was imported";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("import: sweeps[0].pruned"), std::string::npos) << e.what();
      EXPECT_TRUE(test::one_line(e.what())) << e.what();
    }
  }
  EXPECT_TRUE(other.sweeps().empty());
}

TEST(Pruned, T4ListsTheCountsInTheSweepsMetadataAndNoResultForThem) {
  test::TempDir dir;
  Store store = Store::open(dir / "a.db");
  counted_sweep(store);
  std::ostringstream out;
  store.export_t4(out);
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(doc["metadata"]["sweeps"][0]["pruned"]["constraint: TILE_K must equal TILE_WIDTH"], 576);
}

// The main job's largest space prunes about half a million configurations: stored as counts they are a few
// rows, whatever their number (the time is measured and printed, not asserted).
TEST(Pruned, HalfAMillionPrunedConfigurationsStoreAsAFewRows) {
  test::TempDir dir;
  const auto path = dir / "big.db";
  PrunedCounts counts;
  for (int i = 0; i < 494'424; ++i) ++counts["shared memory: " + std::to_string(i % 400) + " KB > 227 KB"];
  const auto t0 = std::chrono::steady_clock::now();
  {
    Store store = Store::open(path);
    const std::int64_t id = store.add_sweep(spec("gemm_tiled", h100, {2000, 2000, 2000}), {}, "done", counts);
    EXPECT_EQ(pruned_total(store.pruned_counts(id)), 494'424);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ stored 494424 pruned configurations in " << seconds << " s, " << fs::file_size(path)
            << " bytes ]\n";
  EXPECT_EQ(sql_count(path, "SELECT COUNT(*) FROM results"), 0);
  EXPECT_EQ(sql_count(path, "SELECT COUNT(*) FROM configurations"), 0);
  EXPECT_EQ(sql_count(path, "SELECT COUNT(*) FROM pruned"), 400);
  EXPECT_LT(fs::file_size(path), 1u << 20);
}

}  // namespace
}  // namespace tiletune
