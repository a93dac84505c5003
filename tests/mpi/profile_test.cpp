// halo_exchange::profile: the setup times, and the stage splits recorded
// between record_stages(true) and record_stages(false), for every transport.
#include <gtest/gtest.h>
#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "halox/exchange.hpp"
#include "halox/extend/plan.hpp"
#include "halox/field_memory.hpp"
#include "halox/extend/registry.hpp"
#include "halox_programs/verify.hpp"

using namespace halox;

namespace {

constexpr int recorded = 7;

struct setup {
  decomposition decomp;
  verify_context ctx;
};

setup make_setup(algorithm alg) {
  // Periodic everywhere: every rank copies halo cells in every stage, even alone.
  setup s{make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false), {}};
  s.ctx.domain = subdomain_per_rank(s.decomp, {8, 6, 5});
  s.ctx.grid = local_grid(s.ctx.domain.extent, halo_widths::uniform(1));
  s.ctx.periodic = s.decomp.periodic();
  s.ctx.alg = alg;
  return s;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

double sum_of(const std::vector<stage_split>& stages) {
  double total = 0;
  for (const auto& s : stages) total += s.total_s();
  return total;
}

void expect_non_negative(const stage_split& s, const std::string& where) {
  EXPECT_GE(s.pack_s, 0) << where;
  EXPECT_GE(s.copy_s, 0) << where;
  EXPECT_GE(s.wait_peers_s, 0) << where;
  EXPECT_GE(s.wait_readers_s, 0) << where;
  EXPECT_GE(s.other_s, 0) << where;
}

void records_stages_of(const std::string& transport, algorithm alg) {
  auto s = make_setup(alg);
  shared_fields<double> memory(s.decomp, s.ctx.grid, 2);
  auto fields = memory.pointers();
  halo_exchange ex(s.decomp, s.ctx.grid, memory.pointers(), {.alg = alg, .transport = parse_transport_choice(transport)});
  const std::string where = transport + "/" + to_string(alg);

  const exchange_profile built = ex.profile();
  EXPECT_GT(built.setup.transports_s, 0) << where;
  EXPECT_GT(built.setup.plan_s, 0) << where;
  EXPECT_GE(built.setup.measured_choice_s, 0) << where;
  EXPECT_GE(built.setup.total_s + 1e-9, built.setup.plan_s + built.setup.transports_s) << where;
  // Off by default: nothing recorded.
  ex.exchange();
  EXPECT_EQ(ex.profile().exchanges, 0u) << where;
  EXPECT_TRUE(ex.profile().stages.empty()) << where;

  fill_fields(fields, s.ctx, 1);
  ex.record_stages(true);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < recorded; ++i) ex.exchange();
  const double wall = MPI_Wtime() - t0;
  size_t wrong = 0;
  auto bad = check_fields(fields, s.ctx, 1, 3, &wrong);
  EXPECT_EQ(wrong, 0u) << where << ": " << (bad.empty() ? "" : describe(bad.front()));

  const exchange_profile p = ex.profile();
  EXPECT_EQ(p.exchanges, static_cast<uint64_t>(recorded)) << where;
  ASSERT_EQ(p.stages.size(), ex.plan().stages.size()) << where;
  ASSERT_EQ(p.typical.size(), ex.plan().stages.size()) << where;
  double copied = 0;
  for (size_t st = 0; st < p.stages.size(); ++st) {
    expect_non_negative(p.stages[st], where + " stage " + std::to_string(st));
    expect_non_negative(p.typical[st], where + " typical stage " + std::to_string(st));
    copied += p.stages[st].pack_s + p.stages[st].copy_s;
  }
  // Every rank copies halo cells (periodic), so copying shows, except where
  // the MPI library copies them itself through datatypes (counted as
  // waiting; their copies within a rank show only where a dimension has one rank).
  const bool copied_by_mpi = transport == "mpi-types" || transport == "mpi-neighbor";
  if (!copied_by_mpi) EXPECT_GT(copied, 0) << where;
  // The stages lie within the loop that ran them (the clock's calibration
  // may differ from MPI_Wtime's by a little).
  EXPECT_GT(sum_of(p.stages), 0) << where;
  EXPECT_LE(sum_of(p.stages), wall * 1.05 + 1e-5) << where;
  EXPECT_LE(sum_of(p.typical), sum_of(p.stages)) << where;

  // Starting anew zeroes; stopping forgets.
  ex.record_stages(true);
  EXPECT_EQ(ex.profile().exchanges, 0u) << where;
  EXPECT_EQ(sum_of(ex.profile().stages), 0) << where;
  ex.record_stages(false);
  ex.exchange();
  EXPECT_TRUE(ex.profile().stages.empty()) << where;
}

}  // namespace

TEST(Profile, EveryTransportRecordsItsStages) {
  for (const auto& transport : available_transport_choices(MPI_COMM_WORLD))
    for (auto alg : {algorithm::standard, algorithm::staged}) records_stages_of(transport.name(), alg);
}

// Rank 1 starts its exchange `late` after the others: rank 0 cannot finish
// before rank 1's data is there, and that time must show as waiting for
// peers (a lower bound: a wait counted elsewhere falls short of it). Every
// rank's copies show as pack or copy.
void late_neighbour_shows_as_waiting(const std::string& transport) {
  auto s = make_setup(algorithm::staged);
  shared_fields<double> memory(s.decomp, s.ctx.grid, 2);
  halo_exchange ex(s.decomp, s.ctx.grid, memory.pointers(),
                   {.alg = algorithm::staged, .transport = parse_transport_choice(transport)});
  constexpr double late = 0.05;
  ex.exchange();  // first touches outside the record
  ex.record_stages(true);
  MPI_Barrier(MPI_COMM_WORLD);
  if (s.decomp.rank() == 1)
    for (const double until = MPI_Wtime() + late; MPI_Wtime() < until;) {
    }
  ex.exchange();
  const exchange_profile p = ex.profile();
  stage_split all;
  for (const auto& st : p.stages) {
    all.pack_s += st.pack_s, all.copy_s += st.copy_s, all.wait_peers_s += st.wait_peers_s;
    all.wait_readers_s += st.wait_readers_s, all.other_s += st.other_s;
  }
  if (s.decomp.rank() == 0) {
    EXPECT_GE(all.wait_peers_s, 0.8 * late) << transport;
  }
  EXPECT_GT(all.pack_s + all.copy_s, 0) << transport;
}

TEST(Profile, ALateNeighbourShowsAsWaitingForPeers) {
  if (world_size() < 2) GTEST_SKIP() << "needs a neighbour on another rank";
  for (const auto* transport : {"mpi-p2p", "shm"}) late_neighbour_shows_as_waiting(transport);
}

TEST(Profile, MeasuredChoicesCountInTheSetup) {
  auto s = make_setup(algorithm::staged);
  std::vector<double> u(s.ctx.grid.points());
  halo_exchange ex(s.decomp, s.ctx.grid, std::vector<double*>{u.data()},
                   {.alg = algorithm::staged, .auto_grouping = true});
  const exchange_profile p = ex.profile();
  EXPECT_GT(p.setup.measured_choice_s, 0);
  EXPECT_GE(p.setup.total_s + 1e-9,
            p.setup.measured_choice_s + p.setup.plan_s + p.setup.transports_s);
}

// Subset calls of the exchange's algorithm are recorded into the same stages
// (a code's update_halo calls are subsets); a call with another algorithm,
// whose stages differ, is not.
TEST(Profile, SubsetCallsOfTheExchangesAlgorithmAreRecorded) {
  auto s = make_setup(algorithm::staged);
  shared_fields<double> memory(s.decomp, s.ctx.grid, 2);
  halo_exchange ex(s.decomp, s.ctx.grid, memory.pointers(),
                   {.alg = algorithm::staged, .transport = parse_transport_choice("mpi-p2p")});
  ex.exchange({1}, 1);  // schedules built outside the record
  ex.exchange({1}, 1, algorithm::standard);
  ex.record_stages(true);
  for (int i = 0; i < recorded; ++i) ex.exchange({1}, 1);
  const exchange_profile p = ex.profile();
  EXPECT_EQ(p.exchanges, static_cast<uint64_t>(recorded));
  ASSERT_EQ(p.stages.size(), ex.plan().stages.size());
  double copied = 0;
  for (const auto& st : p.stages) copied += st.pack_s + st.copy_s;
  EXPECT_GT(copied, 0);  // periodic: every rank copies halo cells of field 1
  const double before = sum_of(ex.profile().stages);
  ex.exchange({1}, 1, algorithm::standard);
  EXPECT_EQ(ex.profile().exchanges, static_cast<uint64_t>(recorded));
  EXPECT_EQ(sum_of(ex.profile().stages), before);
}
