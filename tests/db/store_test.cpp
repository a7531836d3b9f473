#include <gtest/gtest.h>

#include <regex>

#include "test_support.hpp"

namespace tiletune {
namespace {

using test::failed;
using test::h100;
using test::ok;
using test::spec;

class StoreTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::filesystem::path path = dir / "tune.db";
  Store store = Store::open(path);
};

void expect_same_record(const ResultRecord& a, const ResultRecord& b) {
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.outcome, b.outcome);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.median_ms, b.median_ms);
  EXPECT_EQ(a.min_ms, b.min_ms);
  EXPECT_EQ(a.spread, b.spread);
  EXPECT_EQ(a.repetitions, b.repetitions);
  EXPECT_EQ(a.metric, b.metric);
  EXPECT_EQ(a.metric_unit, b.metric_unit);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.registers, b.registers);
  EXPECT_EQ(a.static_smem, b.static_smem);
  EXPECT_EQ(a.dynamic_smem, b.dynamic_smem);
  EXPECT_EQ(a.local_bytes, b.local_bytes);
  EXPECT_EQ(a.spill_bytes, b.spill_bytes);
  EXPECT_EQ(a.threads_per_block, b.threads_per_block);
  EXPECT_EQ(a.active_blocks, b.active_blocks);
  EXPECT_EQ(a.active_warps, b.active_warps);
  EXPECT_EQ(a.occupancy_limiter, b.occupancy_limiter);
  EXPECT_EQ(a.occupancy, b.occupancy);
  EXPECT_EQ(a.sm_clock_mhz, b.sm_clock_mhz);
}

TEST_F(StoreTest, BeginSweepRecordsTheSweep) {
  const SweepSpec s = spec("gemm_tiled", h100, {1000, 1000, 1000});
  const std::int64_t id = store.begin_sweep(s);
  const auto info = store.sweep(id);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->id, id);
  EXPECT_TRUE(std::regex_match(info->uid, std::regex("[0-9a-f]{32}"))) << info->uid;
  EXPECT_EQ(info->family, "gemm_tiled");
  EXPECT_EQ(info->template_hash, "hash-gemm_tiled");
  EXPECT_EQ(info->space_hash, "space-1");
  EXPECT_EQ(info->device.name, h100.name);
  EXPECT_EQ(info->device.uuid, h100.uuid);
  EXPECT_EQ(info->device.arch, "sm_90");
  EXPECT_EQ(info->device.sm_count, 132);
  EXPECT_FALSE(info->device.is_profile);
  EXPECT_EQ(info->problem, s.problem);
  EXPECT_EQ(info->kind, "sweep");
  EXPECT_EQ(info->strategy, "brute_force");
  EXPECT_EQ(info->status, "running");
  EXPECT_TRUE(std::regex_match(info->started_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << info->started_at;
  EXPECT_EQ(info->ended_at, "");
  EXPECT_EQ(info->tiletune_version, "0.1.0");
  EXPECT_EQ(info->git_sha, "abc123");
  EXPECT_EQ(info->result_count, 0);
  EXPECT_NE(store.sweep(id + 1000).has_value(), true);
  EXPECT_NE(store.sweep(store.begin_sweep(s))->uid, info->uid);
}

TEST_F(StoreTest, ResultsRoundTripOkFirstByTimeThenOthersByOutcome) {
  const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  ResultRecord sparse = ok({{"TILE", 64}, {"BLOCK_Y", 4}}, 3.0);
  sparse.min_ms.reset();
  sparse.registers.reset();
  sparse.occupancy.reset();
  const std::vector<ResultRecord> records{
      failed({{"TILE", 128}, {"BLOCK_Y", 8}}, Outcome::wrong_result, "relative L2 error 0.3"),
      ok({{"TILE", 16}, {"BLOCK_Y", 8}}, 2.0),
      failed({{"TILE", 256}, {"BLOCK_Y", 8}}, Outcome::pruned, "threads per block 2048 > 1024"),
      ok({{"TILE", 32}, {"BLOCK_Y", 8}}, 1.0),
      failed({{"TILE", 8}, {"BLOCK_Y", 8}}, Outcome::compile_failed, "error: expected ';'\nline 2"),
      sparse,
  };
  store.add_results(id, records);
  const auto results = store.results(id);
  ASSERT_EQ(results.size(), 6u);
  expect_same_record(results[0].record, records[3]);
  expect_same_record(results[1].record, records[1]);
  expect_same_record(results[2].record, sparse);
  expect_same_record(results[3].record, records[2]);
  expect_same_record(results[4].record, records[4]);
  expect_same_record(results[5].record, records[0]);
  for (const auto& r : results) {
    EXPECT_EQ(r.sweep_id, id);
    EXPECT_FALSE(r.measured_at.empty());
  }
  EXPECT_EQ(store.sweep(id)->result_count, 6);
  EXPECT_EQ(store.stored_param_keys(id),
            (std::vector<std::string>{"BLOCK_Y=4,TILE=64", "BLOCK_Y=8,TILE=128", "BLOCK_Y=8,TILE=16",
                                      "BLOCK_Y=8,TILE=256", "BLOCK_Y=8,TILE=32", "BLOCK_Y=8,TILE=8"}));
}

TEST_F(StoreTest, MeasuredResultsLeaveOutWhatWasPrunedInTheSameOrder) {
  const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  store.add_results(
      id, {failed({{"TILE", 256}, {"BLOCK_Y", 8}}, Outcome::pruned, "threads per block 2048 > 1024"),
           failed({{"TILE", 8}, {"BLOCK_Y", 8}}, Outcome::timeout, "no result within 5 s"),
           ok({{"TILE", 16}, {"BLOCK_Y", 8}}, 2.0),
           failed({{"TILE", 512}, {"BLOCK_Y", 8}}, Outcome::pruned, "threads per block 4096 > 1024"),
           ok({{"TILE", 32}, {"BLOCK_Y", 8}}, 1.0)});
  const auto measured = store.measured_results(id);
  ASSERT_EQ(measured.size(), 3u);
  EXPECT_EQ(params_to_text(measured[0].record.params), "BLOCK_Y=8,TILE=32");
  EXPECT_EQ(params_to_text(measured[1].record.params), "BLOCK_Y=8,TILE=16");
  EXPECT_EQ(measured[2].record.outcome, Outcome::timeout);
  EXPECT_EQ(store.results(id).size(), 5u);
}

TEST_F(StoreTest, BestIgnoresNonOkResultsEvenWhenFaster) {
  const SweepSpec s = spec("gemm_tiled", h100, {1000, 1000, 1000});
  const std::int64_t id = store.begin_sweep(s);
  ResultRecord fast_wrong = failed({{"TILE", 8}}, Outcome::wrong_result, "relative L2 error 0.5");
  fast_wrong.median_ms = 0.01;
  ResultRecord fast_timeout = failed({{"TILE", 4}}, Outcome::timeout, "over 10 s");
  fast_timeout.median_ms = 0.001;
  store.add_results(id, {fast_wrong, fast_timeout, ok({{"TILE", 16}}, 2.0), ok({{"TILE", 32}}, 1.5)});
  const auto best = store.best("gemm_tiled", h100.name, s.problem);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.params, (Params{{"TILE", 32}}));
  EXPECT_EQ(best->record.outcome, Outcome::ok);
  EXPECT_EQ(best->record.median_ms, 1.5);
  EXPECT_EQ(best->sweep_id, id);
  EXPECT_FALSE(store.best("gemm_tiled", h100.name, ProblemKey{{1000, 1000, 999}, {}}).has_value());
  EXPECT_FALSE(store.best("gemm_tiled", "NVIDIA A100", s.problem).has_value());
  EXPECT_FALSE(store.best("conv1d", h100.name, s.problem).has_value());
}

TEST_F(StoreTest, BestWithOnlyFailuresIsEmpty) {
  const SweepSpec s = spec("gemm_tiled", h100, {64, 64, 64});
  const std::int64_t id = store.begin_sweep(s);
  store.add_results(id, {failed({{"TILE", 8}}, Outcome::launch_failed, "too many resources requested")});
  EXPECT_FALSE(store.best("gemm_tiled", h100.name, s.problem).has_value());
}

TEST_F(StoreTest, BestSpansSweepsAndDevicesOfTheSameName) {
  const SweepSpec first = spec("gemm_tiled", h100, {1000, 1000, 1000});
  SweepSpec second = first;
  second.device.uuid = "GPU-h100-0002";  // a second card of the same model
  SweepSpec other = first;
  other.device = test::device("NVIDIA A100-SXM4-80GB", "GPU-a100", "sm_80");
  store.add_results(store.begin_sweep(first), {ok({{"TILE", 16}}, 2.0)});
  const std::int64_t second_id = store.begin_sweep(second);
  store.add_results(second_id, {ok({{"TILE", 32}}, 1.2)});
  store.add_results(store.begin_sweep(other), {ok({{"TILE", 8}}, 0.5)});
  const auto best = store.best("gemm_tiled", h100.name, first.problem);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->sweep_id, second_id);
  EXPECT_EQ(best->record.params, (Params{{"TILE", 32}}));
}

TEST_F(StoreTest, ProblemArgsArePartOfTheKey) {
  const SweepSpec narrow = spec("conv1d", h100, {1 << 20}, {{"mask_width", 5}});
  const SweepSpec wide = spec("conv1d", h100, {1 << 20}, {{"mask_width", 9}});
  store.add_results(store.begin_sweep(narrow), {ok({{"TILE", 256}}, 0.2)});
  store.add_results(store.begin_sweep(wide), {ok({{"TILE", 512}}, 0.3)});
  EXPECT_EQ(store.best("conv1d", h100.name, narrow.problem)->record.params, (Params{{"TILE", 256}}));
  EXPECT_EQ(store.best("conv1d", h100.name, wide.problem)->record.params, (Params{{"TILE", 512}}));
  EXPECT_FALSE(store.best("conv1d", h100.name, ProblemKey{{1 << 20}, {}}).has_value());
}

TEST_F(StoreTest, AddingAConfigurationAgainReplacesIt) {
  const SweepSpec s = spec("gemm_tiled", h100, {1000, 1000, 1000});
  const std::int64_t id = store.begin_sweep(s);
  store.add_results(id, {ok({{"TILE", 16}}, 2.0), ok({{"TILE", 32}}, 1.0)});
  store.add_results(id, {failed({{"TILE", 32}}, Outcome::runtime_failed, "illegal address")});
  const auto results = store.results(id);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].record.params, (Params{{"TILE", 16}}));
  EXPECT_EQ(results[1].record.outcome, Outcome::runtime_failed);
  EXPECT_EQ(results[1].record.reason, "illegal address");
  EXPECT_FALSE(results[1].record.median_ms.has_value());
  EXPECT_EQ(store.best("gemm_tiled", h100.name, s.problem)->record.params, (Params{{"TILE", 16}}));
}

TEST_F(StoreTest, ResultsCanBeLimitedToTheFastestFew) {
  const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  store.add_results(id, {failed({{"TILE", 8}}, Outcome::runtime_failed, "illegal address"),
                         ok({{"TILE", 16}}, 2.0), ok({{"TILE", 32}}, 1.0), ok({{"TILE", 64}}, 1.5)});
  const auto two = store.results(id, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].record.params, (Params{{"TILE", 32}}));
  EXPECT_EQ(two[1].record.params, (Params{{"TILE", 64}}));
  const auto many = store.results(id, 10);
  ASSERT_EQ(many.size(), 4u);
  EXPECT_EQ(many[3].record.outcome, Outcome::runtime_failed);
  EXPECT_EQ(store.results(id).size(), 4u);
}

TEST_F(StoreTest, AddResultsIsAllOrNothing) {
  const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  store.add_results(id, {ok({{"TILE", 16}}, 2.0)});
  // The bad name comes last: the good records before it must not be kept either.
  const std::vector<ResultRecord> batch{ok({{"TILE", 32}}, 1.0), ok({{"TILE", 64}}, 1.1),
                                        ok({{"9bad", 1}}, 0.5)};
  try {
    store.add_results(id, batch);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_TRUE(test::one_line(e.what())) << e.what();
    EXPECT_NE(std::string(e.what()).find("9bad"), std::string::npos) << e.what();
  }
  const auto results = store.results(id);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].record.params, (Params{{"TILE", 16}}));
  // The store is still usable after the rollback.
  store.add_results(id, {ok({{"TILE", 32}}, 1.0)});
  EXPECT_EQ(store.results(id).size(), 2u);
}

TEST_F(StoreTest, UnknownSweepIsAnError) {
  EXPECT_THROW(store.add_results(4242, {ok({{"TILE", 16}}, 2.0)}), StoreError);
  EXPECT_THROW(store.finish_sweep(4242, "done"), StoreError);
  EXPECT_TRUE(store.results(4242).empty());
}

TEST_F(StoreTest, BeginSweepRejectsBadInput) {
  EXPECT_THROW(store.begin_sweep(spec("gemm_tiled", h100, {0, 5})), StoreError);
  EXPECT_THROW(store.begin_sweep(spec("gemm_tiled", h100, {})), StoreError);
  EXPECT_THROW(store.begin_sweep(spec("", h100, {5})), StoreError);
  EXPECT_THROW(store.begin_sweep(spec("gemm_tiled", h100, {5}, {{"bad name", 1}})), StoreError);
  SweepSpec bad_json = spec("gemm_tiled", h100, {5});
  bad_json.family_json = "{not json";
  EXPECT_THROW(store.begin_sweep(bad_json), StoreError);
  SweepSpec no_uuid = spec("gemm_tiled", h100, {5});
  no_uuid.device.uuid.clear();
  EXPECT_THROW(store.begin_sweep(no_uuid), StoreError);
  EXPECT_TRUE(store.sweeps().empty());
}

TEST_F(StoreTest, FinishSweepSetsStatusAndEnd) {
  const std::int64_t id = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  store.finish_sweep(id, "done");
  const auto info = store.sweep(id);
  EXPECT_EQ(info->status, "done");
  EXPECT_FALSE(info->ended_at.empty());
  EXPECT_GE(info->ended_at, info->started_at);
}

TEST_F(StoreTest, ResumableSweepIsTheNewestUnfinishedSweep) {
  const SweepSpec s = spec("gemm_tiled", h100, {1000, 1000, 1000});
  EXPECT_FALSE(store.resumable_sweep("gemm_tiled", h100.uuid, s.problem).has_value());
  const std::int64_t first = store.begin_sweep(s);
  EXPECT_EQ(store.resumable_sweep("gemm_tiled", h100.uuid, s.problem)->id, first);
  const std::int64_t second = store.begin_sweep(s);
  store.finish_sweep(second, "interrupted");
  EXPECT_EQ(store.resumable_sweep("gemm_tiled", h100.uuid, s.problem)->id, second);
  store.finish_sweep(second, "done");
  EXPECT_EQ(store.resumable_sweep("gemm_tiled", h100.uuid, s.problem)->id, first);
  store.finish_sweep(first, "done");
  EXPECT_FALSE(store.resumable_sweep("gemm_tiled", h100.uuid, s.problem).has_value());

  SweepSpec plan = s;
  plan.kind = "plan";
  store.begin_sweep(plan);
  EXPECT_FALSE(store.resumable_sweep("gemm_tiled", h100.uuid, s.problem).has_value());
  const std::int64_t third = store.begin_sweep(s);
  EXPECT_EQ(store.resumable_sweep("gemm_tiled", h100.uuid, s.problem)->id, third);
  EXPECT_FALSE(store.resumable_sweep("gemm_tiled", "GPU-other", s.problem).has_value());
  EXPECT_FALSE(store.resumable_sweep("conv1d", h100.uuid, s.problem).has_value());
  EXPECT_FALSE(
      store.resumable_sweep("gemm_tiled", h100.uuid, ProblemKey{{1000, 1000, 1001}, {}}).has_value());
}

TEST_F(StoreTest, SweepsAreNewestFirstAndFiltered) {
  const DeviceRecord a100 = test::device("NVIDIA A100-SXM4-80GB", "GPU-a100", "sm_80");
  const std::int64_t a = store.begin_sweep(spec("gemm_tiled", h100, {1000, 1000, 1000}));
  const std::int64_t b = store.begin_sweep(spec("gemm_tiled", a100, {1000, 1000, 1000}));
  const std::int64_t c = store.begin_sweep(spec("conv1d", h100, {4096}, {{"mask_width", 5}}));
  const auto ids = [](const std::vector<SweepInfo>& sweeps) {
    std::vector<std::int64_t> out;
    for (const auto& s : sweeps) out.push_back(s.id);
    return out;
  };
  EXPECT_EQ(ids(store.sweeps()), (std::vector<std::int64_t>{c, b, a}));
  EXPECT_EQ(ids(store.sweeps("gemm_tiled")), (std::vector<std::int64_t>{b, a}));
  EXPECT_EQ(ids(store.sweeps("", h100.name)), (std::vector<std::int64_t>{c, a}));
  EXPECT_EQ(ids(store.sweeps("", "", ProblemKey{{4096}, {{"mask_width", 5}}})),
            (std::vector<std::int64_t>{c}));
  EXPECT_TRUE(store.sweeps("", "", ProblemKey{{4096}, {}}).empty());
}

TEST_F(StoreTest, DeviceIsUpdatedByUuid) {
  const std::int64_t first = store.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64}));
  DeviceRecord renamed = h100;
  renamed.name = "NVIDIA H100 80GB HBM3 (renamed driver string)";
  renamed.properties_json = R"({"clock_khz": 1755000})";
  store.begin_sweep(spec("gemm_tiled", renamed, {64, 64, 64}));
  EXPECT_EQ(store.sweep(first)->device.name, renamed.name);
  EXPECT_EQ(store.sweep(first)->device.properties_json, renamed.properties_json);
}

DeviceRecord h100_profile(int sm_count) {
  DeviceRecord d = test::device("NVIDIA H100 80GB HBM3", "profile:h100", "sm_90");
  d.is_profile = true;
  d.sm_count = sm_count;
  d.properties_json = R"({"profile": "h100", "sm_count": )" + std::to_string(sm_count) + "}";
  return d;
}

// A custom profile file named h100.json once overwrote the built-in H100's row, moving every sweep stored on
// it to another GPU. A profile's identity is its content.
TEST_F(StoreTest, AProfileOfTheSameNameNeverTakesOverAStoredProfile) {
  const DeviceRecord builtin = h100_profile(132), custom = h100_profile(114);
  const std::int64_t first = store.begin_sweep(spec("gemm_tiled", builtin, {64, 64, 64}));
  const std::int64_t second = store.begin_sweep(spec("gemm_tiled", custom, {64, 64, 64}));
  const auto a = store.sweep(first)->device, b = store.sweep(second)->device;
  EXPECT_EQ(a.uuid, "profile:h100");
  EXPECT_EQ(a.sm_count, 132);
  EXPECT_EQ(a.properties_json, builtin.properties_json);
  EXPECT_TRUE(std::regex_match(b.uuid, std::regex("profile:h100#[0-9a-f]{16}"))) << b.uuid;
  EXPECT_EQ(b.sm_count, 114);
  EXPECT_EQ(b.properties_json, custom.properties_json);
  // Each comes back to its own row; the same properties written another way are the same profile.
  DeviceRecord respaced = builtin;
  respaced.properties_json = R"({ "sm_count": 132,  "profile": "h100" })";
  EXPECT_EQ(store.sweep(store.begin_sweep(spec("gemm_tiled", respaced, {64, 64, 64})))->device.uuid, a.uuid);
  EXPECT_EQ(store.sweep(store.begin_sweep(spec("gemm_tiled", custom, {64, 64, 64})))->device.uuid, b.uuid);
  EXPECT_EQ(store.sweep(first)->device.sm_count, 132);
}

TEST_F(StoreTest, AGpuUuidNeverChangesChip) {
  const std::int64_t first = store.begin_sweep(spec("gemm_tiled", h100, {64, 64, 64}));
  DeviceRecord other_chip = test::device("NVIDIA A100-SXM4-80GB", h100.uuid, "sm_80");
  other_chip.sm_count = 108;
  try {
    store.begin_sweep(spec("gemm_tiled", other_chip, {64, 64, 64}));
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_TRUE(test::one_line(e.what())) << e.what();
    EXPECT_NE(std::string(e.what()).find("device " + h100.uuid + " is stored as the GPU '" + h100.name +
                                         "' (sm_90, 132 SMs); 'NVIDIA A100-SXM4-80GB' (sm_80, 108 SMs) "
                                         "cannot take over its uuid"),
              std::string::npos)
        << e.what();
  }
  // A profile that names a GPU's uuid gets a row of its own.
  DeviceRecord profile = h100;
  profile.is_profile = true;
  const std::int64_t planned = store.begin_sweep(spec("gemm_tiled", profile, {64, 64, 64}));
  EXPECT_NE(store.sweep(planned)->device.uuid, h100.uuid);
  EXPECT_TRUE(store.sweep(planned)->device.is_profile);
  EXPECT_EQ(store.sweep(first)->device.uuid, h100.uuid);
  EXPECT_FALSE(store.sweep(first)->device.is_profile);
  EXPECT_EQ(store.sweep(first)->device.arch, "sm_90");
  EXPECT_EQ(store.sweeps().size(), 2u);
}

TEST_F(StoreTest, AGpuNeverTakesOverAProfileUuid) {
  DeviceRecord profile = test::device("Lab GPU", "GPU-lab", "sm_89");
  profile.is_profile = true;
  const std::int64_t planned = store.begin_sweep(spec("gemm_tiled", profile, {64, 64, 64}));
  DeviceRecord gpu = profile;
  gpu.is_profile = false;
  gpu.properties_json = R"({"driver_version": 13000})";
  try {
    store.begin_sweep(spec("gemm_tiled", gpu, {64, 64, 64}));
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("is stored as the profile 'Lab GPU'"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(store.sweep(planned)->device.is_profile);
  EXPECT_EQ(store.sweeps().size(), 1u);
}

// A plan is stored whole or not at all.
TEST_F(StoreTest, AddSweepIsAllOrNothing) {
  const SweepSpec s = spec("gemm_tiled", h100, {1000, 1000, 1000});
  const std::int64_t id = store.add_sweep(s, {ok({{"TILE", 16}}, 2.0), ok({{"TILE", 32}}, 1.0)});
  EXPECT_EQ(store.sweep(id)->status, "done");
  EXPECT_FALSE(store.sweep(id)->ended_at.empty());
  EXPECT_EQ(store.results(id).size(), 2u);
  try {
    store.add_sweep(s, {ok({{"TILE", 8}}, 3.0), ok({{"9bad", 1}}, 0.5)}, "done");
    ADD_FAILURE() << "no StoreError";
  } catch (const StoreError& e) {
    EXPECT_TRUE(test::one_line(e.what())) << e.what();
    EXPECT_NE(std::string(e.what()).find("9bad"), std::string::npos) << e.what();
  }
  DeviceRecord other_chip = test::device("NVIDIA A100-SXM4-80GB", h100.uuid, "sm_80");
  EXPECT_THROW(store.add_sweep(spec("conv1d", other_chip, {4096}), {ok({{"TILE", 8}}, 3.0)}), StoreError);
  ASSERT_EQ(store.sweeps().size(), 1u);  // no half-made sweep, and no new family or problem row used
  EXPECT_EQ(store.sweeps().front().id, id);
}

TEST_F(StoreTest, DataSurvivesReopening) {
  const SweepSpec s = spec("gemm_tiled", h100, {1000, 1000, 1000});
  const std::int64_t id = store.begin_sweep(s);
  store.add_results(id, {ok({{"TILE", 32}}, 1.0)});
  store = Store::open(path);
  EXPECT_EQ(store.best("gemm_tiled", h100.name, s.problem)->record.params, (Params{{"TILE", 32}}));
  EXPECT_TRUE(store.integrity_ok());
}

TEST_F(StoreTest, ReadOnlyStoreReadsAndRefusesWrites) {
  const SweepSpec s = spec("gemm_tiled", h100, {1000, 1000, 1000});
  const std::int64_t id = store.begin_sweep(s);
  store.add_results(id, {ok({{"TILE", 32}}, 1.0)});
  Store reader = Store::open(path, Store::Mode::read_only);
  EXPECT_EQ(reader.results(id).size(), 1u);
  EXPECT_THROW(reader.begin_sweep(s), StoreError);
  EXPECT_THROW(reader.add_results(id, {ok({{"TILE", 8}}, 0.5)}), StoreError);
  EXPECT_EQ(store.results(id).size(), 1u);
}

TEST(StoreOpen, ReadOnlyOnAMissingFileCreatesNothing) {
  test::TempDir dir;
  const auto path = dir / "missing.db";
  EXPECT_THROW(Store::open(path, Store::Mode::read_only), StoreError);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(StoreOpen, MoveKeepsTheConnection) {
  test::TempDir dir;
  Store a = Store::open(dir / "t.db");
  const std::int64_t id = a.begin_sweep(spec("gemm_tiled", h100, {8, 8, 8}));
  Store b = std::move(a);
  b.add_results(id, {ok({{"TILE", 8}}, 0.1)});
  EXPECT_EQ(b.results(id).size(), 1u);
}

// Schema version 3: when a sweep found its best, stored and read back; a version 2 file gains the columns
// with NULL for the sweeps it holds.
TEST(Store, RemembersWhenASweepFoundItsBest) {
  test::TempDir dir;
  const auto path = dir / "best.db";
  std::int64_t old_id = 0;
  {
    Store store = Store::open(path);
    old_id = store.add_sweep(test::spec("gemm_tiled", test::h100, {64, 64, 64}),
                             {test::ok({{"TILE", 16}, {"BLOCK_Y", 4}}, 1.0)});
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "ALTER TABLE sweeps DROP COLUMN best_found_count; ALTER TABLE sweeps DROP COLUMN "
                           "best_found_seconds; DROP TABLE pruned; PRAGMA user_version = 2",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  Store store = Store::open(path);
  EXPECT_FALSE(store.sweep(old_id)->best_found_count.has_value());
  const auto id = store.begin_sweep(test::spec("gemm_tiled", test::h100, {128, 128, 128}));
  store.set_best_found(id, 17, 42.5);
  EXPECT_EQ(store.sweep(id)->best_found_count, 17);
  EXPECT_EQ(store.sweep(id)->best_found_seconds, 42.5);
  EXPECT_THROW(store.set_best_found(9999, 1, 1.0), StoreError);
}

}  // namespace
}  // namespace tiletune
