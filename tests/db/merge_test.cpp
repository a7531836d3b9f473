// Store::merge: databases of many machines (Slurm array tasks) combined into one, in one transaction.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_support.hpp"

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::failed;
using test::h100;
using test::ok;
using test::read_bytes;
using test::row_counts;
using test::spec;
using test::sql_exec;

const ProblemKey cube{{1000, 1000, 1000}, {}};

// Shard `index` of `shards`: TILE values index, index + shards, ... of 1..16, BLOCK_Y 4 and 8; shard 2 holds
// the fastest configuration, and each shard a failure.
std::vector<ResultRecord> shard_results(int index, int shards) {
  std::vector<ResultRecord> records;
  for (int tile = index + 1; tile <= 16; tile += shards)
    for (const std::int64_t block_y : {4, 8})
      records.push_back(ok({{"TILE", tile}, {"BLOCK_Y", block_y}}, 1.0 + 0.125 * tile + 0.01 * block_y));
  if (index == 2) records.push_back(ok({{"TILE", 99}, {"BLOCK_Y", 4}}, 0.5));
  records.front().compile_ms = 120.5 + index;  // what a sweep records beside the times: carried along too
  records.front().measure_ms = 40.25;
  records.front().times_ms = {1.5, 1.25, 1.75};
  records.push_back(
      failed({{"TILE", 100 + index}, {"BLOCK_Y", 4}}, Outcome::pruned, "shard " + std::to_string(index)));
  return records;
}

// Each exported sweep by uid, as the export writes it.
std::map<std::string, json> sweeps_by_uid(const fs::path& path) {
  std::map<std::string, json> sweeps;
  const Store store = Store::open(path, Store::Mode::read_only);
  const json doc = json::parse(store.export_json());
  for (const json& s : doc["sweeps"]) sweeps[s["uid"]] = s;
  return sweeps;
}

Store::MergeSummary merge(const std::vector<fs::path>& inputs, const fs::path& output,
                          std::string* report = nullptr) {
  std::ostringstream lines;
  Store::MergeSummary summary = Store::merge(inputs, output, lines);
  if (report) *report = lines.str();
  return summary;
}

// Every file in the directory with a hash of its bytes: what must not change. A read-only open may leave an
// empty -wal and a -shm file beside an input (SQLite's shared-memory index, db/SCHEMA.md); those are left
// out.
std::map<std::string, std::size_t> snapshot(const fs::path& dir) {
  std::map<std::string, std::size_t> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (!fs::is_regular_file(entry.symlink_status()) || ends_with("-shm") ||
        (ends_with("-wal") && fs::file_size(entry.path()) == 0))
      continue;
    files[name] = std::hash<std::string>{}(read_bytes(entry.path()));
  }
  return files;
}

std::vector<fs::path> make_shards(const test::TempDir& dir, int shards) {
  std::vector<fs::path> paths;
  for (int i = 0; i < shards; ++i) {
    paths.push_back(dir / ("shard" + std::to_string(i) + ".db"));
    Store store = Store::open(paths.back());
    store.add_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}), shard_results(i, shards));
  }
  return paths;
}

TEST(Merge, ShardsGiveTheUnionAndTheBestOfOneDatabase) {
  test::TempDir dir;
  const auto shards = make_shards(dir, 4);
  {
    Store everything = Store::open(dir / "everything.db");
    for (int i = 0; i < 4; ++i)
      everything.add_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}), shard_results(i, 4));
  }
  std::string report;
  const Store::MergeSummary summary = merge(shards, dir / "all.db", &report);
  EXPECT_EQ(report, "");
  ASSERT_EQ(summary.inputs.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(summary.inputs[i].input, shards[i].string());
    EXPECT_EQ(summary.inputs[i].sweeps_added, 1);
    EXPECT_EQ(summary.inputs[i].sweeps_skipped, 0);
    EXPECT_EQ(summary.inputs[i].results_added, static_cast<std::int64_t>(shard_results(i, 4).size()));
  }
  EXPECT_EQ(summary.total.sweeps_added, 4);
  EXPECT_EQ(summary.total.sweeps_conflicting, 0);
  EXPECT_EQ(summary.shard_groups, 1);
  EXPECT_EQ(row_counts(dir / "all.db"), row_counts(dir / "everything.db"));
  EXPECT_EQ(summary.total.results_added, row_counts(dir / "all.db")["results"]);

  const Store all = Store::open(dir / "all.db", Store::Mode::read_only);
  const Store everything = Store::open(dir / "everything.db", Store::Mode::read_only);
  const auto best = all.best("gemm_tiled", h100.name, cube);
  const auto expected = everything.best("gemm_tiled", h100.name, cube);
  ASSERT_TRUE(best && expected);
  EXPECT_EQ(best->record.params, expected->record.params);
  EXPECT_EQ(best->record.median_ms, expected->record.median_ms);
  EXPECT_EQ(best->record.median_ms, 0.5);

  // Provenance and every result row: each sweep exports as it did from its shard.
  std::map<std::string, json> union_of_shards;
  for (const auto& shard : shards) union_of_shards.merge(sweeps_by_uid(shard));
  ASSERT_EQ(union_of_shards.size(), 4u);
  EXPECT_EQ(sweeps_by_uid(dir / "all.db"), union_of_shards);
  EXPECT_TRUE(all.integrity_ok());
}

TEST(Merge, MergingAgainAddsNothing) {
  test::TempDir dir;
  const auto shards = make_shards(dir, 3);
  merge(shards, dir / "all.db");
  const auto before = sweeps_by_uid(dir / "all.db");
  std::string report;
  const Store::MergeSummary again = merge(shards, dir / "all.db", &report);
  EXPECT_EQ(report, "");
  EXPECT_EQ(again.total.sweeps_added, 0);
  EXPECT_EQ(again.total.results_added, 0);
  EXPECT_EQ(again.total.sweeps_skipped, 3);
  EXPECT_EQ(again.total.sweeps_conflicting, 0);
  EXPECT_EQ(sweeps_by_uid(dir / "all.db"), before);
  // The same input twice in one merge: the second copy is already there.
  const Store::MergeSummary twice = merge({shards[0], shards[0]}, dir / "other.db");
  EXPECT_EQ(twice.inputs[0].sweeps_added, 1);
  EXPECT_EQ(twice.inputs[1].sweeps_skipped, 1);
}

TEST(Merge, TheOutputsOwnSweepsAreKept) {
  test::TempDir dir;
  const auto shards = make_shards(dir, 2);
  {
    Store out = Store::open(dir / "all.db");
    out.add_sweep(spec("conv1d", h100, {1 << 20}, {{"mask_width", 5}}), {ok({{"TILE", 256}}, 0.25)});
  }
  const auto own = sweeps_by_uid(dir / "all.db");
  const Store::MergeSummary summary = merge(shards, dir / "all.db");
  EXPECT_EQ(summary.total.sweeps_added, 2);
  const auto after = sweeps_by_uid(dir / "all.db");
  EXPECT_EQ(after.size(), 3u);
  for (const auto& [uid, sweep] : own) EXPECT_EQ(after.at(uid), sweep);
}

TEST(Merge, TheSameUidWithOtherResultsIsReportedAndTheFirstCopyKept) {
  test::TempDir dir;
  const auto shards = make_shards(dir, 1);
  const fs::path slower = dir / "slower.db", diverged = dir / "diverged.db";
  fs::copy_file(shards[0], slower);
  fs::copy_file(shards[0], diverged);
  const std::string uid = sweeps_by_uid(shards[0]).begin()->first;
  sql_exec(slower,
           "UPDATE results SET median_ms = median_ms * 2 WHERE configuration_id = "
           "(SELECT id FROM configurations WHERE params_text = 'BLOCK_Y=8,TILE=5')");
  sql_exec(diverged,
           "DELETE FROM results WHERE configuration_id = "
           "(SELECT id FROM configurations WHERE params_text = 'BLOCK_Y=4,TILE=1')");
  {
    Store store = Store::open(diverged);
    store.add_results(store.sweeps().front().id, {ok({{"TILE", 77}, {"BLOCK_Y", 4}}, 3.0)});
  }
  std::string report;
  const Store::MergeSummary summary = merge({shards[0], slower, diverged}, dir / "all.db", &report);
  EXPECT_EQ(summary.inputs[0].sweeps_added, 1);
  EXPECT_EQ(summary.inputs[1].sweeps_conflicting, 1);
  EXPECT_EQ(summary.inputs[2].sweeps_conflicting, 1);
  EXPECT_EQ(summary.total.sweeps_conflicting, 2);
  EXPECT_EQ(summary.total.results_added, 33);
  ASSERT_EQ(test::count_rows(report), 2) << report;
  std::istringstream lines(report);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("conflict: " + slower.string() + ": sweep " + uid + " (gemm_tiled 1000x1000x1000 on " +
                           h100.name + "): the same uid in " + shards[0].string() + " has other content",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find("(BLOCK_Y=8,TILE=5: median 1.7"), std::string::npos) << line;
  EXPECT_NE(line.find(" ms here); kept the copy from " + shards[0].string()), std::string::npos) << line;
  std::getline(lines, line);
  EXPECT_NE(line.find("conflict: " + diverged.string()), std::string::npos) << line;
  EXPECT_NE(line.find("(33 results there, 33 here, each with results the other lacks: BLOCK_Y=4,TILE=1 only "
                      "there, BLOCK_Y=4,TILE=77 only here); kept the copy from " +
                      shards[0].string()),
            std::string::npos)
      << line;
  EXPECT_EQ(sweeps_by_uid(dir / "all.db"), sweeps_by_uid(shards[0]));

  // A copy already in the output is the one kept.
  const Store::MergeSummary later = merge({slower}, dir / "all.db", &report);
  EXPECT_EQ(later.total.sweeps_conflicting, 1);
  EXPECT_NE(report.find("the same uid in the output has other content"), std::string::npos) << report;
  EXPECT_NE(report.find("kept the copy from the output"), std::string::npos) << report;
  EXPECT_EQ(sweeps_by_uid(dir / "all.db"), sweeps_by_uid(shards[0]));
}

// A database copied while its sweep ran holds an earlier snapshot of the finished sweep: whichever order the
// copies come in, the merged sweep is the finished one.
TEST(Merge, TheMoreCompleteCopyOfASweepIsKept) {
  test::TempDir dir;
  const fs::path early = dir / "early.db", finished = dir / "finished.db";
  const auto records = shard_results(0, 1);
  {
    Store store = Store::open(finished);
    const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
    store.add_results(id, {records.begin(), records.begin() + 10});
  }
  fs::copy_file(finished, early);
  {
    Store store = Store::open(finished);
    const std::int64_t id = store.sweeps().front().id;
    store.add_results(id, {records.begin() + 10, records.end()});
    store.finish_sweep(id, "done");
  }
  ASSERT_EQ(sweeps_by_uid(early).begin()->second["status"], "running");

  std::string report;
  const Store::MergeSummary summary = merge({early, finished}, dir / "all.db", &report);
  EXPECT_EQ(summary.inputs[0].sweeps_added, 1);
  EXPECT_EQ(summary.inputs[0].results_added, 10);
  EXPECT_EQ(summary.inputs[1].sweeps_conflicting, 1);
  EXPECT_EQ(summary.inputs[1].results_added, 23);
  ASSERT_EQ(test::count_rows(report), 1) << report;
  EXPECT_NE(
      report.find("a more complete copy of the sweep in " + early.string() +
                  " (10 results there, 33 here, the same where both have a result): added the 23 results "
                  "it lacked and took status 'done'"),
      std::string::npos)
      << report;
  EXPECT_EQ(sweeps_by_uid(dir / "all.db"), sweeps_by_uid(finished));

  // Again, and the other way round: the finished copy stays.
  const Store::MergeSummary again = merge({early, finished}, dir / "all.db", &report);
  EXPECT_EQ(again.total.results_added, 0);
  EXPECT_EQ(again.inputs[0].sweeps_conflicting, 1);
  EXPECT_EQ(again.inputs[1].sweeps_skipped, 1);
  EXPECT_NE(
      report.find("a less complete copy of the sweep in the output (33 results there, 10 here, the same "
                  "where both have a result); kept the more complete copy from the output"),
      std::string::npos)
      << report;
  merge({finished, early}, dir / "reversed.db", &report);
  EXPECT_NE(report.find("kept the more complete copy from " + finished.string()), std::string::npos)
      << report;
  EXPECT_EQ(sweeps_by_uid(dir / "all.db"), sweeps_by_uid(finished));
  EXPECT_EQ(sweeps_by_uid(dir / "reversed.db"), sweeps_by_uid(finished));
}

TEST(Merge, ADeviceTheOutputRefusesIsReportedAndTheOtherSweepsMerge) {
  test::TempDir dir;
  const auto shards = make_shards(dir, 1);
  DeviceRecord impostor = h100;
  impostor.sm_count = 114;  // another chip under the same uuid
  const DeviceRecord other = test::device("NVIDIA A100-SXM4-80GB", "GPU-a100-0001", "sm_80");
  const fs::path mixed = dir / "mixed.db";
  std::string impostor_uid;
  {
    Store store = Store::open(mixed);
    const std::int64_t id =
        store.add_sweep(spec("gemm_tiled", impostor, {1000, 1000, 1000}), {ok({{"TILE", 1}}, 1.0)});
    impostor_uid = store.sweep(id)->uid;
    store.add_sweep(spec("gemm_tiled", other, {1000, 1000, 1000}), shard_results(0, 2));
  }
  std::string report;
  const Store::MergeSummary summary = merge({shards[0], mixed}, dir / "all.db", &report);
  EXPECT_EQ(summary.inputs[1].sweeps_added, 1);
  EXPECT_EQ(summary.inputs[1].sweeps_conflicting, 1);
  ASSERT_EQ(test::count_rows(report), 1) << report;
  EXPECT_EQ(report.rfind("conflict: " + mixed.string() + ": sweep " + impostor_uid, 0), 0u) << report;
  EXPECT_NE(report.find("GPU-h100-0001"), std::string::npos) << report;
  EXPECT_NE(report.find("sweep skipped"), std::string::npos) << report;
  const auto merged = sweeps_by_uid(dir / "all.db");
  EXPECT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged.count(impostor_uid), 0u);
  const Store all = Store::open(dir / "all.db", Store::Mode::read_only);
  EXPECT_TRUE(all.best("gemm_tiled", other.name, cube));
}

TEST(Merge, RefusesToWriteOverAnInput) {
  test::TempDir dir;
  const auto shards = make_shards(dir, 2);
  fs::create_directory(dir / "sub");
  fs::create_symlink(shards[1], dir / "link.db");
  fs::create_hard_link(shards[1], dir / "hard.db");
  const auto before = snapshot(dir.path());
  for (const fs::path& output :
       {shards[1], dir / "link.db", dir / "hard.db", dir / "sub" / ".." / "shard1.db",
        fs::path(shards[1].string() + "-wal"), fs::path(shards[1].string() + "-shm"),
        fs::path(shards[1].string() + "-journal")}) {
    try {
      merge(shards, output);
      ADD_FAILURE() << output << " was written";
    } catch (const StoreError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(test::one_line(what)) << what;
      EXPECT_NE(what.find("refusing to write over an input"), std::string::npos) << what;
      EXPECT_NE(what.find(shards[1].string()), std::string::npos) << what;
    }
    EXPECT_EQ(snapshot(dir.path()), before) << output;
  }
}

TEST(Merge, ABadInputRefusesEverythingBeforeWriting) {
  test::TempDir dir;
  const auto shards = make_shards(dir, 2);
  const fs::path not_sqlite = dir / "notes.db", foreign = dir / "foreign.db", newer = dir / "newer.db",
                 corrupt = dir / "corrupt.db", empty = dir / "empty.db";
  test::write_bytes(not_sqlite, "just some notes\n");
  test::write_bytes(empty, "");
  sql_exec(foreign, "PRAGMA application_id = 42; CREATE TABLE t (x)");
  fs::copy_file(shards[0], newer);
  sql_exec(newer, "PRAGMA user_version = 99");
  {
    Store store = Store::open(corrupt);
    for (int i = 0; i < 8; ++i)
      store.add_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}), shard_results(i, 8));
  }
  std::string bytes = read_bytes(corrupt);
  ASSERT_GT(bytes.size(), 4u * 4096);
  const std::string noise = test::random_bytes(bytes.size() - 2 * 4096, 7);
  bytes.replace(2 * 4096, noise.size(), noise);
  test::write_bytes(corrupt, bytes);

  {
    Store out = Store::open(dir / "existing.db");
    out.add_sweep(spec("conv1d", h100, {4096}), {ok({{"TILE", 256}}, 0.25)});
  }
  const auto before = snapshot(dir.path());
  for (const fs::path& bad : {dir / "missing.db", not_sqlite, empty, foreign, newer, corrupt, dir.path()}) {
    for (const fs::path& output : {dir / "new.db", dir / "existing.db"}) {
      try {
        merge({shards[0], bad, shards[1]}, output);
        ADD_FAILURE() << bad << " was merged";
      } catch (const StoreError& e) {
        const std::string what = e.what();
        EXPECT_TRUE(test::one_line(what)) << what;
        EXPECT_NE(what.find(bad.string()), std::string::npos) << what;
        EXPECT_NE(what.find("nothing written"), std::string::npos) << what;
      }
      EXPECT_EQ(snapshot(dir.path()), before) << bad << " into " << output;
    }
  }
}

TEST(Merge, AFailureWhileWritingLeavesTheOutputAsItWas) {
  test::TempDir dir;
  const auto shards = make_shards(dir, 3);
  {
    Store out = Store::open(dir / "all.db");
    out.add_sweep(spec("conv1d", h100, {4096}), {ok({{"TILE", 256}}, 0.25)});
  }
  // The last shard's failure row cannot be written: nothing of the first two may stay behind.
  test::refuse_results_with_reason(dir / "all.db", "shard 2");
  const auto before = sweeps_by_uid(dir / "all.db");
  EXPECT_THROW(merge(shards, dir / "all.db"), StoreError);
  EXPECT_EQ(sweeps_by_uid(dir / "all.db"), before);

  // A row that the importer's rules refuse (hand-edited) fails the merge; a new output is not left behind.
  const fs::path edited = dir / "edited.db";
  fs::copy_file(shards[1], edited);
  sql_exec(edited, "UPDATE results SET median_ms = -1 WHERE outcome = 'ok'");
  sql_exec(edited, "UPDATE sweeps SET uid = 'edited'");
  try {
    merge({shards[0], edited}, dir / "fresh.db");
    ADD_FAILURE() << "a negative time was merged";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(test::one_line(what)) << what;
    EXPECT_NE(what.find(edited.string() + ": sweep edited"), std::string::npos) << what;
    EXPECT_NE(what.find("median_ms must be a positive, finite time in ms, got -1"), std::string::npos)
        << what;
  }
  EXPECT_FALSE(fs::exists(dir / "fresh.db"));
  EXPECT_FALSE(fs::exists(dir / "fresh.db-wal"));
}

TEST(Merge, AnInputOfAnOlderSchemaIsReadFromAnUpgradedCopy) {
  test::TempDir dir;
  const auto shards = make_shards(dir, 1);
  sql_exec(shards[0],
           "ALTER TABLE results DROP COLUMN compile_ms; ALTER TABLE results DROP COLUMN measure_ms; "
           "ALTER TABLE results DROP COLUMN times_json; ALTER TABLE sweeps DROP COLUMN best_found_count; "
           "ALTER TABLE sweeps DROP COLUMN best_found_seconds; DROP TABLE pruned; PRAGMA user_version = 1");
  const std::string bytes = read_bytes(shards[0]);
  const Store::MergeSummary summary = merge(shards, dir / "all.db");
  EXPECT_EQ(summary.total.sweeps_added, 1);
  EXPECT_EQ(summary.total.results_added, static_cast<std::int64_t>(shard_results(0, 1).size()));
  EXPECT_EQ(read_bytes(shards[0]), bytes);
  EXPECT_EQ(sweeps_by_uid(dir / "all.db").size(), 1u);
}

}  // namespace
}  // namespace tiletune
