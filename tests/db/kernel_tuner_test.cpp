// Kernel Tuner cache files: read in every form Kernel Tuner writes (1.5's "__error__", the failure names of
// 1.0 to 1.3 in place of the time, a file cut short), stored as one sweep through the JSON importer, written
// back out from a sweep, and hostile files refused in one line.
#include "tiletune/kernel_tuner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace tiletune {
namespace {

using nlohmann::json;
using test::TempDir;

const char* header = R"({
"device_name": "NVIDIA H100 80GB HBM3",
"kernel_name": "gemm_tiled",
"problem_size": [
1000,
1000,
1000
],
"tune_params_keys": [
"TILE_WIDTH",
"BLOCK_Y",
"TILE_K"
],
"tune_params": {
"TILE_WIDTH": [8, 16, 32],
"BLOCK_Y": [4, 8, 16, 32],
"TILE_K": [8, 16, 32]
},
"objective": "time",
"cache": {)";

// Kernel Tuner 1.5: failures carry "__error__"; entries are appended one a line, each ending with ",".
const char* entries15 =
    R"(
"16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "times": [0.52, 0.49, 0.5, 0.51], "compile_time": 120.5, "verification_time": 1.5, "benchmark_time": 10.25, "strategy_time": 0, "framework_time": 0.3, "timestamp": "2024-05-01 12:34:56.789012+00:00"},
"32,32,32": {"TILE_WIDTH": 32, "BLOCK_Y": 32, "TILE_K": 32, "__error__": "InvalidConfig", "compile_time": 0, "verification_time": 0, "benchmark_time": 0, "timestamp": "2024-05-01 12:34:57.000000+00:00"},
"32,16,32": {"TILE_WIDTH": 32, "BLOCK_Y": 16, "TILE_K": 32, "time": 0.4, "times": [0.39, 0.41, 0.4], "compile_time": 100, "verification_time": 0, "benchmark_time": 9, "timestamp": "2024-05-01 12:34:58+00:00"},
"8,4,8": {"TILE_WIDTH": 8, "BLOCK_Y": 4, "TILE_K": 8, "__error__": "CompilationFailedConfig", "compile_time": 50, "verification_time": null, "benchmark_time": null, "timestamp": "2024-05-01 12:34:59.5+00:00"},
"16,8,16": {"TILE_WIDTH": 16, "BLOCK_Y": 8, "TILE_K": 16, "__error__": "RuntimeFailedConfig", "compile_time": 80, "verification_time": 0, "benchmark_time": 2, "timestamp": "2024-05-01 12:35:00.000001+00:00"},)";

// Kernel Tuner 1.0 to 1.3: the failure name in place of the objective's value.
const char* entries13 =
    R"(
"16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "times": [0.52, 0.49, 0.5, 0.51], "compile_time": 120.5, "verification_time": 0, "benchmark_time": 10.25, "strategy_time": 0, "framework_time": 0.3, "timestamp": "2024-05-01 12:34:56.789012+00:00"},
"32,32,32": {"TILE_WIDTH": 32, "BLOCK_Y": 32, "TILE_K": 32, "time": "InvalidConfig", "compile_time": 0, "verification_time": 0, "benchmark_time": 0, "timestamp": "2024-05-01 12:34:57.000000+00:00"},
"8,4,8": {"TILE_WIDTH": 8, "BLOCK_Y": 4, "TILE_K": 8, "time": "CompilationFailedConfig", "compile_time": 50, "verification_time": 0, "benchmark_time": 0},
"16,8,16": {"TILE_WIDTH": 16, "BLOCK_Y": 8, "TILE_K": 16, "time": "RuntimeFailedConfig", "compile_time": 80},)";

std::string closed(const std::string& entries) {
  std::string text = std::string(header) + entries;
  text.pop_back();  // the last entry's ","
  return text + "}\n}\n";
}

KernelTunerTarget gemm_target() {
  KernelTunerTarget t;
  t.family = "gemm_tiled";
  t.template_hash = "0123456789abcdef";
  t.description_json =
      R"({"name": "gemm_tiled", "kernel": "gemm_tiled", "parameters": {"TILE_WIDTH": {"values": [8, 16, 32]},
          "BLOCK_Y": {"values": [4, 8, 16, 32]}, "TILE_K": {"values": [8, 16, 32]}}})";
  t.space_hash = "fedcba9876543210";
  t.parameters = {{"BLOCK_Y", {4, 8, 16, 32}}, {"TILE_K", {8, 16, 32}}, {"TILE_WIDTH", {8, 16, 32}}};
  t.metric_unit = "GFLOP/s";
  t.work = 2e9;
  t.device = test::device("NVIDIA H100 80GB HBM3", "profile:h100", "sm_90");
  t.device.is_profile = true;
  t.problem = ProblemKey{{1000, 1000, 1000}, {}};
  return t;
}

ImportSummary import_cache(Store& store, const std::string& text,
                           const KernelTunerTarget& target = gemm_target()) {
  return store.import_json(kernel_tuner_import_document(read_kernel_tuner_cache(text), target));
}

const ResultRecord& result_of(const std::vector<StoredResult>& results, const std::string& params) {
  for (const auto& r : results)
    if (params_to_text(r.record.params) == params) return r.record;
  throw std::runtime_error("no result " + params);
}

TEST(KernelTuner, ReadsTheFormOfVersion15) {
  const KernelTunerCache cache = read_kernel_tuner_cache(closed(entries15));
  EXPECT_EQ(cache.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(cache.kernel_name, "gemm_tiled");
  ASSERT_TRUE(cache.problem_size);
  EXPECT_EQ(*cache.problem_size, (std::vector<std::int64_t>{1000, 1000, 1000}));
  EXPECT_EQ(cache.param_keys, (std::vector<std::string>{"TILE_WIDTH", "BLOCK_Y", "TILE_K"}));
  ASSERT_EQ(cache.entries.size(), 5u);
  std::map<std::string, const KernelTunerEntry*> by_key;
  for (const auto& e : cache.entries) by_key[e.key] = &e;
  const KernelTunerEntry& ok = *by_key.at("16,16,16");
  EXPECT_EQ(ok.outcome, Outcome::ok);
  EXPECT_EQ(ok.time_ms, 0.5);
  EXPECT_EQ(ok.times_ms, (std::vector<double>{0.52, 0.49, 0.5, 0.51}));
  EXPECT_EQ(ok.compile_ms, 120.5);
  EXPECT_EQ(ok.measure_ms, 11.75);
  EXPECT_EQ(ok.measured_at, "2024-05-01T12:34:56.789Z");
  EXPECT_EQ(by_key.at("32,32,32")->outcome, Outcome::pruned);
  EXPECT_EQ(by_key.at("32,32,32")->reason, "Kernel Tuner: InvalidConfig");
  EXPECT_EQ(by_key.at("8,4,8")->outcome, Outcome::compile_failed);
  EXPECT_FALSE(by_key.at("8,4,8")->measure_ms);  // both None
  EXPECT_EQ(by_key.at("8,4,8")->measured_at, "2024-05-01T12:34:59.500Z");
  EXPECT_EQ(by_key.at("16,8,16")->outcome, Outcome::runtime_failed);
  EXPECT_EQ(by_key.at("32,16,32")->measured_at, "2024-05-01T12:34:58.000Z");
}

TEST(KernelTuner, ReadsTheFailureNamesOfVersions10To13) {
  const KernelTunerCache cache = read_kernel_tuner_cache(closed(entries13));
  std::map<std::string, Outcome> outcomes;
  for (const auto& e : cache.entries) outcomes[e.key] = e.outcome;
  EXPECT_EQ(outcomes, (std::map<std::string, Outcome>{{"16,16,16", Outcome::ok},
                                                      {"32,32,32", Outcome::pruned},
                                                      {"8,4,8", Outcome::compile_failed},
                                                      {"16,8,16", Outcome::runtime_failed}}));
}

TEST(KernelTuner, ReadsAFileCutShortAsKernelTunerCloses) {
  const std::string open = std::string(header) + entries15;  // ends with ","
  EXPECT_EQ(read_kernel_tuner_cache(open).entries.size(), 5u);
  EXPECT_EQ(read_kernel_tuner_cache(open + "\n\n").entries.size(), 5u);
  std::string no_comma = open;
  no_comma.pop_back();
  EXPECT_EQ(read_kernel_tuner_cache(no_comma).entries.size(), 5u);
  // The content is the same however it ends: the same uid, so it imports once.
  EXPECT_EQ(read_kernel_tuner_cache(open).content_hash,
            read_kernel_tuner_cache(closed(entries15)).content_hash);
  // Only the header: Kernel Tuner had just begun.
  try {
    (void)read_kernel_tuner_cache(header);
    FAIL() << "a cache without entries was read";
  } catch (const StoreError& e) {
    EXPECT_STREQ(e.what(), "import: cache holds no configurations: nothing to import");
  }
}

TEST(KernelTuner, ImportsOneSweepWithItsOutcomesTimesAndBest) {
  TempDir dir;
  Store store = Store::open(dir / "t.db");
  const ImportSummary s = import_cache(store, closed(entries15));
  EXPECT_EQ(s.sweeps_added, 1);
  EXPECT_EQ(s.results_added, 5);
  const auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  const SweepInfo& sweep = sweeps.front();
  EXPECT_EQ(sweep.family, "gemm_tiled");
  EXPECT_EQ(sweep.device.uuid, "profile:h100");
  EXPECT_EQ(sweep.problem.size_text(), "1000x1000x1000");
  EXPECT_EQ(sweep.kind, "sweep");
  EXPECT_EQ(sweep.strategy, "kernel_tuner");
  EXPECT_EQ(sweep.status, "done");
  EXPECT_EQ(sweep.started_at, "2024-05-01T12:34:56.789Z");
  EXPECT_EQ(sweep.ended_at, "2024-05-01T12:35:00.000Z");
  EXPECT_EQ(sweep.uid.size(), 32u);

  const auto results = store.results(sweep.id);
  const ResultRecord& fast = result_of(results, "BLOCK_Y=16,TILE_K=32,TILE_WIDTH=32");
  EXPECT_EQ(fast.outcome, Outcome::ok);
  EXPECT_EQ(fast.median_ms, 0.4);
  EXPECT_EQ(fast.min_ms, 0.39);
  EXPECT_EQ(fast.repetitions, 3);
  ASSERT_TRUE(fast.spread);
  EXPECT_NEAR(*fast.spread, 0.01 / 0.4, 1e-12);  // p75 0.405, p25 0.395
  ASSERT_TRUE(fast.metric);
  EXPECT_DOUBLE_EQ(*fast.metric, 2e9 / 0.4e-3 / 1e9);
  EXPECT_EQ(fast.metric_unit, "GFLOP/s");
  const ResultRecord& slow = result_of(results, "BLOCK_Y=16,TILE_K=16,TILE_WIDTH=16");
  EXPECT_EQ(slow.median_ms, 0.5);
  EXPECT_EQ(slow.min_ms, 0.49);
  EXPECT_EQ(slow.repetitions, 4);
  EXPECT_EQ(result_of(results, "BLOCK_Y=32,TILE_K=32,TILE_WIDTH=32").outcome, Outcome::pruned);
  EXPECT_EQ(result_of(results, "BLOCK_Y=4,TILE_K=8,TILE_WIDTH=8").outcome, Outcome::compile_failed);
  const ResultRecord& crashed = result_of(results, "BLOCK_Y=8,TILE_K=16,TILE_WIDTH=16");
  EXPECT_EQ(crashed.outcome, Outcome::runtime_failed);
  EXPECT_FALSE(crashed.median_ms);

  const auto best = store.best("gemm_tiled", "NVIDIA H100 80GB HBM3", ProblemKey{{1000, 1000, 1000}, {}});
  ASSERT_TRUE(best);
  EXPECT_EQ(params_to_text(best->record.params), "BLOCK_Y=16,TILE_K=32,TILE_WIDTH=32");
}

TEST(KernelTuner, ImportingTheSameCacheTwiceStoresItOnce) {
  TempDir dir;
  Store store = Store::open(dir / "t.db");
  EXPECT_EQ(import_cache(store, closed(entries15)).sweeps_added, 1);
  // The same content, cut short and spaced differently: the same sweep.
  const ImportSummary again = import_cache(store, std::string(header) + entries15);
  EXPECT_EQ(again.sweeps_added, 0);
  EXPECT_EQ(again.sweeps_skipped, 1);
  EXPECT_EQ(store.sweeps().size(), 1u);
  // Another problem is another sweep.
  KernelTunerTarget other = gemm_target();
  other.problem = ProblemKey{{2000, 2000, 2000}, {}};
  EXPECT_EQ(import_cache(store, closed(entries15), other).sweeps_added, 1);
  EXPECT_EQ(store.sweeps().size(), 2u);
}

TEST(KernelTuner, OldAndNewFormsStoreTheSameOutcomes) {
  TempDir dir;
  Store store = Store::open(dir / "t.db");
  import_cache(store, closed(entries13));
  const auto results = store.results(store.sweeps().front().id);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(result_of(results, "BLOCK_Y=16,TILE_K=16,TILE_WIDTH=16").median_ms, 0.5);
  EXPECT_EQ(result_of(results, "BLOCK_Y=32,TILE_K=32,TILE_WIDTH=32").outcome, Outcome::pruned);
  EXPECT_EQ(result_of(results, "BLOCK_Y=4,TILE_K=8,TILE_WIDTH=8").outcome, Outcome::compile_failed);
  EXPECT_EQ(result_of(results, "BLOCK_Y=8,TILE_K=16,TILE_WIDTH=16").outcome, Outcome::runtime_failed);
}

void expect_same_results(const std::vector<StoredResult>& a, const std::vector<StoredResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const ResultRecord &x = a[i].record, &y = b[i].record;
    const std::string at = params_to_text(x.params);
    EXPECT_EQ(x.params, y.params) << at;
    EXPECT_EQ(x.outcome, y.outcome) << at;
    EXPECT_EQ(x.reason, y.reason) << at;
    EXPECT_EQ(x.median_ms, y.median_ms) << at;
    EXPECT_EQ(x.min_ms, y.min_ms) << at;
    EXPECT_EQ(x.spread, y.spread) << at;
    EXPECT_EQ(x.repetitions, y.repetitions) << at;
    EXPECT_EQ(x.metric, y.metric) << at;
    EXPECT_EQ(x.compile_ms, y.compile_ms) << at;
    EXPECT_EQ(x.measure_ms, y.measure_ms) << at;
    EXPECT_EQ(x.times_ms, y.times_ms) << at;
    EXPECT_EQ(a[i].measured_at, b[i].measured_at) << at;
  }
}

TEST(KernelTuner, ExportThenImportGivesTheSameResults) {
  TempDir dir;
  Store first = Store::open(dir / "a.db");
  import_cache(first, closed(entries15));
  const SweepInfo sweep = first.sweeps().front();
  const std::string text = export_kernel_tuner(first, sweep.id);

  // What Kernel Tuner reads: a closed file ending "}\n}" (read_cache's test), 1.5's "__error__".
  const std::string trimmed = text.substr(0, text.find_last_not_of("\n") + 1);
  EXPECT_EQ(trimmed.substr(trimmed.size() - 3), "}\n}");
  const json doc = json::parse(text);
  EXPECT_EQ(doc.at("device_name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(doc.at("kernel_name"), "gemm_tiled");
  EXPECT_EQ(doc.at("problem_size"), json({1000, 1000, 1000}));
  EXPECT_EQ(doc.at("tune_params_keys"), json({"BLOCK_Y", "TILE_K", "TILE_WIDTH"}));
  EXPECT_EQ(doc.at("tune_params").at("BLOCK_Y"), json({4, 8, 16, 32}));
  const json& fast = doc.at("cache").at("16,32,32");
  EXPECT_EQ(fast.at("time"), 0.4);
  EXPECT_EQ(fast.at("times"), json({0.39, 0.41, 0.4}));
  EXPECT_EQ(fast.at("compile_time"), 100.0);
  EXPECT_EQ(fast.at("timestamp"), "2024-05-01 12:34:58.000000+00:00");
  EXPECT_FALSE(fast.contains("__error__"));
  EXPECT_EQ(doc.at("cache").at("32,32,32").at("__error__"), "InvalidConfig");
  EXPECT_EQ(doc.at("cache").at("4,8,8").at("__error__"), "CompilationFailedConfig");
  EXPECT_EQ(doc.at("cache").at("8,16,16").at("__error__"), "RuntimeFailedConfig");
  EXPECT_FALSE(doc.at("cache").at("32,32,32").contains("time"));

  Store second = Store::open(dir / "b.db");
  EXPECT_EQ(import_cache(second, text).sweeps_added, 1);
  expect_same_results(first.results(sweep.id), second.results(second.sweeps().front().id));
}

TEST(KernelTuner, ExportKeepsOutcomesKernelTunerHasNoNameFor) {
  TempDir dir;
  Store store = Store::open(dir / "a.db");
  SweepSpec spec;
  spec.family = "gemm_tiled";
  spec.template_hash = "0123456789abcdef";
  spec.family_json = gemm_target().description_json;
  spec.space_hash = "fedcba9876543210";
  spec.device = gemm_target().device;
  spec.problem = ProblemKey{{1000, 1000, 1000}, {}};
  std::vector<ResultRecord> records;
  const auto record = [](std::int64_t tile, Outcome outcome, const std::string& reason) {
    ResultRecord r;
    r.params = {{"BLOCK_Y", 8}, {"TILE_K", tile}, {"TILE_WIDTH", tile}};
    r.outcome = outcome;
    r.reason = reason;
    return r;
  };
  ResultRecord ok = record(16, Outcome::ok, "");
  ok.median_ms = 0.25;
  ok.min_ms = 0.2;
  ok.repetitions = 3;
  ok.spread = 0.1;
  ok.times_ms = {0.2, 0.25, 0.3};
  records.push_back(ok);
  records.push_back(record(8, Outcome::wrong_result, "1 of 1000000 elements of C differ"));
  records.push_back(record(32, Outcome::timeout, "no result within 2 s"));
  const std::int64_t id = store.add_sweep(spec, records);
  const std::string text = export_kernel_tuner(store, id);
  const json doc = json::parse(text);
  EXPECT_EQ(doc.at("cache").at("8,8,8").at("__error__"), "RuntimeFailedConfig");
  EXPECT_EQ(doc.at("cache").at("8,8,8").at("tiletune_outcome"), "wrong_result");
  EXPECT_EQ(doc.at("cache").at("8,32,32").at("tiletune_outcome"), "timeout");

  Store back = Store::open(dir / "b.db");
  import_cache(back, text);
  const auto results = back.results(back.sweeps().front().id);
  EXPECT_EQ(result_of(results, "BLOCK_Y=8,TILE_K=8,TILE_WIDTH=8").outcome, Outcome::wrong_result);
  EXPECT_EQ(result_of(results, "BLOCK_Y=8,TILE_K=8,TILE_WIDTH=8").reason,
            "1 of 1000000 elements of C differ");
  EXPECT_EQ(result_of(results, "BLOCK_Y=8,TILE_K=32,TILE_WIDTH=32").outcome, Outcome::timeout);
  EXPECT_EQ(result_of(results, "BLOCK_Y=8,TILE_K=16,TILE_WIDTH=16").times_ms, ok.times_ms);
}

TEST(KernelTuner, ExportRefusesWhatIsNoMeasuredSweep) {
  TempDir dir;
  Store store = Store::open(dir / "a.db");
  SweepSpec spec;
  spec.family = "gemm_tiled";
  spec.template_hash = "0123456789abcdef";
  spec.device = gemm_target().device;
  spec.problem = ProblemKey{{1000, 1000, 1000}, {}};
  spec.kind = "plan";
  ResultRecord r;
  r.params = {{"BLOCK_Y", 8}, {"TILE_K", 8}, {"TILE_WIDTH", 8}};
  const std::int64_t plan = store.add_sweep(spec, {r});
  spec.kind = "sweep";
  const std::int64_t empty = store.add_sweep(spec, {});
  const auto message = [&](std::int64_t id) {
    try {
      (void)export_kernel_tuner(store, id);
    } catch (const StoreError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(plan),
            "export: sweep " + std::to_string(plan) +
                " is a plan: nothing in it was measured, and a Kernel Tuner cache holds measurements");
  EXPECT_EQ(message(empty), "export: sweep " + std::to_string(empty) + " has no results");
  EXPECT_EQ(message(999), "export: sweep 999 is not in the database");
}

// A valid cache with one entry's text replaced.
std::string with_entry(const std::string& entry) { return std::string(header) + "\n" + entry + "}\n}"; }

TEST(KernelTuner, HostileFilesAreRefusedInOneLine) {
  const std::string ok_entry = R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "import: the file is empty"},
      {"[1, 2]", "import: a Kernel Tuner cache is a JSON object, got [1,2]"},
      {"{\"device_name\": \"x\", \"cache\": {\"1\": ",
       "import: not valid JSON, nor a Kernel Tuner cache cut short:"},
      {R"({"kernel_name": "k", "tune_params_keys": ["A"], "cache": {}})",
       "import: device_name is missing: not a Kernel Tuner cache file"},
      {R"({"device_name": 5, "tune_params_keys": ["A"], "cache": {}})",
       "import: device_name must be a string, got 5"},
      {R"({"device_name": "d", "cache": {}})",
       "import: tune_params_keys is missing: not a Kernel Tuner cache file"},
      {R"({"device_name": "d", "tune_params_keys": ["A", "A"], "cache": {}})",
       "import: tune_params_keys[1] repeats \"A\""},
      {R"({"device_name": "d", "tune_params_keys": "A", "cache": {}})",
       "import: tune_params_keys must be a non-empty list of parameter names, got \"A\""},
      {R"({"device_name": "d", "problem_size": [1000, -1], "tune_params_keys": ["A"], "cache": {}})",
       "import: problem_size must be a positive integer or a list of them, got [1000,-1]"},
      {R"({"device_name": "d", "tune_params_keys": ["A"], "cache": []})",
       "import: cache must be an object of \"v1,v2,...\": {...}, got []"},
      {with_entry(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": {}})"),
       "import: cache[\"16,16,16\"].time must be a number or one of Kernel Tuner's failure names, got {}"},
      {with_entry(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": "Fast"})"),
       "import: cache[\"16,16,16\"].time must be a number or one of Kernel Tuner's failure names, got "
       "\"Fast\""},
      {with_entry(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": -1})"),
       "import: cache[\"16,16,16\"].time must be a positive time in ms, got -1"},
      {with_entry(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": NaN})"),
       "import: cache[\"16,16,16\"].time must be a number or one of Kernel Tuner's failure names, got null"},
      {with_entry(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16})"),
       "import: cache[\"16,16,16\"].time is missing"},
      {with_entry(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "time": 0.5})"),
       "import: cache[\"16,16,16\"].TILE_K is missing"},
      {with_entry(R"("16,16,16": {"TILE_WIDTH": 16.5, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5})"),
       "import: cache[\"16,16,16\"].TILE_WIDTH must be an integer, got 16.5"},
      {with_entry(R"("16,16,8": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5})"),
       "import: cache[\"16,16,8\"] does not match its parameters (16,16,16)"},
      {with_entry(R"("16,16,16": [])"), "import: cache[\"16,16,16\"] must be an object, got []"},
      {with_entry(R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "__error__": "Oops"})"),
       "import: cache[\"16,16,16\"].__error__ must be one of Kernel Tuner's failure names (InvalidConfig, "
       "CompilationFailedConfig, RuntimeFailedConfig, ErrorConfig), got \"Oops\""},
      {with_entry(
           R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "times": [0.5, "x"]})"),
       "import: cache[\"16,16,16\"].times[1] must be a positive time in ms, got \"x\""},
      {with_entry(
           R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "times": [0.6, 0.7]})"),
       "import: cache[\"16,16,16\"].times has no run as fast as time (fastest 0.6 ms, time 0.5 ms)"},
      {with_entry(
           R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "compile_time": -3})"),
       "import: cache[\"16,16,16\"].compile_time must be a non-negative time in ms, got -3"},
      {with_entry(
           R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "timestamp": "yesterday"})"),
       "import: cache[\"16,16,16\"].timestamp must be a UTC time like 2024-05-01 12:34:56.789012+00:00, got "
       "\"yesterday\""},
      {with_entry(
           R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "tiletune_outcome": "timeout"})"),
       "import: cache[\"16,16,16\"].tiletune_outcome is timeout, but the entry is no failure"},
      {std::string(100, '[') + std::string(100, ']'),
       "import: the document is nested 100 levels deep (at most 64)"},
      {with_entry(ok_entry) + std::string("\0", 1) + "not json at all",
       "import: the file holds a NUL byte at offset"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      (void)read_kernel_tuner_cache(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const StoreError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      EXPECT_EQ(message.substr(0, expected.size()), expected) << text;
    }
  }
  EXPECT_NO_THROW((void)read_kernel_tuner_cache(with_entry(ok_entry)));
}

TEST(KernelTuner, ParametersMustBeTheFamilys) {
  const auto message = [](const std::string& text) {
    try {
      (void)kernel_tuner_import_document(read_kernel_tuner_cache(text), gemm_target());
    } catch (const StoreError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string text = closed(entries15);
  EXPECT_EQ(message(text), "no error");
  const auto replace = [](std::string s, const std::string& from, const std::string& to) {
    for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
      s.replace(at, from.size(), to);
    return s;
  };
  EXPECT_EQ(message(replace(text, "BLOCK_Y", "block_size_y")),
            "import: tune_params_keys[1] 'block_size_y' is not a parameter of gemm_tiled (BLOCK_Y, TILE_K, "
            "TILE_WIDTH)");
  EXPECT_EQ(
      message(with_entry(R"("12,16,16": {"TILE_WIDTH": 12, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5})")),
      "import: cache[\"12,16,16\"].TILE_WIDTH = 12 is not one of gemm_tiled's values (8, 16, 32)");
  const std::string two = R"({"device_name": "d", "tune_params_keys": ["TILE_WIDTH", "BLOCK_Y"], "cache": {
"16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "time": 0.5}}})";
  EXPECT_EQ(message(two), "import: tune_params_keys lacks gemm_tiled's parameter TILE_K");
}

TEST(KernelTuner, ReadsPythonsNonFiniteNumbersAsNull) {
  // Kernel Tuner's metrics of a failed run may be NaN; Python's json writes it bare.
  const KernelTunerCache cache = read_kernel_tuner_cache(with_entry(
      R"("16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "__error__": "RuntimeFailedConfig", "GFLOP/s": NaN, "power": -Infinity, "note": "NaN stays"})"));
  ASSERT_EQ(cache.entries.size(), 1u);
  EXPECT_EQ(cache.entries.front().outcome, Outcome::runtime_failed);
}

TEST(KernelTuner, ProblemSizeMayBeOneNumberOrComputed) {
  std::string text = closed(entries15);
  const auto at = text.find("\"problem_size\": [");
  const auto end = text.find(']', at);
  EXPECT_EQ(*read_kernel_tuner_cache(text.substr(0, at) + "\"problem_size\": 4096" + text.substr(end + 1))
                 .problem_size,
            (std::vector<std::int64_t>{4096}));
  EXPECT_FALSE(
      read_kernel_tuner_cache(text.substr(0, at) + "\"problem_size\": \"callable\"" + text.substr(end + 1))
          .problem_size);
}

}  // namespace
}  // namespace tiletune
