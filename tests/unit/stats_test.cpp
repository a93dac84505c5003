#include <gtest/gtest.h>

#include <stdexcept>

#include "halox/common/median.hpp"
#include "halox_programs/stats.hpp"

TEST(Stats, PercentilesInterpolate) {
  auto s = halox::summarize({4, 1, 3, 2, 5});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.p25, 2);
  EXPECT_DOUBLE_EQ(s.p75, 4);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.p5, 1.2, 1e-12);
  EXPECT_NEAR(s.stddev, 1.5811388300841898, 1e-12);
}

TEST(Stats, AscendingOrderKeepsTiesInIndexOrder) {
  const std::vector<double> values{3, 1, 2, 1, 3};
  EXPECT_EQ(halox::ascending_order(values), (std::vector<size_t>{1, 3, 2, 0, 4}));
  EXPECT_TRUE(halox::ascending_order(std::vector<double>{}).empty());
}

TEST(Median, TheMiddleValueOrTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(halox::median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(halox::median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(halox::median({5}), 5);
  EXPECT_THROW(halox::median({}), std::invalid_argument);
  // The summaries' median is the same one.
  EXPECT_DOUBLE_EQ(halox::summarize({4, 1, 3, 2}).median, 2.5);
}
