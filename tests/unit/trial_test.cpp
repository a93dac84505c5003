#include <gtest/gtest.h>

#include <vector>

#include "transport/core/trial.hpp"

using halox::choose_from_rounds;
using halox::median;

// seconds[round * candidates + c]
TEST(Trial, ASlowMomentOfTheMachineDoesNotDecide) {
  // Candidate 1 is 10 % faster in every round but one. The machine slowed
  // down in round 4, after candidate 0 had run, and stayed slow: the medians
  // of the raw times would pick candidate 0 (1.0 against 1.8), the rounds'
  // own comparisons pick candidate 1.
  const std::vector<double> seconds{1.0, 0.9, 1.0, 0.9, 1.0, 0.9, 1.0, 1.8,  //
                                    2.0, 1.8, 2.0, 1.8, 2.0, 1.8};
  const auto choice = choose_from_rounds(seconds, 2);
  EXPECT_EQ(choice.best, 1u);
  EXPECT_TRUE(choice.clear);
}

TEST(Trial, ADifferenceWithinTheTieKeepsTheFirstCandidate) {
  std::vector<double> seconds;
  for (int r = 0; r < 7; ++r) seconds.insert(seconds.end(), {1.00, 0.99, 1.20});
  EXPECT_EQ(choose_from_rounds(seconds, 3).best, 0u);
  seconds.clear();
  for (int r = 0; r < 7; ++r) seconds.insert(seconds.end(), {1.00, 0.95, 1.20});
  EXPECT_EQ(choose_from_rounds(seconds, 3).best, 1u);
}

TEST(Trial, ARunnerUpThatWinsOftenAndIsCloseMakesTheChoiceUnclear) {
  // Candidate 1 wins on median by 5 %, but candidate 2 beat it in 3 of 7 rounds.
  const std::vector<double> close{1.2, 1.00, 1.06,  1.2, 1.00, 1.06,  1.2, 1.00, 1.06,  //
                                  1.2, 1.00, 1.06,  1.2, 1.00, 0.99,  1.2, 1.00, 0.99,  //
                                  1.2, 1.00, 0.99};
  const auto unclear = choose_from_rounds(close, 3);
  EXPECT_EQ(unclear.best, 1u);
  EXPECT_FALSE(unclear.clear);
  // The same wins against a runner-up far behind are clear.
  std::vector<double> far = close;
  for (size_t r = 0; r < 7; ++r) far[r * 3 + 2] *= 1.5;
  EXPECT_TRUE(choose_from_rounds(far, 3).clear);
}

TEST(Trial, OneCandidateIsChosen) {
  const auto choice = choose_from_rounds({3.0, 2.0, 4.0}, 1);
  EXPECT_EQ(choice.best, 0u);
  EXPECT_TRUE(choice.clear);
}

TEST(Trial, TheTrialsTakeTheOneMedian) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(median({5.0}), 5.0);
}
