// The best-so-far curve of a stored sweep: where its best improved, counted over what it measured, and where
// it is shown (T4's sweep metadata and the report's sweep page; `tiletune show` in the CLI tests).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "test_support.hpp"
#include "tiletune/report.hpp"

using namespace tiletune;
using namespace tiletune::test;

namespace {

// In the order a sweep stores them: pruned before compiling (not a measurement), a compile failure and a
// configuration pruned after compiling (measurements that found nothing), and ok results.
std::vector<ResultRecord> stored_in_order() {
  ResultRecord after_compile = failed({{"TILE", 32}, {"BLOCK_Y", 8}}, Outcome::pruned, "registers");
  after_compile.registers = 255;
  return {failed({{"TILE", 64}, {"BLOCK_Y", 4}}, Outcome::pruned, "smem"),
          ok({{"TILE", 8}, {"BLOCK_Y", 4}}, 2.0),
          failed({{"TILE", 8}, {"BLOCK_Y", 8}}, Outcome::compile_failed, "ptxas"),
          ok({{"TILE", 16}, {"BLOCK_Y", 4}}, 3.0),
          failed({{"TILE", 64}, {"BLOCK_Y", 8}}, Outcome::pruned, "smem"),
          after_compile,
          ok({{"TILE", 16}, {"BLOCK_Y", 8}}, 1.5),
          ok({{"TILE", 32}, {"BLOCK_Y", 4}}, 1.5)};
}

}  // namespace

TEST(BestSoFar, CountsMeasurementsAndKeepsOnlyImprovements) {
  TempDir dir;
  Store store = Store::open(dir / "t.db");
  const auto id = store.add_sweep(spec("gemm_tiled", h100, {512, 512, 512}), stored_in_order());
  const auto curve = store.best_so_far(id);
  ASSERT_EQ(curve.size(), 2u);
  EXPECT_EQ(curve[0].measurement, 1);
  EXPECT_EQ(curve[0].median_ms, 2.0);
  EXPECT_EQ(curve[1].measurement, 5);  // ok 2.0, compile_failed, ok 3.0, pruned after compiling, ok 1.5
  EXPECT_EQ(curve[1].median_ms, 1.5);
  EXPECT_EQ(curve[1].params, (Params{{"TILE", 16}, {"BLOCK_Y", 8}}));
  EXPECT_GE(curve[0].seconds, 0.0);
  EXPECT_GE(curve[1].seconds, curve[0].seconds);
  EXPECT_THROW(store.best_so_far(id + 100), StoreError);
}

TEST(BestSoFar, AnEmptySweepHasNoCurve) {
  TempDir dir;
  Store store = Store::open(dir / "t.db");
  const auto id = store.add_sweep(spec("gemm_tiled", h100, {512, 512, 512}),
                                  {failed({{"TILE", 64}, {"BLOCK_Y", 4}}, Outcome::pruned, "smem")});
  EXPECT_TRUE(store.best_so_far(id).empty());
}

TEST(BestSoFar, T4AndTheReportShowIt) {
  TempDir dir;
  std::int64_t id = 0;
  {
    Store store = Store::open(dir / "t.db");
    id = store.add_sweep(spec("gemm_tiled", h100, {512, 512, 512}), stored_in_order());
    std::ostringstream t4;
    store.export_t4(t4);
    const auto doc = nlohmann::json::parse(t4.str());
    const auto& curve = doc.at("metadata").at("sweeps").at(0).at("best_so_far");
    ASSERT_EQ(curve.size(), 2u);
    EXPECT_EQ(curve[1].at("measurement"), 5);
    EXPECT_EQ(curve[1].at("time"), 1.5);
  }
  ReportOptions options;
  options.generated_at = "2025-01-31T12:00:00.000Z";
  const std::string html = render_report(dir / "t.db", options);
  const std::string figure = "id=\"best-so-far-" + std::to_string(id) + "\"";
  ASSERT_NE(html.find(figure), std::string::npos);
  EXPECT_NE(html.find("Best so far: 2 improvements over 6 measurements"), std::string::npos);
  EXPECT_NE(html.find("found at measurement 5"), std::string::npos);
}
