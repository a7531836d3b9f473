// tiletune import/export --format kernel_tuner as a user meets it: Kernel Tuner cache files of a built-in
// family read as one sweep, written back out, and every malformed file refused in one line without changing
// the database.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_support.hpp"

using tiletune::test::CmdResult;
using tiletune::test::lines;
using tiletune::test::read_bytes;
using tiletune::test::TempDir;
using tiletune::test::tiletune_cmd;

namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// gemm_tiled on the H100, as Kernel Tuner writes its cache: the header, then one entry a line.
std::string header(const std::string& device = "NVIDIA H100 80GB HBM3",
                   const std::string& size = "[1000, 1000, 1000]",
                   const std::string& keys = R"("TILE_WIDTH", "BLOCK_Y", "TILE_K")") {
  return "{\n\"device_name\": \"" + device +
         "\",\n\"kernel_name\": \"gemm_tiled\",\n\"problem_size\": " + size + ",\n\"tune_params_keys\": [" +
         keys +
         "],\n\"tune_params\": {\"TILE_WIDTH\": [16, 32], \"BLOCK_Y\": [16, 32], \"TILE_K\": [16, 32]},\n"
         "\"objective\": \"time\",\n\"cache\": {";
}

// Kernel Tuner 1.5: failures as "__error__".
const std::string entries15 = R"(
"16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "times": [0.52, 0.49, 0.5, 0.51], "compile_time": 120.5, "verification_time": 0, "benchmark_time": 10.25, "strategy_time": 0, "framework_time": 0.3, "timestamp": "2024-05-01 12:34:56.789012+00:00"},
"32,32,32": {"TILE_WIDTH": 32, "BLOCK_Y": 32, "TILE_K": 32, "__error__": "InvalidConfig", "compile_time": 0, "verification_time": 0, "benchmark_time": 0, "timestamp": "2024-05-01 12:34:57.000000+00:00"},
"32,16,32": {"TILE_WIDTH": 32, "BLOCK_Y": 16, "TILE_K": 32, "time": 0.4, "times": [0.39, 0.41, 0.4], "compile_time": 100, "verification_time": 0, "benchmark_time": 9, "timestamp": "2024-05-01 12:34:58.000000+00:00"},
"16,32,16": {"TILE_WIDTH": 16, "BLOCK_Y": 32, "TILE_K": 16, "__error__": "CompilationFailedConfig", "compile_time": 50, "verification_time": 0, "benchmark_time": 0, "timestamp": "2024-05-01 12:34:59.000000+00:00"},
"32,16,16": {"TILE_WIDTH": 32, "BLOCK_Y": 16, "TILE_K": 16, "__error__": "RuntimeFailedConfig", "compile_time": 80, "verification_time": 0, "benchmark_time": 1, "timestamp": "2024-05-01 12:35:00.000000+00:00"},)";

// Kernel Tuner 1.0 to 1.3: the failure name in place of the time.
const std::string entries13 = R"(
"16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "times": [0.52, 0.49, 0.5, 0.51], "compile_time": 120.5, "verification_time": 0, "benchmark_time": 10.25},
"32,32,32": {"TILE_WIDTH": 32, "BLOCK_Y": 32, "TILE_K": 32, "time": "InvalidConfig", "compile_time": 0},
"32,16,32": {"TILE_WIDTH": 32, "BLOCK_Y": 16, "TILE_K": 32, "time": 0.4, "times": [0.39, 0.41, 0.4], "compile_time": 100},
"16,32,16": {"TILE_WIDTH": 16, "BLOCK_Y": 32, "TILE_K": 16, "time": "CompilationFailedConfig", "compile_time": 50},
"32,16,16": {"TILE_WIDTH": 32, "BLOCK_Y": 16, "TILE_K": 16, "time": "RuntimeFailedConfig", "compile_time": 80},)";

std::string closed(const std::string& head, std::string entries) {
  entries.pop_back();  // the last ","
  return head + entries + "}\n}\n";
}

nlohmann::json exported(const TempDir& dir, const std::string& db = "tiletune.db") {
  const CmdResult r = tiletune_cmd("export --format json --db " + db, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

// The stored results of the only sweep, by params text ("BLOCK_Y=16,TILE_K=16,TILE_WIDTH=16").
std::map<std::string, nlohmann::json> results_by_params(const nlohmann::json& doc) {
  std::map<std::string, nlohmann::json> out;
  EXPECT_EQ(doc.at("sweeps").size(), 1u);
  for (const auto& r : doc.at("sweeps").at(0).at("results")) {
    std::string key;
    for (const auto& [name, value] : r.at("params").items())
      key += (key.empty() ? "" : ",") + name + "=" + std::to_string(value.get<long long>());
    out[key] = r;
  }
  return out;
}

void expect_imported_outcomes(const TempDir& dir) {
  const auto results = results_by_params(exported(dir));
  ASSERT_EQ(results.size(), 5u);
  const auto& fast = results.at("BLOCK_Y=16,TILE_K=32,TILE_WIDTH=32");
  EXPECT_EQ(fast.at("outcome"), "ok");
  EXPECT_EQ(fast.at("median_ms"), 0.4);
  EXPECT_EQ(fast.at("min_ms"), 0.39);
  EXPECT_EQ(fast.at("repetitions"), 3);
  EXPECT_EQ(fast.at("metric_unit"), "GFLOP/s");
  EXPECT_DOUBLE_EQ(fast.at("metric").get<double>(), 2e9 / 0.4e-3 / 1e9);
  EXPECT_EQ(fast.at("compile_ms"), 100.0);
  EXPECT_EQ(results.at("BLOCK_Y=16,TILE_K=16,TILE_WIDTH=16").at("median_ms"), 0.5);
  EXPECT_EQ(results.at("BLOCK_Y=16,TILE_K=16,TILE_WIDTH=16").at("min_ms"), 0.49);
  EXPECT_EQ(results.at("BLOCK_Y=32,TILE_K=32,TILE_WIDTH=32").at("outcome"), "pruned");
  EXPECT_EQ(results.at("BLOCK_Y=32,TILE_K=16,TILE_WIDTH=16").at("outcome"), "compile_failed");
  EXPECT_EQ(results.at("BLOCK_Y=16,TILE_K=16,TILE_WIDTH=32").at("outcome"), "runtime_failed");
  const CmdResult best =
      tiletune_cmd("query --family gemm_tiled --size 1000x1000x1000 --device 'NVIDIA H100 80GB HBM3'", dir);
  EXPECT_NE(best.out.find("TILE_WIDTH=32"), std::string::npos) << best.out << best.err;
}

}  // namespace

TEST(KernelTunerCli, ImportsTheFormOfVersion15) {
  TempDir dir;
  write_text(dir.path / "cache.json", closed(header(), entries15));
  const CmdResult r = tiletune_cmd("import --format kernel_tuner cache.json --family gemm_tiled", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("gemm_tiled at 1000x1000x1000 on NVIDIA H100 80GB HBM3 (profile:h100)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("imported 1 sweeps (5 results)"), std::string::npos) << r.out;
  expect_imported_outcomes(dir);
  const CmdResult shown = tiletune_cmd("show", dir);
  EXPECT_NE(shown.out.find("compile_failed: 1  ok: 2  pruned: 1  runtime_failed: 1"), std::string::npos)
      << shown.out;
}

TEST(KernelTunerCli, ImportsTheFailureNamesOfVersions10To13) {
  TempDir dir;
  write_text(dir.path / "cache.json", closed(header(), entries13));
  const CmdResult r = tiletune_cmd("import cache.json --format kernel_tuner --family gemm_tiled", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_imported_outcomes(dir);
}

TEST(KernelTunerCli, ImportsAnUnterminatedCacheOnce) {
  TempDir dir;
  write_text(dir.path / "open.json", header() + entries15);  // ends with ",": Kernel Tuner was still running
  const CmdResult r = tiletune_cmd("import --format kernel_tuner open.json --family gemm_tiled", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("imported 1 sweeps (5 results)"), std::string::npos) << r.out;
  expect_imported_outcomes(dir);
  // Again, and the same content closed: stored once.
  write_text(dir.path / "closed.json", closed(header(), entries15));
  for (const char* file : {"open.json", "closed.json"}) {
    const CmdResult again =
        tiletune_cmd(std::string("import --format kernel_tuner ") + file + " --family gemm_tiled", dir);
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.out.find("imported 0 sweeps (0 results), skipped 1 already present"), std::string::npos)
        << again.out;
  }
  EXPECT_EQ(exported(dir).at("sweeps").size(), 1u);
}

TEST(KernelTunerCli, ExportThenImportGivesTheSameResults) {
  TempDir dir;
  write_text(dir.path / "cache.json", closed(header(), entries15));
  ASSERT_EQ(tiletune_cmd("import --format kernel_tuner cache.json --family gemm_tiled", dir).status, 0);
  const CmdResult out = tiletune_cmd("export --format kernel_tuner --family gemm_tiled -o kt.json", dir);
  ASSERT_EQ(out.status, 0) << out.err;
  const auto cache = nlohmann::json::parse(read_bytes(dir.path / "kt.json"));
  EXPECT_EQ(cache.at("device_name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(cache.at("kernel_name"), "gemm_tiled");
  EXPECT_EQ(cache.at("problem_size"), nlohmann::json({1000, 1000, 1000}));
  EXPECT_EQ(cache.at("tune_params").at("TILE_WIDTH"), nlohmann::json({4, 8, 12, 16, 20, 24, 32, 48, 64}));
  EXPECT_EQ(cache.at("cache").at("16,32,32").at("time"), 0.4);
  EXPECT_EQ(cache.at("cache").at("32,32,32").at("__error__"), "InvalidConfig");

  const CmdResult back =
      tiletune_cmd("import --format kernel_tuner kt.json --family gemm_tiled --db back.db", dir);
  ASSERT_EQ(back.status, 0) << back.err;
  EXPECT_EQ(results_by_params(exported(dir)), results_by_params(exported(dir, "back.db")));
}

TEST(KernelTunerCli, ExportWritesExactlyOneMeasuredSweep) {
  TempDir dir;
  write_text(dir.path / "cache.json", closed(header(), entries15));
  ASSERT_EQ(tiletune_cmd("import --format kernel_tuner cache.json --family gemm_tiled", dir).status, 0);
  ASSERT_EQ(
      tiletune_cmd("import --format kernel_tuner cache.json --family gemm_tiled --size 2000x2000x2000", dir)
          .status,
      0);
  ASSERT_EQ(
      tiletune_cmd(
          "plan --family gemm_tiled --size 1000x1000x1000 --device-profile h100 --no-compile --store", dir)
          .status,
      0);
  const CmdResult two = tiletune_cmd("export --format kernel_tuner --family gemm_tiled", dir);
  EXPECT_EQ(two.status, 2);
  EXPECT_EQ(lines(two.err), 1) << two.err;
  EXPECT_NE(two.err.find("writes one sweep, and 2 match (ids 2, 1): pick one with --sweep ID"),
            std::string::npos)
      << two.err;
  const CmdResult one =
      tiletune_cmd("export --format kernel_tuner --family gemm_tiled --size 2000x2000x2000", dir);
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out).at("problem_size"), nlohmann::json({2000, 2000, 2000}));
  const CmdResult plan = tiletune_cmd("export --format kernel_tuner --sweep 3", dir);
  EXPECT_EQ(plan.status, 1);
  EXPECT_NE(plan.err.find("sweep 3 is a plan"), std::string::npos) << plan.err;
  const CmdResult json_sweep = tiletune_cmd("export --format json --sweep 1", dir);
  EXPECT_EQ(json_sweep.status, 2);
  EXPECT_NE(json_sweep.err.find("--sweep picks the sweep of --format kernel_tuner"), std::string::npos);
}

TEST(KernelTunerCli, DeviceComesFromTheDatabaseAProfileOrTheOption) {
  TempDir dir;
  // A device only the database knows: stored by a plan for a profile of that name.
  write_text(dir.path / "rtx3090.json", R"({"base": "h100", "name": "NVIDIA GeForce RTX 3090"})");
  ASSERT_EQ(
      tiletune_cmd(
          "plan --family gemm_tiled --size 1000x1000x1000 --device-profile rtx3090.json --no-compile --store",
          dir)
          .status,
      0);
  write_text(dir.path / "rtx.json", closed(header("NVIDIA GeForce RTX 3090"), entries15));
  const CmdResult stored = tiletune_cmd("import --format kernel_tuner rtx.json --family gemm_tiled", dir);
  ASSERT_EQ(stored.status, 0) << stored.err;
  EXPECT_NE(stored.out.find("on NVIDIA GeForce RTX 3090 (profile:rtx3090)"), std::string::npos) << stored.out;

  write_text(dir.path / "other.json", closed(header("Some Unknown GPU"), entries15));
  const CmdResult unknown = tiletune_cmd("import --format kernel_tuner other.json --family gemm_tiled", dir);
  EXPECT_EQ(unknown.status, 1);
  EXPECT_EQ(lines(unknown.err), 1) << unknown.err;
  EXPECT_NE(
      unknown.err.find("device_name 'Some Unknown GPU' is no device in the database and no built-in profile"),
      std::string::npos)
      << unknown.err;
  EXPECT_NE(unknown.err.find("pass --device-profile"), std::string::npos);
  const CmdResult chosen =
      tiletune_cmd("import --format kernel_tuner other.json --family gemm_tiled --device-profile a100", dir);
  ASSERT_EQ(chosen.status, 0) << chosen.err;
  EXPECT_NE(chosen.out.find("(profile:a100)"), std::string::npos) << chosen.out;
}

TEST(KernelTunerCli, SizeOverridesTheProblemSize) {
  TempDir dir;
  write_text(dir.path / "cache.json", closed(header("NVIDIA H100 80GB HBM3", "\"callable\""), entries15));
  const CmdResult none = tiletune_cmd("import --format kernel_tuner cache.json --family gemm_tiled", dir);
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.err.find("problem_size is not a list of sizes: give --size (gemm_tiled: M, N, K)"),
            std::string::npos)
      << none.err;
  const CmdResult sized =
      tiletune_cmd("import --format kernel_tuner cache.json --family gemm_tiled --size 2^10x512x256", dir);
  ASSERT_EQ(sized.status, 0) << sized.err;
  EXPECT_NE(sized.out.find("gemm_tiled at 1024x512x256"), std::string::npos) << sized.out;
}

TEST(KernelTunerCli, MalformedCachesChangeNothingAndSayWhyInOneLine) {
  TempDir dir;
  write_text(dir.path / "good.json", closed(header(), entries15));
  ASSERT_EQ(tiletune_cmd("import --format kernel_tuner good.json --family gemm_tiled", dir).status, 0);
  const auto db = dir.path / "tiletune.db";
  const std::string before = read_bytes(db);
  ASSERT_FALSE(before.empty());
  const std::string entry = R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5})";
  const auto one = [&](const std::string& e) { return header() + "\n" + e + "}\n}\n"; };
  struct Case {
    std::string text, args, expected;
  };
  const std::vector<Case> cases = {
      {"", "", "bad.json: the file is empty (nothing imported)"},
      {"{\"device_name\": ", "", "bad.json: not valid JSON, nor a Kernel Tuner cache cut short"},
      {R"({"format": "tiletune-export"})", "",
       "bad.json: device_name is missing: not a Kernel Tuner cache file"},
      {header() + "\n", "", "bad.json: cache holds no configurations: nothing to import"},
      {one(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": {}})"), "",
       "bad.json: cache[\"16,16,16\"].time must be a number or one of Kernel Tuner's failure names, got {} "
       "(nothing "
       "imported)"},
      {one(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0})"), "",
       "bad.json: cache[\"16,16,16\"].time must be a positive time in ms, got 0"},
      {one(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "__error__": true})"), "",
       "bad.json: cache[\"16,16,16\"].__error__ must be one of Kernel Tuner's failure names"},
      {one(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "time": 0.5})"), "",
       "bad.json: cache[\"16,16,16\"].TILE_K is missing"},
      {one(R"("16,16,16": {"TILE_WIDTH": "16", "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5})"), "",
       "bad.json: cache[\"16,16,16\"].TILE_WIDTH must be an integer, got \"16\""},
      {one(R"("16,16,32": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5})"), "",
       "bad.json: cache[\"16,16,32\"] does not match its parameters (16,16,16)"},
      {one(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "times": [0.5, -1]})"),
       "", "bad.json: cache[\"16,16,16\"].times[1] must be a positive time in ms, got -1"},
      {one(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "timestamp": 17})"),
       "", "bad.json: cache[\"16,16,16\"].timestamp must be a UTC time"},
      {one(R"("13,16,16": {"TILE_WIDTH": 13, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5})"), "",
       "bad.json: cache[\"13,16,16\"].TILE_WIDTH = 13 is not one of gemm_tiled's values (4, 8, 12, 16, 20, "
       "24, 32, 48, "
       "64)"},
      {closed(
           header("NVIDIA H100 80GB HBM3", "[1000, 1000, 1000]", R"("TILE_WIDTH", "block_size_y", "TILE_K")"),
           "\n" + entry + ","),
       "", "bad.json: cache[\"16,16,16\"].block_size_y is missing"},
      {closed(
           header("NVIDIA H100 80GB HBM3", "[1000, 1000, 1000]", R"("TILE_WIDTH", "BLOCK_Y", "TILE_K", "X")"),
           "\n"
           R"("16,16,16,1": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "X": 1, "time": 0.5},)"),
       "",
       "bad.json: tune_params_keys[3] 'X' is not a parameter of gemm_tiled (BLOCK_Y, TILE_K, TILE_WIDTH)"},
      {closed(header("NVIDIA H100 80GB HBM3", "[1000, 1000]"), "\n" + entry + ","), "",
       "bad.json: problem_size [1000, 1000] has 2 dimensions, gemm_tiled has 3 (M, N, K): give --size"},
      {closed(header("NVIDIA H100 80GB HBM3", "[1000, 0, 1000]"), "\n" + entry + ","), "",
       "bad.json: problem_size must be a positive integer or a list of them, got [1000,0,1000]"},
      {closed(header("A GPU Nobody Knows"), "\n" + entry + ","), "",
       "bad.json: device_name 'A GPU Nobody Knows' is no device in the database and no built-in profile"},
      {closed(header(), "\n" + entry + ","), "--device-profile nosuch", "unknown device profile 'nosuch'"},
      {closed(header(), "\n" + entry + ","), "--family nosuch", "unknown family 'nosuch'"},
      {std::string(200, '{'), "", "bad.json: the document is nested 200 levels deep (at most 64)"},
  };
  for (const auto& c : cases) {
    write_text(dir.path / "bad.json", c.text);
    const std::string family = c.args.find("--family") == std::string::npos ? " --family gemm_tiled" : "";
    const CmdResult r = tiletune_cmd("import --format kernel_tuner bad.json" + family + " " + c.args, dir);
    EXPECT_EQ(r.status, 1) << c.expected;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << "expected: " << c.expected << "\ngot: " << r.err;
    EXPECT_EQ(read_bytes(db), before) << c.expected;
  }
  // Without --family there is nothing to map the cache onto.
  const CmdResult usage = tiletune_cmd("import --format kernel_tuner good.json", dir);
  EXPECT_EQ(usage.status, 2);
  EXPECT_NE(usage.err.find("--format kernel_tuner needs --family NAME"), std::string::npos) << usage.err;
  // A cache read as a tiletune export says what it may be.
  const CmdResult as_json = tiletune_cmd("import good.json", dir);
  EXPECT_EQ(as_json.status, 1);
  EXPECT_NE(as_json.err.find("a Kernel Tuner cache? read it with --format kernel_tuner --family NAME"),
            std::string::npos)
      << as_json.err;
  EXPECT_EQ(read_bytes(db), before);
}

// A cache that calls ok what gemm_tiled can never run on the H100 (TILE_K equal to neither tile side; 64 x 32
// threads a block), faster than anything real: stored as pruned with the plan's reason, and never the best.
TEST(KernelTunerCli, OkEntriesThePlanPrunesAreStoredAsPruned) {
  TempDir dir;
  const std::string impossible = R"(
"32,32,16": {"TILE_WIDTH": 32, "BLOCK_Y": 32, "TILE_K": 16, "time": 0.01, "compile_time": 1},
"64,32,64": {"TILE_WIDTH": 64, "BLOCK_Y": 32, "TILE_K": 64, "time": 0.02, "compile_time": 1},)";
  write_text(dir.path / "cache.json", closed(header(), entries15 + impossible));
  const CmdResult r = tiletune_cmd("import --format kernel_tuner cache.json --family gemm_tiled", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto results = results_by_params(exported(dir));
  const auto& constraint = results.at("BLOCK_Y=32,TILE_K=16,TILE_WIDTH=32");
  EXPECT_EQ(constraint.at("outcome"), "pruned");
  EXPECT_EQ(constraint.at("reason"),
            "constraint: TILE_K must equal TILE_WIDTH or BLOCK_Y (Kernel Tuner: ok)");
  EXPECT_FALSE(constraint.contains("median_ms") && !constraint.at("median_ms").is_null());
  const auto& threads = results.at("BLOCK_Y=32,TILE_K=64,TILE_WIDTH=64");
  EXPECT_EQ(threads.at("outcome"), "pruned");
  EXPECT_EQ(threads.at("reason"), "threads: 2048 per block > 1024 (Kernel Tuner: ok)");
  const CmdResult best =
      tiletune_cmd("query --family gemm_tiled --size 1000x1000x1000 --device 'NVIDIA H100 80GB HBM3'", dir);
  EXPECT_NE(best.out.find("TILE_WIDTH=32"), std::string::npos) << best.out << best.err;
  EXPECT_NE(best.out.find("TILE_K=32"), std::string::npos) << best.out << best.err;
  EXPECT_EQ(best.out.find("TILE_WIDTH=64"), std::string::npos) << best.out;
}

// A tiletune export edited to claim as ok, and fastest, a configuration gemm_tiled cannot run on the H100
// (64 x 32 threads a block): imported as JSON, and merged, it is stored as pruned with the plan's reason,
// and query never returns it.
TEST(KernelTunerCli, ExportsThatClaimWhatThePlanPrunesAreStoredAsPruned) {
  TempDir dir;
  write_text(dir.path / "cache.json", closed(header(), entries15));
  ASSERT_EQ(tiletune_cmd("import --format kernel_tuner cache.json --family gemm_tiled", dir).status, 0);
  nlohmann::json doc = exported(dir);
  auto& sweep = doc.at("sweeps").at(0);
  sweep["uid"] = "0123456789abcdef0123456789abcdef";
  nlohmann::json claimed;
  for (const auto& r : sweep.at("results"))
    if (r.at("outcome") == "ok") claimed = r;
  ASSERT_FALSE(claimed.is_null());
  claimed["params"] = {{"BLOCK_Y", 32}, {"TILE_K", 64}, {"TILE_WIDTH", 64}};
  claimed["median_ms"] = 0.001;
  claimed["min_ms"] = 0.001;
  sweep.at("results").push_back(claimed);
  write_text(dir.path / "claims.json", doc.dump());
  const CmdResult r = tiletune_cmd("import claims.json --db claims.db", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("not checked"), std::string::npos) << r.out;
  nlohmann::json stored = exported(dir, "claims.db");
  int found = 0;
  for (const auto& s : stored.at("sweeps"))
    for (const auto& result : s.at("results"))
      if (result.at("params") == claimed.at("params") && s.at("uid") == sweep.at("uid")) {
        ++found;
        EXPECT_EQ(result.at("outcome"), "pruned");
        EXPECT_EQ(result.at("reason"), "threads: 2048 per block > 1024 (imported as ok)");
      }
  EXPECT_EQ(found, 1);
  const CmdResult merged = tiletune_cmd("merge claims.db -o merged.db", dir);
  ASSERT_EQ(merged.status, 0) << merged.err;
  for (const std::string db : {"claims.db", "merged.db"}) {
    const CmdResult best = tiletune_cmd(
        "query --db " + db + " --family gemm_tiled --size 1000x1000x1000 --device 'NVIDIA H100 80GB HBM3'",
        dir);
    EXPECT_EQ(best.status, 0) << best.err;
    EXPECT_EQ(best.out.find("TILE_WIDTH=64"), std::string::npos) << db << ": " << best.out;
  }
}
