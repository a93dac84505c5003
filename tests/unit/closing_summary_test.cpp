// halox-bench's verdicts and closing summary: causes ranked by the cells they
// marked, the busy CPU named, a few worst cells, no line too long.
#include <gtest/gtest.h>

#include <string>

#include "stability.hpp"

using namespace halox::bench;

namespace {

probe_sample sample(double round_trip_ns, double run_wait = 0, int cpu = 0, double load = 0.5) {
  probe_sample s;
  s.round_trip_ns = {round_trip_ns};
  s.copy_GBps = 10;
  s.run_wait_share = run_wait;
  s.steal_share = 0;
  s.run_wait_cpu = cpu;
  s.load1 = load;
  return s;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

TEST(ClosingSummary, RanksTheCausesNamesTheBusyCpuAndKeepsLinesShort) {
  const turn_probes busy{sample(60), sample(60, 0.5, 1, 2.9)};
  const turn_probes moved{sample(60), sample(250)};
  const turn_probes calm{sample(60), sample(62)};
  const cell_stability busy_cell = judge_cell({1.0, 1.3}, {busy});
  const cell_stability moved_cell = judge_cell({1.0}, {moved});
  const cell_stability rounds_cell = judge_cell({1.0, 1.2}, {calm});
  EXPECT_EQ(busy_cell.causes, (std::vector<cause>{cause::rounds, cause::busy}));
  EXPECT_EQ(moved_cell.causes, std::vector<cause>{cause::moved});
  std::vector<named_cell> unstable;
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) unstable.push_back({"busy" + std::to_string(i), &busy_cell});
  for (int i = 0; i < 20; ++i) unstable.push_back({"moved" + std::to_string(i), &moved_cell});
  unstable.push_back({"rounds", &rounds_cell});
  const auto lines = closing_summary(unstable, 400, spread_of({busy, moved, calm}), 2);
  const std::string text = joined(lines);
  EXPECT_EQ(lines.front(), "321 of 400 cells unstable; the causes, most cells first:");
  const size_t first = text.find("1. 300 cells: the machine was busy: another process ran on CPU 1");
  const size_t second = text.find("2. 20 cells: the vCPUs moved");
  const size_t third = text.find("3. 1 cells: rounds disagreed by up to 20 %");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  ASSERT_NE(third, std::string::npos) << text;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_NE(text.find("rerun when the machine is quiet"), std::string::npos) << text;
  EXPECT_EQ(text.find("busy299"), std::string::npos) << "only the few worst cells";
  EXPECT_LE(lines.size(), 10u);
  for (const auto& line : lines) EXPECT_LE(line.size(), summary_width) << line;
  EXPECT_TRUE(closing_summary({}, 400, spread_of({calm}), 2).empty());
}

TEST(ClosingSummary, ALaunchThatMovedOutsideACellsTurnsMarksIt) {
  const turn_probes calm{sample(60), sample(62)};
  const probe_spread launch = spread_of({calm, {sample(60), sample(250)}});
  const cell_stability c = judge_cell({2.0, 2.0}, {calm}, launch);
  EXPECT_FALSE(c.stable);
  EXPECT_EQ(c.causes, std::vector<cause>{cause::launch_moved});
  EXPECT_TRUE(judge_cell({2.0, 2.0}, {calm}, spread_of({calm})).stable);
}

// CPU 0 waited all of one turn; CPU 1, where the other process ran, most of three.
TEST(ClosingSummary, TheBusyCpuWaitedMostInTheMostTurns) {
  const std::vector<turn_probes> turns{{sample(60), sample(60, 1.0, 0)},
                                       {sample(60), sample(60, 0.6, 1)},
                                       {sample(60), sample(60, 0.7, 1)},
                                       {sample(60), sample(60, 0.5, 1)}};
  EXPECT_EQ(spread_of(turns).worst_run_wait_cpu, 1);
  EXPECT_DOUBLE_EQ(spread_of(turns).worst_run_wait, 1.0);
}

TEST(ClosingSummary, WrapBreaksAtSpacesAndKeepsTheIndent) {
  const auto lines = wrap("  one two three four five", 12, "    ");
  EXPECT_EQ(lines, (std::vector<std::string>{"  one two", "    three", "    four", "    five"}));
}

}  // namespace

// A launch whose vCPUs moved (60 to 400 ns) and in which a rank once lost its
// core (the ping-pong's cap): the move is told with the answered round trips.
TEST(ClosingSummary, AMoveOfTheVcpusIsToldByTheAnsweredRoundTrips) {
  const turn_probes moved{sample(60), sample(400)};
  const turn_probes lost{sample(60), sample(2.0e6)};
  const probe_spread s = spread_of({moved, lost});
  EXPECT_DOUBLE_EQ(s.round_trip_high_ns, 2.0e6);
  EXPECT_DOUBLE_EQ(s.round_trip_answered_high_ns, 400);
  const cell_stability moved_cell = judge_cell({1.0}, {moved});
  const std::string text = joined(closing_summary({{"moved", &moved_cell}}, 4, s, 2));
  EXPECT_NE(text.find("round trip 60 ns to 400 ns"), std::string::npos) << text;
  EXPECT_EQ(text.find("lost its core"), std::string::npos) << text;
}
