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
                                       {sample(60), sample(60, 0.5, 1)},
                                       {sample(60), sample(60, 0.1, 0)}};
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

namespace {

probe_sample probe(double round_trip_ns, double copy_GBps = 10, double run_wait = 0, double steal = 0) {
  probe_sample s = sample(round_trip_ns, run_wait);
  s.copy_GBps = copy_GBps;
  s.steal_share = steal;
  s.run_wait_cpu.reset();
  return s;
}

turn_probes turn_after(const probe_sample& after) { return {probe(60), after}; }

}  // namespace

// The machine doubled its speed between the rounds: the times halve, the ratio stays.
TEST(Stability, RatiosAreTakenRoundByRoundAgainstTheSameRound) {
  const auto r = per_round_ratios({100e-6, 50e-6, 100e-6}, {50e-6, 25e-6, 52e-6});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->per_round.size(), 3u);
  EXPECT_DOUBLE_EQ(r->per_round[0], 2.0);
  EXPECT_DOUBLE_EQ(r->per_round[1], 2.0);
  EXPECT_DOUBLE_EQ(r->per_round[2], 100.0 / 52);
  EXPECT_DOUBLE_EQ(r->median, 2.0);
  EXPECT_DOUBLE_EQ(r->min, 100.0 / 52);
  EXPECT_DOUBLE_EQ(r->max, 2.0);
  EXPECT_FALSE(per_round_ratios({1.0}, {0.0}));
  EXPECT_EQ(per_round_ratios({2.0, 1.0}, {1.0})->per_round, std::vector<double>{2.0});
}

TEST(Stability, RoundsThatDisagreeByMoreThanTenPercentAreUnstable) {
  EXPECT_TRUE(judge_cell({2.0, 2.1, 2.05}, {}).stable);
  const cell_stability c = judge_cell({2.0, 2.3}, {});
  EXPECT_FALSE(c.stable);
  EXPECT_NEAR(c.rounds_disagree, 0.15, 1e-12);
  EXPECT_EQ(c.reasons, std::vector<std::string>{"rounds disagree by 15 %"});
  EXPECT_TRUE(judge_cell({2.0}, {}).stable);  // one round: nothing to disagree with
  EXPECT_EQ(judge_cell({1.0, 30.0}, {}).reasons, std::vector<std::string>{"rounds disagree 30x"});
}

TEST(Stability, AProbeThatMovedAModeOrADisturbedTurnMakesACellUnstable) {
  const std::vector<std::pair<probe_sample, std::string>> cases{
      {probe(95), "round trip moved 60-95 ns"},
      {probe(60, 5), "copy bandwidth moved x2.0"},
      {probe(60, 10, 0.5), "ranks waited 50 % of a turn for their cores"},
      {probe(60, 10, 0, 0.3), "30 % of a turn stolen"}};
  for (const auto& [after, reason] : cases) {
    const cell_stability c = judge_cell({2.0, 2.0}, {turn_after(probe(60)), turn_after(after)});
    EXPECT_FALSE(c.stable) << reason;
    EXPECT_EQ(c.reasons, std::vector<std::string>{reason});
  }
}

TEST(Stability, APartnerThatDidNotAnswerAtAllCountsAsABusyMachine) {
  const turn_probes lost = turn_after(probe(2.0e6));
  const cell_stability c = judge_cell({1.0}, {lost});
  EXPECT_EQ(c.causes, std::vector<cause>{cause::busy});
  const auto lines = closing_summary({{"a [h1f1]", &c}}, 4, spread_of({lost}), 2);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front(), "1 of 4 cells unstable; the causes, most cells first:");
  std::string text;
  for (const auto& line : lines) text += line.substr(line.find_first_not_of(' ')) + " ";
  EXPECT_NE(text.find("1. 1 cells: the machine was busy: another process ran on the ranks' cores, a rank "
                      "did not answer the probe for more than 2 ms (a rank had lost its core)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rerun when the machine is quiet"), std::string::npos) << text;
}

TEST(Stability, TheClosingSummaryRanksTheCausesAndSaysWhatHelps) {
  const cell_stability busy = judge_cell({1.0, 1.3}, {turn_after(probe(60, 10, 0.5))});
  const cell_stability moved = judge_cell({1.0}, {turn_after(probe(250))});
  const cell_stability steal = judge_cell({1.0}, {turn_after(probe(60, 10, 0, 0.4))});
  const cell_stability rounds = judge_cell({1.0, 1.2}, {turn_after(probe(60))});
  std::vector<named_cell> cells;
  for (int i = 0; i < 280; ++i) cells.push_back({"busy" + std::to_string(i) + " [h1f1]", &busy});
  for (int i = 0; i < 30; ++i) cells.push_back({"moved" + std::to_string(i) + " [h5f8]", &moved});
  cells.push_back({"steal [h1f8]", &steal});
  for (int i = 0; i < 9; ++i) cells.push_back({"rounds" + std::to_string(i) + " [h1f8]", &rounds});
  probe_sample waited = sample(60, 0.5, 1, 2.9);
  const probe_spread s = spread_of({turn_after(waited), turn_after(probe(250)), turn_after(probe(60, 10, 0, 0.4))});
  const auto lines = closing_summary(cells, 320, s, 2);
  EXPECT_EQ(lines.front(), "320 of 320 cells unstable; the causes, most cells first:");
  EXPECT_LE(lines.size(), 10u);
  std::string text;
  for (const auto& line : lines) {
    EXPECT_LE(line.size(), summary_width) << line;
    text += line.substr(line.find_first_not_of(' ')) + " ";
  }
  // Ranked by the cells each marked; the disagreeing rounds of busy cells are its symptom.
  size_t at = 0;
  for (const char* part : {"280 cells: the machine was busy: another process ran on CPU 1", "30 cells: the vCPUs moved",
                           "9 cells: rounds disagreed by up to 20 %", "1 cells: the hypervisor stole up to 40 %"}) {
    const size_t found = text.find(part);
    ASSERT_NE(found, std::string::npos) << part << "\n" << text;
    EXPECT_GE(found, at) << part;
    at = found;
  }
  EXPECT_NE(text.find("load average up to 2.9 on 2 CPUs); rerun when the machine is quiet"), std::string::npos) << text;
  EXPECT_NE(text.find("--rounds auto, or pin the VM's vCPUs to host cores"), std::string::npos) << text;
  EXPECT_NE(text.find("nothing inside the VM helps"), std::string::npos) << text;
  EXPECT_EQ(text.find("busy279"), std::string::npos) << "a few worst cells, not all of them";
  size_t said_busy = 0;
  for (size_t k = text.find("busy"); k != std::string::npos; k = text.find("busy", k + 1)) ++said_busy;
  EXPECT_LE(said_busy, 4u) << text;
}

// The short form, for the screen halox report --summary ends with: a line per cause.
TEST(Stability, TheBriefSummaryGivesEachCauseInALine) {
  const cell_stability moved = judge_cell({1.0, 1.3}, {turn_after(probe(300))});
  const cell_stability busy = judge_cell({1.0}, {turn_after(sample(60, 0.5, 1, 1.5))});
  std::vector<named_cell> cells{{"a", &moved}, {"b", &moved}, {"c", &busy}};
  const probe_spread s = spread_of({turn_after(probe(300)), turn_after(sample(60, 0.5, 1, 1.5))});
  const auto lines = closing_summary(cells, 4, s, 2, true);
  ASSERT_EQ(lines.size(), 3u) << joined(lines);
  EXPECT_EQ(lines[0], "3 of 4 cells unstable; the causes, most cells first:");
  EXPECT_EQ(lines[1], "  1. 2 cells: the vCPUs moved between host cores (round trip 60 ns to 300 ns): --rounds auto, "
                      "or pin the VM's vCPUs");
  EXPECT_EQ(lines[2], "  2. 1 cells: the machine was busy (CPU 1 taken, ranks waited 50 % of a turn, load 1.5 on 2 "
                      "CPUs): rerun when quiet");
  for (const auto& line : lines) EXPECT_LE(line.size(), brief_width) << line;
  // A row names the cause of its cell that marked most cells.
  const auto ranked = ranked_causes(cells);
  EXPECT_EQ(ranked, (std::vector<cause>{cause::moved, cause::busy}));
  EXPECT_EQ(leading_cause(moved, ranked), cause::moved);
  EXPECT_EQ(leading_cause(judge_cell({1.0}, {turn_after(probe(60))}), ranked), std::nullopt);
  EXPECT_EQ(to_string(cause::launch_moved), "launch_moved");
}

TEST(Stability, TheBaselinesTurnsCountForARatio) {
  const std::vector<turn_probes> calm{turn_after(probe(60)), turn_after(probe(60))};
  std::vector<turn_probes> with_baseline = calm;
  with_baseline.push_back(turn_after(probe(60)));
  with_baseline.push_back(turn_after(probe(60, 10, 0.6)));
  const cell_stability c = judge_cell({2.0, 2.0}, with_baseline);
  EXPECT_FALSE(c.stable);
  EXPECT_EQ(c.causes, std::vector<cause>{cause::busy});
  EXPECT_TRUE(judge_cell({2.0, 2.0}, calm).stable);
}

TEST(Stability, ALaunchThatMovedOutsideACellsTurnsSaysSo) {
  const std::vector<turn_probes> calm{turn_after(probe(60)), turn_after(probe(60))};
  const cell_stability c = judge_cell({2.0, 2.0}, calm, spread_of({turn_after(probe(60)), turn_after(probe(250))}));
  EXPECT_EQ(c.reasons, std::vector<std::string>{"measured in one mode: the launch's round trip moved 60-250 ns "
                                                "outside its turns"});
  EXPECT_TRUE(judge_cell({2.0, 2.0}, calm, spread_of({turn_after(probe(60)), turn_after(probe(70))})).stable);
}

TEST(Stability, AProbeWithinOneModeLeavesACellStable) {
  // 1.4x apart, 15 % waited, 5 % stolen: below every threshold.
  EXPECT_TRUE(judge_cell({2.0, 2.0}, {turn_after(probe(84, 7.5, 0.15, 0.05)), turn_after(probe(60))}).stable);
  // A pair beside the one that moved is measured on its own.
  probe_sample before = probe(60), after = probe(61);
  before.round_trip_ns = {60, 300};
  after.round_trip_ns = {61, 310};
  EXPECT_TRUE(judge_cell({1.0}, {{before, after}}).stable);
}

// A wait begun before a turn is booked when it ends: at most all of the turn.
TEST(Stability, AShareCountsAtMostAllOfItsTurn) {
  const probe_spread s = spread_of({turn_after(probe(60, 10, 1.4, 1.2)), turn_after(sample(60, 0.1, 0))});
  EXPECT_DOUBLE_EQ(s.worst_run_wait, 1.0);
  EXPECT_DOUBLE_EQ(s.worst_steal, 1.0);
}
