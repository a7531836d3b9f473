#include "tiletune/client.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace tiletune {
namespace {

using test::failed;
using test::h100;
using test::ok;
using test::spec;

const DeviceRecord h200 = test::device("NVIDIA H200", "GPU-h200-0001", "sm_90");
const DeviceRecord a100 = test::device("NVIDIA A100-SXM4-80GB", "GPU-a100-0001", "sm_80");

ProblemKey cube(std::int64_t n) { return ProblemKey{{n, n, n}, {}}; }

// gemm_tiled on the H100 at four sizes (TILE tells them apart), on the H200 at 8000^3, on the A100 at 1000^3;
// conv1d on the H100 with two argument sets.
class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Store store = Store::open(path);
    const auto sweep = [&](const SweepSpec& s, const std::vector<ResultRecord>& records) {
      const std::int64_t id = store.begin_sweep(s);
      store.add_results(id, records);
      store.finish_sweep(id, "done");
    };
    ResultRecord fast_wrong = failed({{"TILE", 1}, {"BLOCK_Y", 1}}, Outcome::wrong_result, "error 0.4");
    fast_wrong.median_ms = 0.001;
    sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}),
          {fast_wrong, ok({{"TILE", 32}, {"BLOCK_Y", 8}}, 1.0), ok({{"TILE", 16}, {"BLOCK_Y", 8}}, 1.4)});
    sweep(spec("gemm_tiled", h100, {512, 512, 512}), {ok({{"TILE", 8}, {"BLOCK_Y", 4}}, 0.2)});
    sweep(spec("gemm_tiled", h100, {2000, 2000, 2000}), {ok({{"TILE", 64}, {"BLOCK_Y", 8}}, 7.0)});
    sweep(spec("gemm_tiled", h100, {4000, 4000, 4000}), {ok({{"TILE", 128}, {"BLOCK_Y", 8}}, 50.0)});
    sweep(spec("gemm_tiled", h200, {8000, 8000, 8000}), {ok({{"TILE", 256}, {"BLOCK_Y", 8}}, 300.0)});
    sweep(spec("gemm_tiled", a100, {1000, 1000, 1000}), {ok({{"TILE", 2}, {"BLOCK_Y", 2}}, 2.0)});
    // A family whose only H100 results failed: it must never be returned.
    sweep(spec("broken", h100, {100}), {failed({{"TILE", 4}}, Outcome::compile_failed, "syntax error")});
    sweep(spec("conv1d", h100, {1 << 20}, {{"mask_width", 5}}), {ok({{"TILE", 1024}}, 0.3)});
    // Closer in size, but its argument names differ from the query's: it ranks last.
    sweep(spec("conv1d", h100, {1000}, {{"radius", 2}}), {ok({{"TILE", 64}}, 0.01)});
  }

  Client open() const {
    std::string error;
    auto client = Client::open(path, &error);
    if (!client) throw std::runtime_error(error);
    return std::move(*client);
  }

  test::TempDir dir;
  std::filesystem::path path = dir / "tune.db";
};

TEST_F(ClientTest, ExactMatch) {
  const Client client = open();
  const Lookup lookup = client.best({"gemm_tiled", h100.name, "sm_90", cube(1000)});
  EXPECT_EQ(lookup.match, Match::exact);
  EXPECT_EQ(lookup.params, (Params{{"TILE", 32}, {"BLOCK_Y", 8}}));
  EXPECT_EQ(lookup.device_name, h100.name);
  EXPECT_EQ(lookup.problem, cube(1000));
  EXPECT_EQ(lookup.median_ms, 1.0);
  EXPECT_EQ(lookup.metric, 2000.0);
  EXPECT_EQ(lookup.metric_unit, "GFLOP/s");
  EXPECT_EQ(lookup.message, "exact match: tuned on NVIDIA H100 80GB HBM3 for 1000x1000x1000");
  EXPECT_EQ(to_string(lookup.match), "exact");
}

TEST_F(ClientTest, NearestSizePicksTheTrulyNearest) {
  const Client client = open();
  const auto tile_for = [&](ProblemKey problem) {
    const Lookup lookup = client.best({"gemm_tiled", h100.name, "sm_90", std::move(problem)});
    EXPECT_EQ(lookup.match, Match::nearest_size);
    EXPECT_EQ(lookup.device_name, h100.name);
    return lookup.params.at("TILE");
  };
  EXPECT_EQ(tile_for(cube(1800)), 64);   // 2000 is nearer than 1000
  EXPECT_EQ(tile_for(cube(700)), 8);     // 512: log2(700/512)=0.45 < log2(1000/700)=0.51
  EXPECT_EQ(tile_for(cube(3000)), 128);  // 4000: 0.415 < 2000: 0.585
  EXPECT_EQ(tile_for(ProblemKey{{1000, 1000, 4000}, {}}), 32);  // sum over dims: 2 < 3 (2000^3) < 4 (4000^3)
  EXPECT_EQ(tile_for(cube(100000)), 128);

  const Lookup lookup = client.best({"gemm_tiled", h100.name, "sm_90", cube(1800)});
  EXPECT_EQ(lookup.problem, cube(2000));
  EXPECT_EQ(lookup.median_ms, 7.0);
  EXPECT_EQ(lookup.message,
            "no exact match for 1800x1800x1800: nearest tuned size 2000x2000x2000 on the same device");
}

TEST_F(ClientTest, NearestSizeRanksOtherArgumentNamesLast) {
  const Client client = open();
  const Lookup lookup = client.best({"conv1d", h100.name, "sm_90", ProblemKey{{1000}, {{"mask_width", 5}}}});
  EXPECT_EQ(lookup.match, Match::nearest_size);
  EXPECT_EQ(lookup.params, (Params{{"TILE", 1024}}));
  EXPECT_EQ(lookup.problem, (ProblemKey{{1 << 20}, {{"mask_width", 5}}}));

  const Lookup other = client.best({"conv1d", h100.name, "sm_90", ProblemKey{{900}, {{"radius", 3}}}});
  EXPECT_EQ(other.params, (Params{{"TILE", 64}}));
}

TEST_F(ClientTest, SameArchitectureOnAnotherDevice) {
  const Client client = open();
  const Lookup lookup = client.best({"gemm_tiled", "NVIDIA H100 PCIe", "sm_90", cube(8000)});
  EXPECT_EQ(lookup.match, Match::same_arch);
  // The H200 tuned exactly this size; the H100's nearest (4000^3) is farther away.
  EXPECT_EQ(lookup.device_name, "NVIDIA H200");
  EXPECT_EQ(lookup.params, (Params{{"TILE", 256}, {"BLOCK_Y", 8}}));
  EXPECT_EQ(lookup.problem, cube(8000));
  EXPECT_NE(lookup.message.find("same arch sm_90"), std::string::npos) << lookup.message;
  EXPECT_NE(lookup.message.find("NVIDIA H200"), std::string::npos) << lookup.message;

  const Lookup small = client.best({"gemm_tiled", "NVIDIA H100 PCIe", "sm_90", cube(600)});
  EXPECT_EQ(small.match, Match::same_arch);
  EXPECT_EQ(small.device_name, h100.name);
  EXPECT_EQ(small.params.at("TILE"), 8);

  // sm_80 has only the A100.
  const Lookup ampere = client.best({"gemm_tiled", "NVIDIA A100-PCIE-40GB", "sm_80", cube(8000)});
  EXPECT_EQ(ampere.match, Match::same_arch);
  EXPECT_EQ(ampere.params.at("TILE"), 2);
}

TEST_F(ClientTest, NotFoundGivesTheFamilyDefaults) {
  const Client client = open();
  const Lookup lookup = client.best({"gemm_tiled", "RTX 9000", "sm_120", cube(1000)}, {{"TILE", 99}});
  EXPECT_EQ(lookup.match, Match::not_found);
  EXPECT_EQ(lookup.params, (Params{{"TILE", 16}, {"BLOCK_Y", 4}}));
  EXPECT_EQ(lookup.message, "no tuned configuration for gemm_tiled on RTX 9000 (sm_120): family defaults");
  EXPECT_TRUE(lookup.device_name.empty());
  EXPECT_FALSE(lookup.median_ms.has_value());
}

TEST_F(ClientTest, NotFoundForAnUnknownFamilyGivesTheCallersFallback) {
  const Client client = open();
  const Params fallback{{"BLOCK", 128}};
  const Lookup lookup = client.best({"stencil2d", h100.name, "sm_90", cube(1000)}, fallback);
  EXPECT_EQ(lookup.match, Match::not_found);
  EXPECT_EQ(lookup.params, fallback);
  EXPECT_NE(lookup.message.find("caller's fallback"), std::string::npos) << lookup.message;
  EXPECT_TRUE(client.best({"stencil2d", h100.name, "sm_90", cube(1000)}).params.empty());
}

TEST_F(ClientTest, OnlyOkOutcomesAreReturned) {
  const Client client = open();
  // "broken" is known (so its defaults apply) but nothing about it is ok.
  const Lookup lookup = client.best({"broken", h100.name, "sm_90", ProblemKey{{100}, {}}}, {{"TILE", 7}});
  EXPECT_EQ(lookup.match, Match::not_found);
  EXPECT_EQ(lookup.params, (Params{{"TILE", 7}}));
}

TEST_F(ClientTest, EmptyArchSkipsTheArchitectureFallback) {
  const Client client = open();
  EXPECT_EQ(client.best({"gemm_tiled", "NVIDIA H100 PCIe", "", cube(8000)}).match, Match::not_found);
}

TEST_F(ClientTest, RepeatedQueriesAgreeAndSeeNewResults) {
  const Client client = open();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(client.best({"gemm_tiled", h100.name, "sm_90", cube(1000)}).params.at("TILE"), 32);
    EXPECT_EQ(client.best({"gemm_tiled", h100.name, "sm_90", cube(1800)}).params.at("TILE"), 64);
  }
  // A writer adds a faster configuration while the client stays open; the next lookup sees it.
  Store store = Store::open(path);
  const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  store.add_results(id, {ok({{"TILE", 48}, {"BLOCK_Y", 8}}, 0.9)});
  EXPECT_EQ(client.best({"gemm_tiled", h100.name, "sm_90", cube(1000)}).params.at("TILE"), 48);
}

TEST_F(ClientTest, MalformedQueryFallsBackWithoutThrowing) {
  const Client client = open();
  const Lookup lookup = client.best(
      {"gemm_tiled", h100.name, "sm_90", ProblemKey{{1000}, {{"not an identifier", 1}}}}, {{"X", 1}});
  EXPECT_EQ(lookup.match, Match::not_found);
  EXPECT_EQ(lookup.params, (Params{{"X", 1}}));
  EXPECT_TRUE(test::one_line(lookup.message));
}

TEST_F(ClientTest, ClientIsMovable) {
  Client client = open();
  Client moved = std::move(client);
  EXPECT_EQ(moved.best({"gemm_tiled", h100.name, "sm_90", cube(1000)}).match, Match::exact);
}

}  // namespace
}  // namespace tiletune
