// The consensus of earlier sweeps of other problems, weighed by how well each fits what is measured.
#include "weighted_consensus.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "replay_support.hpp"
#include "tiletune/guided.hpp"
#include "tiletune/replay.hpp"
#include "tiletune/transfer.hpp"

using namespace tiletune;

namespace {

// The H200's gemm_regtile reference space at `size` (bench/spaces/devices).
ReplaySpace h200_regtile(const std::string& size) { return test::regtile_space(size, "h200"); }

}  // namespace

// A member's weight falls with its misfit (to the fourth power), no weight grows without bound, and a
// candidate's consensus is the weighted mean of the members that have it: one failure makes it +inf, none
// having it leaves it unknown.
TEST(WeightedConsensus, WeighsEachMemberByItsMisfit) {
  EXPECT_DOUBLE_EQ(member_weight(0.1) / member_weight(0.2), 16.0);
  EXPECT_DOUBLE_EQ(member_weight(0.0), member_weight(kLeastMisfit));
  const std::vector<float> a{0.0f, 1.0f, NAN, INFINITY, NAN}, b{1.0f, 0.0f, 2.0f, 0.5f, NAN};
  const std::vector<float> c = weighted_log_consensus({&a, &b}, {3.0, 1.0});
  ASSERT_EQ(c.size(), 5u);
  EXPECT_FLOAT_EQ(c[0], 0.25f);
  EXPECT_FLOAT_EQ(c[1], 0.75f);
  EXPECT_FLOAT_EQ(c[2], 2.0f);  // only b has it
  EXPECT_TRUE(std::isinf(c[3]));
  EXPECT_TRUE(std::isnan(c[4]));
  const std::vector<float> r = unit_ranks(c);
  EXPECT_FLOAT_EQ(r[0], 0.0f);
  EXPECT_FLOAT_EQ(r[1], 0.5f);
  EXPECT_FLOAT_EQ(r[2], 1.0f);
  EXPECT_FLOAT_EQ(r[3], 1.0f);  // a failure ranks last
  EXPECT_TRUE(std::isnan(r[4]));
}

// Two sweeps of other problems give a consensus and, after it, a prior of each as its member; the members
// are not feature columns, the consensus is.
TEST(WeightedConsensus, TransferFromTwoOtherSizesNamesTheConsensusAndItsMembers) {
  const ReplaySpace target = h200_regtile("2000");
  std::vector<Params> params;
  for (const auto& p : target.points) params.push_back(p.params);
  const Transfer t =
      transfer_from({prior_sweep_of(h200_regtile("1000")), prior_sweep_of(h200_regtile("4096"))}, params, 3,
                    grid_waves_of(target));
  ASSERT_EQ(t.ranks.size(), 3u);
  EXPECT_EQ(t.consensus, 0u);
  EXPECT_EQ(t.members, (std::vector<std::size_t>{1, 2}));
  std::vector<std::vector<float>> rows(params.size(), std::vector<float>{0.0f});
  GuidedOptions guided;
  use_transfer(t, rows, guided);
  EXPECT_EQ(guided.prior_columns, 1u);
  EXPECT_EQ(rows.front().size(), 2u);
  EXPECT_EQ(guided.consensus, 0u);
  EXPECT_EQ(guided.members.size(), 2u);
  // One sweep of another problem is no consensus.
  const Transfer one =
      transfer_from({prior_sweep_of(h200_regtile("4096"))}, params, 3, grid_waves_of(target));
  EXPECT_EQ(one.consensus, kNoPrior);
  EXPECT_TRUE(one.members.empty());
}

// On an H200, gemm_regtile 1000^3 runs its large tiles under one wave of blocks and splits K; 4096^3 orders
// 2000^3's fastest nearly as 2000^3 does. Equally weighted, their consensus put 2000^3's best far down (223
// evaluations to within 1%, median of 20 seeds); weighed by their fit, 2000^3 is found within 30.
TEST(WeightedConsensus, ASizeBetweenTwoUnequalPredictorsIsFoundWithinThirtyMeasurements) {
  const ReplaySpace target = h200_regtile("2000");
  ReplayOptions o;
  o.transfer = {prior_sweep_of(h200_regtile("1000")), prior_sweep_of(h200_regtile("4096"))};
  const ReplayStat stat = replay_stat(test::evaluations_to(target, "guided", 0.01, 20, o));
  std::cout << target.name << ": " << stat.median << " evaluations to 1% with transfer\n";
  EXPECT_LE(stat.median, 30);
}
