// tiletune merge A.db B.db ... -o ALL.db as a user meets it: shards combine into one database, again adds
// nothing, conflicts are reported one line each, and a merge that must not happen changes no file.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tiletune::test::CmdResult;
using tiletune::test::lines;
using tiletune::test::read_bytes;
using tiletune::test::TempDir;
using tiletune::test::tiletune_cmd;

const char* const h100_name = "NVIDIA H100 80GB HBM3";

// An export holding one sweep: TILE = first, first + step, ... below 16, each at 1 + TILE / 10 ms; TILE 6 is
// the fastest of all (0.7 ms).
json export_doc(const std::string& uid, int first, int step, const std::string& device = h100_name,
                int sm_count = 132) {
  json results = json::array();
  for (int tile = first; tile < 16; tile += step)
    results.push_back({{"params", {{"TILE", tile}, {"BLOCK_Y", 4}}},
                       {"outcome", "ok"},
                       {"median_ms", tile == 6 ? 0.7 : 1 + tile / 10.0},
                       {"repetitions", 5}});
  json sweep = {
      {"uid", uid},
      {"device", {{"name", device}, {"uuid", "GPU-h100-0001"}, {"arch", "sm_90"}, {"sm_count", sm_count}}},
      {"family", {{"name", "shard_family"}, {"template_hash", "h1"}}},
      {"problem", {{"size", "1024x1024x1024"}, {"args", ""}}},
      {"status", "done"},
      {"started_at", "2025-01-01T00:00:0" + std::to_string(first) + ".000Z"},
      {"tiletune_version", "0.9.0"},
      {"git_sha", "deadbeef"},
      {"results", results}};
  return {{"format", "tiletune-export"}, {"schema_version", 1}, {"sweeps", json::array({sweep})}};
}

// `name`.db holding the export, written through 'tiletune import'.
void make_db(const TempDir& dir, const std::string& name, const json& doc) {
  std::ofstream(dir.path / (name + ".json")) << doc.dump();
  const CmdResult r = tiletune_cmd("import " + name + ".json --db " + name + ".db", dir);
  ASSERT_EQ(r.status, 0) << r.err;
}

std::vector<std::string> make_shards(const TempDir& dir, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    names.push_back("shard" + std::to_string(i) + ".db");
    make_db(dir, "shard" + std::to_string(i), export_doc("uid" + std::to_string(i), i, count));
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += name + " ";
  return text;
}

// Every file under the folder with its bytes.
std::map<std::string, std::string> files(const fs::path& dir) {
  std::map<std::string, std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.path().filename() != "stdout" && entry.path().filename() != "stderr" &&
        fs::is_regular_file(entry.symlink_status()))
      found[fs::relative(entry.path(), dir).string()] = read_bytes(entry.path());
  return found;
}

// The summary's row of `input` (or "total"): its cells.
std::vector<std::string> row(const std::string& out, const std::string& input) {
  std::istringstream text(out);
  for (std::string line; std::getline(text, line);) {
    std::istringstream cells(line);
    std::vector<std::string> found;
    for (std::string cell; cells >> cell;) found.push_back(cell);
    if (!found.empty() && found[0] == input) return found;
  }
  return {};
}

using Row = std::vector<std::string>;

std::string best(const TempDir& dir, const std::string& db) {
  const CmdResult r = tiletune_cmd("query --family shard_family --size 1024x1024x1024 --device '" +
                                       std::string(h100_name) + "' --db " + db,
                                   dir);
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

TEST(MergeCli, ShardsBecomeOneDatabaseAndMergingAgainAddsNothing) {
  TempDir dir;
  const auto shards = make_shards(dir, 4);
  make_db(dir, "everything", export_doc("all", 0, 1));
  const CmdResult r = tiletune_cmd("merge " + joined(shards) + "-o all.db", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("merged 4 databases into all.db"), std::string::npos) << r.out;
  EXPECT_EQ(row(r.out, "shard2.db"), (Row{"shard2.db", "1", "0", "0", "4"})) << r.out;
  EXPECT_EQ(row(r.out, "total"), (Row{"total", "4", "0", "0", "16"})) << r.out;
  EXPECT_NE(r.out.find("1 (family, device, problem) group is measured in several sweeps"), std::string::npos);
  EXPECT_EQ(best(dir, "all.db"), best(dir, "everything.db"));
  EXPECT_NE(best(dir, "all.db").find("BLOCK_Y=4,TILE=6\n"), std::string::npos);

  const std::string exported = tiletune_cmd("export --format csv --db all.db", dir).out;
  EXPECT_EQ(lines(exported), 17);  // a header and 16 results
  const CmdResult again = tiletune_cmd("merge " + joined(shards) + "-o all.db", dir);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(row(again.out, "total"), (Row{"total", "0", "4", "0", "0"})) << again.out;
  EXPECT_EQ(tiletune_cmd("export --format csv --db all.db", dir).out, exported);
}

TEST(MergeCli, ConflictsAreReportedOneLineEachAndTheRestMerges) {
  TempDir dir;
  const auto shards = make_shards(dir, 2);
  // The same uid as shard0 with one result fewer beside a new sweep, and a device that claims shard0's uuid.
  json late = export_doc("uid0", 2, 2);
  late["sweeps"].push_back(export_doc("fresh", 3, 5)["sweeps"][0]);
  make_db(dir, "late", late);
  make_db(dir, "impostor", export_doc("impostor", 1, 4, "NVIDIA H100 PCIe", 114));
  const CmdResult r = tiletune_cmd("merge " + joined(shards) + "late.db impostor.db -o all.db", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(lines(r.err), 2) << r.err;
  EXPECT_EQ(r.err.find("conflict: late.db: sweep uid0 "), 0u) << r.err;
  EXPECT_NE(
      r.err.find("a less complete copy of the sweep in shard0.db (8 results there, 7 here, the same where "
                 "both have a result); kept the more complete copy from shard0.db\n"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("\nconflict: impostor.db: sweep impostor "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot take over its uuid"), std::string::npos) << r.err;
  EXPECT_EQ(row(r.out, "late.db"), (Row{"late.db", "1", "0", "1", "3"})) << r.out;
  EXPECT_EQ(row(r.out, "impostor.db"), (Row{"impostor.db", "0", "0", "1", "0"})) << r.out;
  EXPECT_EQ(row(r.out, "total"), (Row{"total", "3", "0", "2", "19"})) << r.out;
  EXPECT_NE(r.out.find("2 conflicting sweeps skipped"), std::string::npos) << r.out;
}

// Merging while the array runs, and again when it is done: the output ends with the finished sweeps.
TEST(MergeCli, MergingAgainAfterTheSweepsFinishedCompletesThem) {
  TempDir dir;
  json partial = export_doc("grow", 0, 4);
  partial["sweeps"][0]["status"] = "running";
  make_db(dir, "partial", partial);
  make_db(dir, "finished", export_doc("grow", 0, 2));
  ASSERT_EQ(tiletune_cmd("merge partial.db -o all.db", dir).status, 0);
  const CmdResult r = tiletune_cmd("merge finished.db -o all.db", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      r.err,
      "conflict: finished.db: sweep grow (shard_family 1024x1024x1024 on NVIDIA H100 80GB HBM3): a more "
      "complete copy of the sweep in the output (4 results there, 8 here, the same where both have a "
      "result): added the 4 results it lacked and took status 'done'\n");
  EXPECT_EQ(row(r.out, "finished.db"), (Row{"finished.db", "0", "0", "1", "4"})) << r.out;
  EXPECT_EQ(tiletune_cmd("export --format csv --db all.db", dir).out,
            tiletune_cmd("export --format csv --db finished.db", dir).out);
}

TEST(MergeCli, RefusesToWriteOverAnInput) {
  TempDir dir;
  const auto shards = make_shards(dir, 2);
  fs::create_directory(dir.path / "sub");
  fs::create_symlink("shard1.db", dir.path / "link.db");
  fs::create_hard_link(dir.path / "shard1.db", dir.path / "hard.db");
  const auto before = files(dir.path);
  for (const std::string& output : std::vector<std::string>{
           "shard1.db", "./shard1.db", "sub/../shard1.db", (dir.path / "shard1.db").string(), "link.db",
           "hard.db", "shard1.db-wal", "shard1.db-journal"}) {
    const CmdResult r = tiletune_cmd("merge shard0.db shard1.db -o " + output, dir);
    EXPECT_EQ(r.status, 1) << output;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("refusing to write over an input (nothing written)"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(files(dir.path), before) << output;
  }
}

TEST(MergeCli, ABadInputChangesNothing) {
  TempDir dir;
  const auto shards = make_shards(dir, 2);
  std::ofstream(dir.path / "notes.db") << "not a database\n";
  std::string newer = read_bytes(dir.path / "shard0.db");
  newer[63] = 99;  // user_version, the 4 bytes at offset 60
  std::ofstream(dir.path / "newer.db", std::ios::binary) << newer;
  std::string corrupt = read_bytes(dir.path / "shard1.db");
  for (std::size_t i = 2 * 4096; i < corrupt.size(); ++i) corrupt[i] = static_cast<char>(i * 7919 % 251);
  std::ofstream(dir.path / "corrupt.db", std::ios::binary) << corrupt;
  make_db(dir, "existing", export_doc("kept", 1, 8));
  fs::create_directory(dir.path / "folder.db");
  const auto before = files(dir.path);
  for (const std::string bad : {"missing.db", "notes.db", "newer.db", "corrupt.db", "folder.db"}) {
    for (const std::string output : {"new.db", "existing.db"}) {
      const CmdResult r = tiletune_cmd("merge shard0.db " + bad + " shard1.db -o " + output, dir);
      EXPECT_EQ(r.status, 1) << bad;
      EXPECT_EQ(lines(r.err), 1) << r.err;
      EXPECT_EQ(r.err.find("tiletune merge: "), 0u) << r.err;
      EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("(nothing written)"), std::string::npos) << r.err;
      EXPECT_FALSE(fs::exists(dir.path / "new.db"));
      // Inputs opened read-only may gain SQLite's -shm index and an empty -wal; nothing else changes.
      auto after = files(dir.path);
      for (auto it = after.begin(); it != after.end();)
        it = (it->first.size() > 4 &&
              (it->first.substr(it->first.size() - 4) == "-shm" ||
               (it->first.substr(it->first.size() - 4) == "-wal" && it->second.empty())))
                 ? after.erase(it)
                 : std::next(it);
      EXPECT_EQ(after, before) << bad << " into " << output;
    }
  }
}

TEST(MergeCli, HelpAndUsage) {
  TempDir dir;
  const CmdResult help = tiletune_cmd("merge --help", dir);
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("usage: tiletune merge"), std::string::npos);
  EXPECT_NE(tiletune_cmd("--help", dir).out.find("merge "), std::string::npos);
  EXPECT_EQ(tiletune_cmd("merge a.db", dir).status, 2);
  EXPECT_EQ(tiletune_cmd("merge -o all.db", dir).status, 2);
  EXPECT_FALSE(fs::exists(dir.path / "all.db"));
}

}  // namespace
