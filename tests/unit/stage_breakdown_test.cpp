#include "stage_breakdown.hpp"

#include <gtest/gtest.h>

namespace halox {
namespace {

// One stage per rank; `work` in pack and copy, `wait` spent waiting.
stage_breakdown ranks_with(const std::vector<std::pair<double, double>>& work_and_wait) {
  stage_breakdown b;
  b.exchanges = 2;  // the splits are sums over the exchanges recorded
  for (const auto& [work, wait] : work_and_wait)
    b.ranks.push_back({stage_split{.pack_s = work / 2,
                                   .copy_s = work / 2,
                                   .wait_peers_s = wait,
                                   .wait_readers_s = 0,
                                   .other_s = 0}});
  return b;
}

TEST(StageBreakdown, TheBusiestRankIsTheOneTheOthersWaitFor) {
  // Ranks that wait for each other end together: rank 2 works, the others wait for it.
  const stage_breakdown b = ranks_with({{2, 6}, {3, 5}, {8, 0}, {4, 4}});
  const rank_split busiest = busiest_rank(b);
  EXPECT_EQ(busiest.rank, 2);
  EXPECT_DOUBLE_EQ(busiest.work_s, 4);  // per exchange
  EXPECT_DOUBLE_EQ(busiest.total_s, 4);
  // The slowest by whole time is a tie that says nothing about who is slow.
  EXPECT_DOUBLE_EQ(slowest_rank(b).total_s, 4);
  // Work 2, 3, 4, 8: the lower median is 3.
  EXPECT_DOUBLE_EQ(work_imbalance(b), 8.0 / 3.0);
  const auto j = to_json(b);
  EXPECT_EQ(j["busiest_rank"]["rank"], 2);
  EXPECT_DOUBLE_EQ(j["busiest_rank"]["work_s"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(j["work_imbalance"].get<double>(), 8.0 / 3.0);
  EXPECT_EQ(describe_busiest(b), "rank 2 works 4000000.00 us per exchange, 2.67x the median rank's work");
}

TEST(StageBreakdown, BalancedRanksAndRanksWithoutWork) {
  EXPECT_DOUBLE_EQ(work_imbalance(ranks_with({{5, 1}, {5, 1}})), 1);
  EXPECT_EQ(busiest_rank(ranks_with({{5, 1}, {5, 1}})).rank, 0);  // the first of equals
  EXPECT_DOUBLE_EQ(work_imbalance(ranks_with({{0, 1}, {0, 1}})), 1);
  EXPECT_EQ(busiest_rank(stage_breakdown{}).rank, -1);
  EXPECT_TRUE(to_json(stage_breakdown{}).is_null());
}

}  // namespace
}  // namespace halox
