// The stages of a sweep (tuner/tuning/src/sweep/), each alone: lanes, pruned counts, the printer and the
// timeout policy. The whole sweep is checked against a fake worker in sweep_loop_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../test_paths.hpp"
#include "sweep/lanes.hpp"
#include "sweep/measure.hpp"
#include "sweep/printer.hpp"
#include "sweep/pruned_tally.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/store.hpp"

using namespace tiletune;
using namespace tiletune::sweep;

namespace {

LaneTask task(std::size_t pick) {
  LaneTask t;
  t.pick = pick;
  t.config.params = {{"X", static_cast<std::int64_t>(pick)}};
  return t;
}

// Deals `count` tasks to whichever lane is idle and collects until nothing is in flight; returns each
// pick's lane.
std::map<std::size_t, std::size_t> deal_all(Lanes& lanes, std::size_t count, std::exception_ptr* error) {
  std::map<std::size_t, std::size_t> lane_of;
  std::size_t next = 0;
  for (;;) {
    for (std::size_t k = 0; k < lanes.size() && next < count; ++k)
      if (lanes.idle(k)) lanes.give(k, task(next++));
    auto c = lanes.collect(std::chrono::milliseconds(50));
    if (!c) break;
    if (c->error && error && !*error) *error = c->error;
    for (auto& [k, r] : c->finished) EXPECT_TRUE(lane_of.emplace(r.pick, k).second) << "twice: " << r.pick;
  }
  return lane_of;
}

}  // namespace

TEST(SweepStages, LanesMeasureEveryTaskOnceOnTheLaneItWasGivenAndKeepTheirSetUp) {
  std::atomic<int> setups{0};
  std::vector<std::atomic<int>> on_lane(3);
  Lanes lanes(3, [&](std::size_t k, LaneTask& t, bool& ready) {
    if (!ready) ++setups, ready = true;
    ++on_lane[k];
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + t.pick % 3));
    LaneResult r;
    r.pick = t.pick;
    r.record.params = t.config.params;
    return r;
  });
  const auto lane_of = deal_all(lanes, 40, nullptr);
  ASSERT_EQ(lane_of.size(), 40u);
  int total = 0;
  for (auto& n : on_lane) {
    EXPECT_GT(n.load(), 0);
    total += n;
  }
  EXPECT_EQ(total, 40);
  EXPECT_EQ(setups.load(), 3);  // once per lane, kept between its tasks
  EXPECT_FALSE(lanes.collect(std::chrono::milliseconds(0)));
}

TEST(SweepStages, ALaneThatThrowsIsReportedAndTheOthersFinishWhatTheyHold) {
  Lanes lanes(2, [&](std::size_t, LaneTask& t, bool&) {
    if (t.pick == 3) throw std::runtime_error("lost the GPU");
    LaneResult r;
    r.pick = t.pick;
    return r;
  });
  std::exception_ptr error;
  const auto lane_of = deal_all(lanes, 8, &error);
  ASSERT_TRUE(error);
  EXPECT_THROW(std::rethrow_exception(error), std::runtime_error);
  EXPECT_EQ(lane_of.size(), 7u);
  EXPECT_EQ(lane_of.count(3), 0u);
}

TEST(SweepStages, ADrainedLaneIsNeverIdleAgain) {
  Lanes lanes(2, [&](std::size_t, LaneTask& t, bool&) { return LaneResult{t.pick, {}, 0, 0, false}; });
  lanes.drain(1);
  EXPECT_TRUE(lanes.idle(0));
  EXPECT_FALSE(lanes.idle(1));
}

TEST(SweepStages, PrunedConfigurationsAreCountedByReasonAndStoredOnceTheSweepRowExists) {
  tiletune::test::TempDir dir;
  Store store = Store::open(dir.path / "t.db");
  SweepSummary summary;
  PrunedTally pruned(store, summary);
  for (int i = 0; i < 10; ++i) {
    PlannedConfig c;
    c.params = {{"X", i}};
    c.outcome = Outcome::pruned;
    c.reason = i < 7 ? "too big" : "constraint: X < 7";
    pruned.add(c);
  }
  pruned.store();  // no sweep row yet: nothing to store them with
  EXPECT_EQ(pruned.count(), 10u);
  EXPECT_EQ(summary.counts[Outcome::pruned], 10);
  SweepSpec spec;
  spec.family = "f";
  spec.problem.dims = {64};
  spec.device.name = "GPU";
  spec.device.uuid = "GPU-1";
  summary.sweep_id = store.begin_sweep(spec);
  pruned.store();
  pruned.store();  // again: the same counts
  EXPECT_EQ(store.pruned_counts(summary.sweep_id), (PrunedCounts{{"constraint: X < 7", 3}, {"too big", 7}}));
  EXPECT_TRUE(store.results(summary.sweep_id).empty());  // no row per configuration
}

// A sweep of gemm_regtile at 2000x2000x2000 prunes 494,424 configurations: counted, they store as one row per
// reason (the time is printed, not asserted: it was seconds when each was a result row).
TEST(SweepStages, HalfAMillionPrunedConfigurationsStoreAsOneRowPerReason) {
  tiletune::test::TempDir dir;
  const auto path = dir.path / "t.db";
  SweepSummary summary;
  const auto t0 = std::chrono::steady_clock::now();
  {
    Store store = Store::open(path);
    PrunedTally pruned(store, summary);
    SweepSpec spec;
    spec.family = "f";
    spec.problem.dims = {2000, 2000, 2000};
    spec.device.name = "GPU";
    spec.device.uuid = "GPU-1";
    summary.sweep_id = store.begin_sweep(spec);
    PlannedConfig c;
    c.outcome = Outcome::pruned;
    for (int i = 0; i < 494'424; ++i) {
      c.params = {{"X", i}};
      c.reason = "shared memory: " + std::to_string(100 + i % 300) + " KB > 227 KB opt-in maximum";
      pruned.add(c);
    }
    pruned.store();
    EXPECT_EQ(pruned_total(store.pruned_counts(summary.sweep_id)), 494'424);
    EXPECT_EQ(store.pruned_counts(summary.sweep_id).size(), 300u);
    EXPECT_TRUE(store.results(summary.sweep_id).empty());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ counted and stored 494424 pruned configurations in " << seconds << " s; the file is "
            << std::filesystem::file_size(path) << " bytes ]\n";
  EXPECT_LT(std::filesystem::file_size(path), 1u << 20);
}

TEST(SweepStages, PlainProgressPrintsNewBestsFailuresAndEveryNthLine) {
  std::ostringstream out;
  SweepOptions options;
  options.log_every = 3;
  const Printer printer(out, options);
  Progress p;
  p.total = 6;
  p.best_ms = 1.5;
  p.best_params = "(X=1)";
  ResultRecord ok;
  ok.params = {{"X", 1}};
  ok.median_ms = 1.5;
  ResultRecord failed = ok;
  failed.outcome = Outcome::runtime_failed;
  failed.reason = "illegal address\nmore";
  p.recorded = 1;
  printer.recorded(p, ok, true);  // a new best
  p.recorded = 2;
  printer.recorded(p, ok, false);  // nothing to say
  p.recorded = 3;
  printer.recorded(p, ok, false);  // every third
  p.recorded = 4;
  printer.recorded(p, failed, false);
  const std::string text = out.str();
  EXPECT_NE(text.find("[1/6] pruned 0, failed 0, best 1.50000 ms (X=1)"), std::string::npos) << text;
  EXPECT_EQ(text.find("[2/6]"), std::string::npos) << text;
  EXPECT_NE(text.find("[3/6]"), std::string::npos) << text;
  EXPECT_NE(text.find("  X=1: runtime_failed: illegal address\n[4/6]"), std::string::npos) << text;
}

TEST(SweepStages, TheTimeoutFollowsTheBestSoFarUnlessOneIsGiven) {
  SweepOptions options;
  EXPECT_EQ(config_timeout(options, std::numeric_limits<double>::infinity()), 120.0);
  EXPECT_EQ(config_timeout(options, 1.0), 10.0);  // 50 x 52 repetitions of 1 ms + 5 s is under the floor
  EXPECT_NEAR(config_timeout(options, 100.0), 50 * 0.1 * 52 + 5, 1e-9);
  options.timeout_s = 3;
  EXPECT_EQ(config_timeout(options, 100.0), 3.0);
}
