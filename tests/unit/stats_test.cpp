#include <gtest/gtest.h>

#include "halox/common/stats.hpp"

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
