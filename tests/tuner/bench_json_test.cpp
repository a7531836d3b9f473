// bench's JSON and its sustained runs without a GPU: the setting reaches the worker's request, the worker's
// figures come back through the wire, and the bench JSON carries them only where they were measured; a row
// with no baseline carries no ratio.
#include <gtest/gtest.h>

#include <map>

#include "../test_paths.hpp"
#include "requests.hpp"
#include "tiletune/bench.hpp"

using namespace tiletune;

TEST(Bench, TheSustainedTimeReachesTheWorkerAndItsFiguresComeBack) {
  const auto fams = load_families({test::templates_dir()});
  const KernelFamily& f = find_family(fams, "gemm_tiled");
  const ProblemKey p = f.make_problem({256, 256, 256}, {});
  MeasureSettings m;
  m.sustained_ms = 250;
  ASSERT_FALSE(f.library_baselines.empty());
  const auto sent = wire::message("baseline", baseline_request(f, p, f.library_baselines[0], m));
  EXPECT_DOUBLE_EQ(sent.get<wire::BaselineRequest>().reps.sustained_ms, 250);
  EXPECT_DOUBLE_EQ(wire::Repetitions{}.sustained_ms, 0) << "sweeps make no sustained runs";

  wire::Reply reply;
  reply.sustained_run_ms = 1.25;
  reply.sustained_clock_mhz = 1470;
  reply.sustained_runs = 800;
  const auto back = nlohmann::json(reply).get<wire::Reply>();
  EXPECT_DOUBLE_EQ(back.sustained_run_ms, 1.25);
  EXPECT_DOUBLE_EQ(back.sustained_clock_mhz, 1470);
  EXPECT_EQ(back.sustained_runs, 800);
  // A reply from a worker that knows nothing of them reads as not measured.
  EXPECT_DOUBLE_EQ(
      nlohmann::json::parse(R"({"ok": true, "median_ms": 2})").get<wire::Reply>().sustained_run_ms, 0);
}

TEST(Bench, TheJsonCarriesSustainedTimesOnlyWhereMeasured) {
  BenchRow measured;
  measured.family = "gemm_tiled";
  measured.baseline = "cublas_sgemm";
  measured.time = {1.0, 0.99, 1.01, 0.02, 20, 1.3, 1500};
  measured.baseline_time = {1.1, 1.09, 1.11, 0.02, 20, 1.2, 1490};
  measured.sustained_ratio = 1.2 / 1.3;
  BenchRow plain = measured;
  plain.baseline = "gemm_naive";
  plain.time.sustained_ms = plain.baseline_time.sustained_ms = plain.sustained_ratio = 0;
  const nlohmann::json doc = bench_json({measured, plain}, DeviceLimits{});
  const auto& rows = doc.at("results");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].at("sustained_ms").get<double>(), 1.3);
  EXPECT_DOUBLE_EQ(rows[0].at("baseline_sustained_ms").get<double>(), 1.2);
  EXPECT_DOUBLE_EQ(rows[0].at("sustained_clock_mhz").get<double>(), 1500);
  EXPECT_DOUBLE_EQ(rows[0].at("sustained_ratio").get<double>(), 1.2 / 1.3);
  EXPECT_FALSE(rows[1].contains("sustained_ms"));
  EXPECT_FALSE(rows[1].contains("sustained_ratio"));
}

TEST(Bench, ARowWithoutABaselineCarriesNoRatio) {
  BenchRow own;
  own.family = "pnpoly_naive";
  own.time = {2.0, 1.9, 2.1, 0.1, 20, 2.2, 1600};
  const nlohmann::json row = bench_json({own}, DeviceLimits{}).at("results").at(0);
  EXPECT_DOUBLE_EQ(row.at("median_ms").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(row.at("sustained_ms").get<double>(), 2.2);
  EXPECT_EQ(row.at("baseline"), "");
  for (const char* key :
       {"ratio", "ratio_low", "baseline_median_ms", "sustained_ratio", "baseline_sustained_ms"})
    EXPECT_FALSE(row.contains(key)) << key;
}

// --json merges: a new best's row replaces the old best's, a given configuration's row only its own.
TEST(Bench, MergingKeepsEachGivenConfigurationAndOneBest) {
  const auto doc = [](const std::string& source, std::int64_t stages, double ms) {
    BenchRow r;
    r.family = "gemm_bf16_wgmma";
    r.baseline = "cublas_gemm_abt";
    r.config = {{"STAGES", stages}};
    r.config_source = source;
    r.time.median_ms = ms;
    return bench_json({r}, DeviceLimits{});
  };
  nlohmann::json merged = doc("tuned", 4, 1.0);
  for (const auto& next :
       {doc("given", 3, 1.1), doc("given", 2, 1.2), doc("given", 3, 1.3), doc("tuned", 5, 0.9)})
    merged = merge_bench_json(merged, next);
  std::map<std::string, double> ms;  // source and STAGES -> time
  for (const auto& r : merged.at("results"))
    ms[r.at("config_source").get<std::string>() + std::to_string(r.at("config").at("STAGES").get<int>())] =
        r.at("median_ms").get<double>();
  EXPECT_EQ(ms, (std::map<std::string, double>{{"given2", 1.2}, {"given3", 1.3}, {"tuned5", 0.9}}));
}
