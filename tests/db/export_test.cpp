#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
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

const DeviceRecord odd_device = test::device(R"(Lab "GPU" \ #2, rev. é)", "GPU-odd", "sm_89");
const std::string awkward_reason = "bad, \"quoted\"\nsecond line";

// Two families, three sweeps (one still running), every outcome, awkward text and doubles.
void fill(Store& store) {
  const std::int64_t a = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  ResultRecord sparse = ok({{"TILE", 64}, {"BLOCK_Y", -1}}, 0.1 + 0.2);
  sparse.min_ms.reset();
  sparse.metric = 1e-300;
  sparse.error.reset();
  sparse.registers.reset();
  sparse.sm_clock_mhz = 123456.789012345;
  ResultRecord timed = ok({{"TILE", 32}, {"BLOCK_Y", 8}}, 1.0);
  timed.compile_ms = 1234.5678;
  timed.measure_ms = 55.25;
  timed.times_ms = {1.25, 1.0, 0.1 + 0.2, 1e-300, 1.0};
  store.add_results(
      a, {timed, sparse, failed({{"TILE", 8}, {"BLOCK_Y", 8}}, Outcome::compile_failed, awkward_reason),
          failed({{"TILE", 4}, {"BLOCK_Y", 8}}, Outcome::pruned, "smem 99000 > 49152"),
          failed({{"TILE", 2}, {"BLOCK_Y", 8}}, Outcome::launch_failed, "launch"),
          failed({{"TILE", 1}, {"BLOCK_Y", 8}}, Outcome::runtime_failed, "illegal address"),
          failed({{"TILE", 3}, {"BLOCK_Y", 8}}, Outcome::timeout, "10 s"),
          failed({{"TILE", 5}, {"BLOCK_Y", 8}}, Outcome::wrong_result, "error 0.2")});
  store.finish_sweep(a, "done");
  SweepSpec profile = spec("conv1d", odd_device, {1 << 20}, {{"mask_width", 5}});
  profile.device.is_profile = true;
  profile.strategy = "random";
  const std::int64_t b = store.begin_sweep(profile);
  store.add_results(b, {ok({{"TILE", 256}}, 0.25)});
  store.finish_sweep(b, "interrupted");
  const std::int64_t c = store.begin_sweep(spec("gemm_tiled", h100, {2000, 2000, 2000}));
  store.add_results(c, {ok({{"TILE", 64}, {"BLOCK_Y", 8}}, 7.5)});
}

TEST(Export, JsonHasTheDocumentedShape) {
  test::TempDir dir;
  Store store = Store::open(dir / "a.db");
  fill(store);
  const json doc = json::parse(store.export_json());
  EXPECT_EQ(doc["format"], "tiletune-export");
  EXPECT_EQ(doc["schema_version"], Store::schema_version);
  EXPECT_TRUE(doc["tiletune"]["version"].is_string());
  EXPECT_TRUE(doc["tiletune"]["git_sha"].is_string());
  EXPECT_TRUE(doc["exported_at"].is_string());
  ASSERT_EQ(doc["sweeps"].size(), 3u);
  const json& first = doc["sweeps"][0];
  EXPECT_EQ(first["device"]["name"], h100.name);
  EXPECT_EQ(first["device"]["properties"]["clock_khz"], 1980000);
  EXPECT_EQ(first["family"]["description"]["parameters"]["TILE"]["default"], 16);
  EXPECT_EQ(first["problem"]["size"], "1000x1000x1000");
  EXPECT_EQ(first["problem"]["args"], "");
  EXPECT_EQ(first["status"], "done");
  EXPECT_EQ(first["results"].size(), 8u);
  // Ok results fastest first (0.1 + 0.2 ms before 1 ms), then the others in outcome order.
  EXPECT_EQ(first["results"][0]["params"]["TILE"], 64);
  EXPECT_EQ(first["results"][0]["min_ms"], nullptr);
  EXPECT_EQ(first["results"][0]["median_ms"], 0.1 + 0.2);
  EXPECT_EQ(first["results"][1]["params"]["TILE"], 32);
  EXPECT_EQ(first["results"][2]["outcome"], "pruned");
  EXPECT_EQ(first["results"][3]["outcome"], "compile_failed");
  EXPECT_EQ(first["results"][3]["reason"], awkward_reason);
  EXPECT_EQ(first["results"][7]["outcome"], "wrong_result");
  EXPECT_EQ(doc["sweeps"][1]["device"]["is_profile"], true);
  EXPECT_EQ(doc["sweeps"][2]["ended_at"], nullptr);

  EXPECT_EQ(json::parse(store.export_json("conv1d"))["sweeps"].size(), 1u);
  EXPECT_EQ(json::parse(store.export_json("", h100.name))["sweeps"].size(), 2u);
  EXPECT_EQ(json::parse(store.export_json("conv1d", h100.name))["sweeps"].size(), 0u);
}

TEST(Export, JsonImportedIntoAFreshDatabaseGivesIdenticalResults) {
  test::TempDir dir;
  Store source = Store::open(dir / "source.db");
  fill(source);
  const std::string exported = source.export_json();

  Store copy = Store::open(dir / "copy.db");
  const ImportSummary summary = copy.import_json(exported);
  EXPECT_EQ(summary.sweeps_added, 3);
  EXPECT_EQ(summary.sweeps_skipped, 0);
  EXPECT_EQ(summary.results_added, 10);

  EXPECT_EQ(without_export_time(copy.export_json()), without_export_time(exported));
  const auto original = source.sweeps();
  const auto imported = copy.sweeps();
  ASSERT_EQ(original.size(), imported.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    EXPECT_EQ(imported[i].uid, original[i].uid);
    EXPECT_EQ(imported[i].started_at, original[i].started_at);
    EXPECT_EQ(imported[i].status, original[i].status);
    EXPECT_EQ(imported[i].device.is_profile, original[i].device.is_profile);
    const auto a = source.results(original[i].id);
    const auto b = copy.results(imported[i].id);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t r = 0; r < a.size(); ++r) {
      EXPECT_EQ(b[r].record.params, a[r].record.params);
      EXPECT_EQ(b[r].record.outcome, a[r].record.outcome);
      EXPECT_EQ(b[r].record.reason, a[r].record.reason);
      EXPECT_EQ(b[r].record.median_ms, a[r].record.median_ms);  // bit-exact doubles
      EXPECT_EQ(b[r].record.metric, a[r].record.metric);
      EXPECT_EQ(b[r].record.sm_clock_mhz, a[r].record.sm_clock_mhz);
      EXPECT_EQ(b[r].record.registers, a[r].record.registers);
      EXPECT_EQ(b[r].measured_at, a[r].measured_at);
    }
  }
  const ProblemKey problem{{1000, 1000, 1000}, {}};
  EXPECT_EQ(copy.best("gemm_tiled", h100.name, problem)->record.median_ms, 0.1 + 0.2);
  // The family description came along, so the client still knows the family's defaults.
  const auto client = Client::open(dir / "copy.db");
  ASSERT_TRUE(client.has_value());
  EXPECT_EQ(client->best({"gemm_tiled", "Some GPU", "sm_120", problem}).params,
            (Params{{"TILE", 16}, {"BLOCK_Y", 4}}));
}

TEST(Export, ImportingTwiceSkipsWhatIsThere) {
  test::TempDir dir;
  Store source = Store::open(dir / "source.db");
  fill(source);
  const std::string exported = source.export_json();
  Store copy = Store::open(dir / "copy.db");
  copy.import_json(exported);
  const auto before = row_counts(dir / "copy.db");
  const ImportSummary again = copy.import_json(exported);
  EXPECT_EQ(again.sweeps_added, 0);
  EXPECT_EQ(again.sweeps_skipped, 3);
  EXPECT_EQ(again.results_added, 0);
  EXPECT_EQ(row_counts(dir / "copy.db"), before);
  // Importing into the database it came from adds nothing either.
  EXPECT_EQ(source.import_json(exported).sweeps_skipped, 3);
}

struct BadImport {
  const char* name;
  std::function<std::string(json)> make;
  const char* expected;
};

// A hostile document made by changing the valid export.
std::function<std::string(json)> edit_doc(std::function<void(json&)> change) {
  return [change](json doc) {
    change(doc);
    return doc.dump();
  };
}

// Hostile imports: the document and its structure.
std::vector<BadImport> bad_import_documents() {
  return {
      {"bad json", [](json doc) { return doc.dump().substr(0, 200); }, "not valid JSON"},
      {"not an object", [](json) { return std::string("[1, 2]"); }, "must be a JSON object"},
      {"garbage after a NUL byte",
       [](json doc) { return doc.dump() + std::string("\0", 1) + "{\"sweeps\": garbage"; },
       "import: the document holds a NUL byte at offset"},
      {"wrong format", edit_doc([](json& d) { d["format"] = "kernel-tuner-cache"; }),
       "format is 'kernel-tuner-cache'"},
      {"newer schema", edit_doc([](json& d) { d["schema_version"] = Store::schema_version + 1; }),
       "schema version 5 is newer than this tiletune (knows 4)"},
      {"no schema", edit_doc([](json& d) { d.erase("schema_version"); }), "schema_version"},
      {"unknown outcome",
       edit_doc([](json& d) { d["sweeps"].back()["results"].back()["outcome"] = "exploded"; }),
       "'exploded' is not an outcome name"},
      {"fractional param",
       edit_doc([](json& d) { d["sweeps"].back()["results"][0]["params"]["TILE"] = 16.5; }),
       "must be an integer"},
      {"string param", edit_doc([](json& d) { d["sweeps"].back()["results"][0]["params"]["TILE"] = "16"; }),
       "must be an integer"},
      {"bad param name", edit_doc([](json& d) { d["sweeps"].back()["results"][0]["params"]["2D"] = 1; }),
       "not a C identifier"},
      {"missing uid", edit_doc([](json& d) { d["sweeps"].back().erase("uid"); }), "sweeps[2].uid is missing"},
      {"missing device", edit_doc([](json& d) { d["sweeps"][1].erase("device"); }),
       "sweeps[1].device is missing"},
      {"bad size", edit_doc([](json& d) { d["sweeps"].back()["problem"]["size"] = "0x5"; }), "got '0x5'"},
      {"text time", edit_doc([](json& d) { d["sweeps"].back()["results"][0]["median_ms"] = "fast"; }),
       "median_ms must be a number"},
      {"results not a list", edit_doc([](json& d) { d["sweeps"].back()["results"] = json::object(); }),
       "results must be an array"},
      {"repeated params",
       edit_doc([](json& d) { d["sweeps"][0]["results"].push_back(d["sweeps"][0]["results"][0]); }),
       "repeats the params"},
  };
}

// Hostile imports: values held to what a measurement can produce, and nesting deep enough to
// overflow a recursive parser or printer.
std::vector<BadImport> bad_import_values() {
  return {
      {"negative time", edit_doc([](json& d) { d["sweeps"][2]["results"][0]["median_ms"] = -1.0; }),
       "import: sweeps[2].results[0].median_ms must be a positive, finite time in ms, got -1"},
      {"zero time", edit_doc([](json& d) { d["sweeps"][0]["results"][1]["median_ms"] = 0; }),
       "sweeps[0].results[1].median_ms must be a positive, finite time in ms, got 0"},
      {"negative minimum", edit_doc([](json& d) { d["sweeps"][0]["results"][1]["min_ms"] = -0.5; }),
       "sweeps[0].results[1].min_ms must be a positive"},
      {"minimum above median", edit_doc([](json& d) { d["sweeps"][2]["results"][0]["min_ms"] = 8.0; }),
       "sweeps[2].results[0].min_ms is larger than median_ms (8 > 7.5)"},
      {"negative spread", edit_doc([](json& d) { d["sweeps"][0]["results"][1]["spread"] = -0.1; }),
       "sweeps[0].results[1].spread must be non-negative and finite"},
      {"negative metric", edit_doc([](json& d) { d["sweeps"][0]["results"][1]["metric"] = -3; }),
       "sweeps[0].results[1].metric must be non-negative"},
      {"negative error", edit_doc([](json& d) { d["sweeps"][0]["results"][1]["error"] = -1e-7; }),
       "sweeps[0].results[1].error must be non-negative"},
      {"zero clock", edit_doc([](json& d) { d["sweeps"][0]["results"][1]["sm_clock_mhz"] = 0; }),
       "sweeps[0].results[1].sm_clock_mhz must be positive and finite"},
      {"occupancy above one", edit_doc([](json& d) { d["sweeps"][0]["results"][1]["occupancy"] = 1.5; }),
       "sweeps[0].results[1].occupancy must be between 0 and 1"},
      {"negative registers", edit_doc([](json& d) { d["sweeps"][0]["results"][1]["registers"] = -4; }),
       "sweeps[0].results[1].registers must not be negative, got -4"},
      {"negative shared memory", edit_doc([](json& d) { d["sweeps"][0]["results"][2]["static_smem"] = -1; }),
       "sweeps[0].results[2].static_smem must not be negative"},
      {"ok time from no run", edit_doc([](json& d) { d["sweeps"][2]["results"][0]["repetitions"] = 0; }),
       "sweeps[2].results[0].repetitions must be at least 1 for an ok result with a time, got 0"},
      {"negative repetitions", edit_doc([](json& d) { d["sweeps"][0]["results"][3]["repetitions"] = -2; }),
       "sweeps[0].results[3].repetitions is out of range"},
      {"measured ok without time",
       edit_doc([](json& d) { d["sweeps"][2]["results"][0]["median_ms"] = nullptr; }),
       "sweeps[2].results[0].median_ms is missing: an ok result of a measured sweep has a time"},
      {"unknown kind", edit_doc([](json& d) { d["sweeps"][1]["kind"] = "guess"; }),
       "sweeps[1].kind 'guess' is not sweep or plan"},
      {"unknown status", edit_doc([](json& d) { d["sweeps"][1]["status"] = "fine"; }),
       "sweeps[1].status 'fine' is not running, done or interrupted"},
      {"no SMs", edit_doc([](json& d) { d["sweeps"][1]["device"]["sm_count"] = 0; }),
       "sweeps[1].device.sm_count must be a positive integer, got 0"},
      {"SM count missing", edit_doc([](json& d) { d["sweeps"][1]["device"].erase("sm_count"); }),
       "sweeps[1].device.sm_count is missing"},
      {"repeated uid", edit_doc([](json& d) { d["sweeps"][2]["uid"] = d["sweeps"][0]["uid"]; }),
       "sweeps[2].uid repeats sweeps[0].uid"},
      {"no start", edit_doc([](json& d) { d["sweeps"][0]["started_at"] = ""; }),
       "sweeps[0].started_at is empty"},
      // Nesting deep enough to overflow a recursive parser or printer.
      {"deep nesting",
       [](json doc) {
         doc["sweeps"][0]["family"]["description"] = {{"x", 0}};
         std::string text = doc.dump();
         const std::string deep = std::string(100000, '[') + std::string(100000, ']');
         return text.replace(text.find(R"({"x":0})"), 7, R"({"x":)" + deep + "}");
       },
       "import: the document is nested 100005 levels deep (at most 72)"},

  };
}

std::vector<BadImport> bad_imports() {
  std::vector<BadImport> all = bad_import_documents();
  for (auto& bad : bad_import_values()) all.push_back(std::move(bad));
  return all;
}

TEST(Export, MalformedImportsThrowAndChangeNothing) {
  test::TempDir dir;
  const auto target_path = dir / "target.db";
  Store source = Store::open(dir / "source.db");
  fill(source);
  const json valid = json::parse(source.export_json());

  Store target = Store::open(target_path);
  const std::int64_t own = target.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64}));
  target.add_results(own, {ok({{"TILE", 8}}, 0.05)});
  const json dump_before = without_export_time(target.export_json());
  const auto counts_before = row_counts(target_path);
  const std::string bytes_before = test::read_bytes(target_path);
  const std::string wal_before = test::read_bytes(target_path.string() + "-wal");

  for (const BadImport& bad : bad_imports()) {
    SCOPED_TRACE(bad.name);
    try {
      target.import_json(bad.make(valid));
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
  // The valid document still imports afterwards.
  EXPECT_EQ(target.import_json(valid.dump()).sweeps_added, 3);
}

// The database refuses the third sweep's rows as it would on a full disk: the whole file is one
// transaction, so the first two sweeps go too.
TEST(Export, ImportIsOneTransactionPerFile) {
  test::TempDir dir;
  Store source = Store::open(dir / "source.db");
  fill(source);
  json doc = json::parse(source.export_json());
  doc["sweeps"][2]["results"][0]["reason"] = "refuse me";
  const auto target_path = dir / "target.db";
  Store target = Store::open(target_path);
  target.add_results(target.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64})), {ok({{"TILE", 8}}, 0.05)});
  ASSERT_NO_THROW(test::refuse_results_with_reason(target_path, "refuse me"));
  const auto counts_before = row_counts(target_path);
  const json dump_before = without_export_time(target.export_json());
  try {
    target.import_json(doc.dump());
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_TRUE(test::one_line(e.what())) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("import: sweeps[2]: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("simulated write failure"), std::string::npos) << e.what();
  }
  EXPECT_EQ(row_counts(target_path), counts_before);
  EXPECT_EQ(without_export_time(target.export_json()), dump_before);
  EXPECT_TRUE(target.integrity_ok());
}

// The device in a file may not take over the uuid of a stored device that differs; a profile that differs
// from the stored one of its uuid comes in under a uuid of its own.
TEST(Export, ImportNeverTakesOverAStoredDevice) {
  test::TempDir dir;
  Store target = Store::open(dir / "target.db");
  const std::int64_t own = target.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64}));
  DeviceRecord builtin = test::device("NVIDIA H100 80GB HBM3", "profile:h100", "sm_90");
  builtin.is_profile = true;
  const std::int64_t planned = target.add_sweep(spec("gemm_tiled", builtin, {64, 64, 64}), {});

  Store source = Store::open(dir / "source.db");
  DeviceRecord impostor = test::device("Some Other GPU", h100.uuid, "sm_90");
  source.add_sweep(spec("gemm_tiled", impostor, {128, 128, 128}), {ok({{"TILE", 8}}, 0.5)});
  const auto counts_before = row_counts(dir / "target.db");
  try {
    target.import_json(source.export_json());
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_TRUE(test::one_line(e.what())) << e.what();
    EXPECT_NE(std::string(e.what()).find(
                  "import: sweeps[0].device: device GPU-h100-0001 is stored as the GPU '" + h100.name + "'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(row_counts(dir / "target.db"), counts_before);

  Store other = Store::open(dir / "other.db");
  DeviceRecord custom = builtin;
  custom.sm_count = 114;
  other.add_sweep(spec("gemm_tiled", custom, {64, 64, 64}), {ok({{"TILE", 8}}, 0.5)});
  EXPECT_EQ(target.import_json(other.export_json()).sweeps_added, 1);
  EXPECT_EQ(target.sweep(planned)->device.sm_count, 132);
  EXPECT_EQ(target.sweep(own)->device.name, h100.name);
  const auto sweeps = target.sweeps();
  ASSERT_EQ(sweeps.size(), 3u);
  EXPECT_EQ(sweeps.front().device.sm_count, 114);
  EXPECT_EQ(sweeps.front().device.uuid.rfind("profile:h100#", 0), 0u) << sweeps.front().device.uuid;
  // Exported again and imported elsewhere, it keeps that uuid.
  Store third = Store::open(dir / "third.db");
  third.import_json(target.export_json());
  EXPECT_EQ(third.sweeps().front().device.uuid, sweeps.front().device.uuid);
}

TEST(Export, ImportedFailuresAreNeverTheBest) {
  test::TempDir dir;
  Store source = Store::open(dir / "source.db");
  fill(source);
  json doc = json::parse(source.export_json());
  json& wrong = doc["sweeps"][0]["results"][7];
  ASSERT_EQ(wrong["outcome"], "wrong_result");
  wrong["median_ms"] = 0.0001;
  wrong["repetitions"] = 5;
  Store copy = Store::open(dir / "copy.db");
  copy.import_json(doc.dump());
  const ProblemKey problem{{1000, 1000, 1000}, {}};
  EXPECT_EQ(copy.best("gemm_tiled", h100.name, problem)->record.median_ms, 0.1 + 0.2);
  EXPECT_EQ(Client::open(dir / "copy.db")->best({"gemm_tiled", h100.name, "sm_90", problem}).median_ms,
            0.1 + 0.2);
}

// A hand-edited database whose JSON columns nest deeper than any parser should follow still exports.
TEST(Export, DeeplyNestedStoredJsonDoesNotCrashExport) {
  test::TempDir dir;
  const auto path = dir / "edited.db";
  {
    Store store = Store::open(path);
    fill(store);
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    const std::string sql = "UPDATE families SET description_json = '{\"x\": " + deep +
                            "}'; UPDATE devices SET properties_json = '{\"x\": " + deep + "}';";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  Store store = Store::open(path);
  const json doc = json::parse(store.export_json());
  EXPECT_EQ(doc["sweeps"][0]["family"]["description"], json::object());
  EXPECT_EQ(doc["sweeps"][0]["device"]["properties"], json::object());
  // A new sweep on the same device compares its properties with the stored text without parsing it.
  EXPECT_NO_THROW(store.begin_sweep(spec("gemm_tiled", h100, {8, 8, 8})));
  SweepSpec deep_family = spec("gemm_tiled", h100, {8, 8, 8});
  deep_family.template_hash = "other";
  deep_family.family_json = "{\"x\": " + std::string(100, '[') + std::string(100, ']') + "}";
  try {
    store.begin_sweep(deep_family);
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64 levels"), std::string::npos) << e.what();
  }
}

// A stored plan has ok results without a time: they import as they are.
TEST(Export, PlansImportWithoutTimes) {
  test::TempDir dir;
  Store source = Store::open(dir / "source.db");
  SweepSpec plan = spec("gemm_tiled", h100, {64, 64, 64});
  plan.kind = "plan";
  ResultRecord runnable;
  runnable.params = {{"TILE", 16}};
  runnable.reason = "planned: runnable, not measured";
  runnable.registers = 32;
  source.add_sweep(plan, {runnable});
  Store copy = Store::open(dir / "copy.db");
  EXPECT_EQ(copy.import_json(source.export_json()).results_added, 1);
}

TEST(Export, CsvQuotesCommasQuotesAndLineBreaks) {
  test::TempDir dir;
  Store store = Store::open(dir / "a.db");
  fill(store);
  std::ostringstream out;
  store.export_csv(out);
  const std::string csv = out.str();
  // The columns of earlier exports first, where they were; then those that make the file importable.
  EXPECT_EQ(
      csv.substr(0, csv.find("\r\n")),
      "sweep_uid,device,arch,family,size,args,params,outcome,reason,median_ms,min_ms,spread,repetitions,"
      "metric,metric_unit,error,registers,static_smem,dynamic_smem,occupancy,occupancy_limiter,"
      "local_bytes,spill_bytes,threads_per_block,active_blocks,active_warps,sm_clock_mhz,measured_at,"
      "compile_ms,measure_ms,times_ms,device_uuid,sm_count,is_profile,template_hash,space_hash,kind,strategy,"
      "status,started_at,ended_at,"
      "tiletune_version,git_sha,device_properties,family_description,pruned");
  EXPECT_NE(csv.find(",\"bad, \"\"quoted\"\"\nsecond line\","), std::string::npos);
  EXPECT_NE(csv.find(R"("Lab ""GPU"" \ #2, rev. é")"), std::string::npos);

  const auto rows = test::parse_csv(csv);
  ASSERT_EQ(rows.size(), 11u);  // header + 10 results
  for (const auto& row : rows) EXPECT_EQ(row.size(), 46u);
  int found = 0;
  for (const auto& row : rows) {
    if (row[7] == "compile_failed") {
      EXPECT_EQ(row[8], awkward_reason);
      EXPECT_EQ(row[6], "BLOCK_Y=8,TILE=8");
      EXPECT_EQ(row[9], "");  // no time
      ++found;
    }
    if (row[6] == "BLOCK_Y=-1,TILE=64") {
      EXPECT_EQ(std::stod(row[9]), 0.1 + 0.2);  // round-trips exactly
      EXPECT_EQ(row[10], "");
      ++found;
    }
  }
  EXPECT_EQ(found, 2);

  std::ostringstream only_conv;
  store.export_csv(only_conv, "conv1d");
  EXPECT_EQ(test::parse_csv(only_conv.str()).size(), 2u);
}

// Writes `header` and a translation unit that includes it, then runs the compiler on it.
::testing::AssertionResult header_compiles(const test::TempDir& dir, const std::string& header,
                                           const std::string& checks) {
  std::string compiler = TILETUNE_TEST_CXX;
  if (!std::filesystem::exists(compiler)) compiler = "g++";
  test::write_bytes(dir / "tuned.hpp", header);
  test::write_bytes(dir / "use.cpp", "#include \"tuned.hpp\"\n" + checks + "\nint main() { return 0; }\n");
  const std::string log = (dir / "compile.log").string();
  const std::string command = compiler + " -std=c++17 -fsyntax-only -Wall -Wextra -pedantic -Werror " +
                              (dir / "use.cpp").string() + " > " + log + " 2>&1";
  if (std::system(command.c_str()) != 0)
    return ::testing::AssertionFailure() << command << "\n" << test::read_bytes(log) << "\n" << header;
  return ::testing::AssertionSuccess();
}

bool have_compiler() {
  return std::filesystem::exists(TILETUNE_TEST_CXX) || std::system("command -v g++ > /dev/null 2>&1") == 0;
}

TEST(Export, HeaderCompilesAndHoldsTheBestConfigurations) {
  if (!have_compiler()) GTEST_SKIP() << "no C++ compiler here";
  test::TempDir dir;
  Store store = Store::open(dir / "a.db");
  fill(store);
  std::ostringstream out;
  store.export_header(out);
  const std::string header = out.str();
  EXPECT_NE(header.find("inline constexpr"), std::string::npos);
  EXPECT_TRUE(header_compiles(dir, header, R"(
namespace t = tiletune_tuned;
static_assert(t::configs.size() == 3);
// The best ok configuration at 1000^3 is the 0.3 ms one, not the faster failures.
constexpr const t::Config* gemm = t::find("gemm_tiled", "NVIDIA H100 80GB HBM3", "1000x1000x1000");
static_assert(gemm->param_count == 2);
static_assert(gemm->params[0].value == -1 && gemm->params[1].value == 64);
static_assert(gemm->median_ms > 0.29 && gemm->median_ms < 0.31);
static_assert(t::find("gemm_tiled", "NVIDIA H100 80GB HBM3", "2000x2000x2000")->params[1].value == 64);
constexpr const t::Config* conv = t::find("conv1d", "Lab \"GPU\" \\ #2, rev. \303\251", "1048576", "mask_width=5");
static_assert(conv->params[0].value == 256);
static_assert(t::find("gemm_tiled", "NVIDIA H100 80GB HBM3", "999x1000x1000") == nullptr);
)"));
}

TEST(Export, HeaderOfAnEmptyDatabaseCompiles) {
  if (!have_compiler()) GTEST_SKIP() << "no C++ compiler here";
  test::TempDir dir;
  Store store = Store::open(dir / "a.db");
  std::ostringstream out;
  store.export_header(out);
  EXPECT_TRUE(header_compiles(dir, out.str(), "static_assert(tiletune_tuned::configs.size() == 0);"));
}

}  // namespace
}  // namespace tiletune
