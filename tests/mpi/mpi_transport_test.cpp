// Cases of the MPI-library transports that the registry matrix does not pin
// down: the same peer in many directions (2 ranks per dimension, all messages
// of distinct sizes so that a mispaired message cannot pass unnoticed), and a
// wait that times out naming the peer that did not arrive.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <string>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/exchange.hpp"
#include "halox/extend/plan.hpp"
#include "halox/extend/registry.hpp"
#include "halox/extend/topology.hpp"
#include "halox_programs/verify.hpp"
#include "cell_fields.hpp"
#include "scoped_environment.hpp"
#include "test_world.hpp"

using namespace halox;

namespace {

using testing_support::world_size;

// Every rank grid of 1 and 2 ranks per dimension for the current rank count.
std::vector<ivec3> grids_of_one_and_two() {
  switch (world_size()) {
    case 1: return {{1, 1, 1}};
    case 2: return {{2, 1, 1}, {1, 2, 1}, {1, 1, 2}};
    case 4: return {{2, 2, 1}, {2, 1, 2}, {1, 2, 2}};
    case 8: return {{2, 2, 2}};
    default: return {};
  }
}

// Every available transport that reaches any peer (MPI and the like).
std::vector<std::string> message_transports() {
  std::vector<std::string> out;
  for (const transport_entry* t : transport_registry())
    if (t->reach == transport_reach::any_peer && t->available()) out.emplace_back(t->name);
  return out;
}

// Two exchanges of freshly filled fields: the first wrong cell of any rank,
// agreed by all ("" when every halo cell is right).
std::string wrong_cells_in_two_exchanges(halo_exchange& ex, const std::vector<double*>& fields,
                                         const verify_context& ctx, int rank) {
  std::string error;
  for (int epoch = 0; epoch < 2 && error.empty(); ++epoch) {
    fill_fields(fields, ctx, epoch);
    ex.exchange();
    size_t total = 0;
    auto bad = check_fields(fields, ctx, epoch, 1, &total);
    if (total > 0)
      error = fmt::format("rank {}: {} wrong cells, first {}", rank, total, describe(bad[0]));
  }
  return agree_on_error(MPI_COMM_WORLD, error);
}

// Two fields on a periodic rank grid whose interior and halo widths are
// distinct primes, so the 26 boxes of a rank all differ in size (unique
// factorisation): messages between two ranks that pair in the wrong order
// fail loudly instead of swapping equal shapes.
struct two_fields_of_distinct_boxes {
  static constexpr ivec3 interior{5, 13, 23};
  decomposition d;
  local_grid grid{interior, halo_widths{{2, 7, 17}, {3, 11, 19}}};
  std::vector<std::vector<double>> memory;
  std::vector<double*> fields;
  verify_context ctx;

  two_fields_of_distinct_boxes(const ivec3& dims, algorithm alg)
      : d(make_cart_decomposition(MPI_COMM_WORLD, dims, {true, true, true}, false)),
        memory(2, std::vector<double>(grid.points())),
        fields{memory[0].data(), memory[1].data()},
        ctx{grid, subdomain_per_rank(d, interior), d.periodic(), alg} {}

  std::string wrong_cells(halo_exchange& ex) {
    return wrong_cells_in_two_exchanges(ex, fields, ctx, d.rank());
  }
};

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (auto& c : name)
    if (c == '-') c = '_';
  return name;
}

// A peer that is the neighbour in several directions gets one message per
// stage with every direction's boxes, field by field, in the order of the
// direction its sender sends toward, at both ends; the two ends agree on tags
// and bytes.
TEST(Plan, OnePeerInSeveralDirectionsIsOneMessageListedAlikeAtBothEnds) {
  if (world_size() != 2) GTEST_SKIP() << "needs two ranks";
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {2, 1, 1}, {true, true, true}, false);
  local_grid g({5, 4, 3}, halo_widths::uniform(1));
  const int other = 1 - d.rank();
  for (auto alg : {algorithm::standard, algorithm::staged}) {
    auto p = make_plan(d, testing_support::cell_fields(g, 2, 8, alg, field_grouping::compact));
    for (const auto& st : p.stages) {
      ASSERT_LE(st.sends.size(), 1u);
      ASSERT_EQ(st.sends.size(), st.recvs.size());
      if (st.sends.empty()) continue;
      const message& send = st.sends[0];
      const message& recv = st.recvs[0];
      EXPECT_EQ(send.peer, other);
      // Standard: the 9 directions with dx = +1 and the 9 with dx = -1; staged: -x and +x.
      const size_t directions = alg == algorithm::standard ? 18 : 2;
      ASSERT_EQ(send.boxes.size(), 2 * directions);
      for (size_t i = 0; i < send.boxes.size(); ++i) {
        EXPECT_EQ(send.boxes[i].field, static_cast<int>(i / directions));
        if (i % directions > 0) {
          EXPECT_LT(direction_index(send.boxes[i - 1].direction),
                    direction_index(send.boxes[i].direction));
        }
      }
      // What I receive is what the other rank sends: tags, then box sizes in order.
      int mine[2] = {send.tag, recv.tag}, theirs[2];
      MPI_Sendrecv(mine, 2, MPI_INT, other, 0, theirs, 2, MPI_INT, other, 0, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      EXPECT_EQ(recv.tag, theirs[0]);
      std::vector<long long> sent, got(recv.boxes.size());
      for (const auto& b : send.boxes) sent.push_back(b.region.volume());
      MPI_Sendrecv(sent.data(), static_cast<int>(sent.size()), MPI_LONG_LONG, other, 1, got.data(),
                   static_cast<int>(got.size()), MPI_LONG_LONG, other, 1, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      for (size_t i = 0; i < recv.boxes.size(); ++i)
        EXPECT_EQ(recv.boxes[i].region.volume(), got[i]) << "box " << i;
      for (size_t i = 0; i < recv.boxes.size(); ++i)
        EXPECT_EQ(direction_index(recv.boxes[i].direction),
                  direction_index(opposite(send.boxes[i].direction)))
            << "box " << i << ": both ranks see the other at the same side";
    }
  }
}

class DuplicateNeighbours : public testing::TestWithParam<std::string> {};

// Two fields of distinct boxes (see two_fields_of_distinct_boxes).
TEST_P(DuplicateNeighbours, PairByDirectionWithTwoRanksPerDimension) {
  const auto grids = grids_of_one_and_two();
  if (grids.empty()) GTEST_SKIP() << "for 1, 2, 4 or 8 ranks";
  for (const auto& dims : grids)
    for (auto alg : {algorithm::standard, algorithm::staged, algorithm::faces})
      for (auto grouping : {field_grouping::compact, field_grouping::sequence}) {
        two_fields_of_distinct_boxes c(dims, alg);
        halo_exchange ex(c.d, c.grid, std::span<double* const>(c.fields),
                         {alg, grouping, parse_transport_choice(GetParam())});
        const std::string agreed = c.wrong_cells(ex);
        ASSERT_TRUE(agreed.empty())
            << fmt::format("dims {}x{}x{} {} {}: {}", dims[0], dims[1], dims[2], to_string(alg),
                           to_string(grouping), agreed);
      }
}

INSTANTIATE_TEST_SUITE_P(MessageTransports, DuplicateNeighbours,
                         testing::ValuesIn(message_transports()), test_name);

// "...: P of R received here packed" of the mpi-rma settings; {-1, -1} if absent.
std::pair<int, int> packed_of_received(const std::string& settings) {
  int packed = -1, received = -1;
  const auto at = settings.rfind("): ");
  if (at == std::string::npos ||
      std::sscanf(settings.c_str() + at, "): %d of %d received here packed", &packed, &received) != 2)
    return {-1, -1};
  return {packed, received};
}

// mpi-rma packs the messages whose runs are short on the receiver and puts
// the others with datatypes: every message direct (rule 0), every message
// packed, and the default, which packs x faces (runs of 2-3 cells) and puts
// staged z faces (whole planes) directly. Both synchronisations, every
// algorithm and grouping for the default, the boxes of distinct sizes as above.
TEST(MpiRma, PacksShortRunsAndPutsLongOnesDirectly) {
  const auto grids = grids_of_one_and_two();
  if (grids.empty()) GTEST_SKIP() << "for 1, 2, 4 or 8 ranks";
  scoped_environment environment;
  for (const char* rule : {"0", "1000000000", ""}) {
    environment.set("HALOX_RMA_DIRECT_MIN_RUN", rule);
    for (const auto& dims : grids)
      for (const std::string transport : {"mpi-rma", "mpi-rma-fence"})
        for (auto alg : {algorithm::standard, algorithm::staged, algorithm::faces})
          for (auto grouping : {field_grouping::compact, field_grouping::sequence}) {
            // The forced rules on fewer shapes: MPICH with more ranks than cores is slow to
            // create windows.
            if (*rule && (alg == algorithm::faces || grouping == field_grouping::compact)) continue;
            two_fields_of_distinct_boxes c(dims, alg);
            halo_exchange ex(c.d, c.grid, std::span<double* const>(c.fields),
                             {alg, grouping, parse_transport_choice(transport)});
            const std::string where =
                fmt::format("HALOX_RMA_DIRECT_MIN_RUN='{}' dims {}x{}x{} {} {} {}", rule, dims[0],
                            dims[1], dims[2], transport, to_string(alg), to_string(grouping));
            const std::string settings = ex.transport_settings();
            const std::string why = where + ": " + settings;
            EXPECT_NE(settings.find(*rule ? "(tuning.rma.direct_min_run)" : "(default)"),
                      std::string::npos)
                << why;
            const auto [packed, received] = packed_of_received(settings);
            ASSERT_GE(received, 0) << why;
            if (world_size() > 1) {
              EXPECT_GT(received, 0) << why;
            }
            if (*rule == '0') {
              EXPECT_EQ(packed, 0) << why;
            }
            if (*rule == '1') {
              EXPECT_EQ(packed, received) << why;
            }
            // Two ranks along x only: every message is an x face of runs of 2-3 cells.
            // Along z only, staged: every message is whole planes.
            if (!*rule && dims == ivec3{2, 1, 1}) {
              EXPECT_EQ(packed, received) << why;
            }
            if (!*rule && dims == ivec3{1, 1, 2} && alg == algorithm::staged) {
              EXPECT_EQ(packed, 0) << why;
            }
            const std::string agreed = c.wrong_cells(ex);
            ASSERT_TRUE(agreed.empty()) << where << ": " << agreed;
          }
  }
}

// mpi-p2p and ucx fetch short strided runs ahead as forced (=0|1), where a
// rank moves at least 2 MiB per exchange on without measuring when the fields
// exceed the L2 cache and measured when they fit it, and not at all below
// (settings empty); the halos are exact every way.
TEST(MessageTransports, FetchAheadIsForcedMeasuredOrOffForSmallHalos) {
  struct shape {
    ivec3 interior;
    int halo, nfields;
    const char* forced;  // HALOX_<T>_FETCH_AHEAD
    const char* expected;  // in the settings; "" = settings empty
  };
  const shape shapes[] = {
      {{8, 7, 6}, 2, 2, "", ""},
      {{8, 7, 6}, 2, 2, "1", "strided runs fetched ahead (tuning.{}.fetch_ahead)"},
      {{8, 7, 6}, 2, 2, "0", "no run fetched ahead (tuning.{}.fetch_ahead)"},
      {{40, 40, 40}, 3, 10, "", "fetched ahead (measured)"},
      {{96, 96, 96}, 2, 3, "", "strided runs fetched ahead (the fields exceed the L2 cache)"},
  };
  // 40^3 with halos of 3 (a 778 KiB field) fits the L2 caches of the machines met so far.
  const size_t l2 = this_machine_l2_bytes();
  const bool fits_l2 = l2 == 0 || l2 >= 46 * 46 * 46 * sizeof(double);
  for (const std::string transport : {"mpi-p2p", "ucx"}) {
    if (auto why = find_transport(transport).unavailable(); !why.empty()) continue;
    const std::string variable = transport == "mpi-p2p" ? "P2P" : "UCX";
    const std::string name = "HALOX_" + variable + "_FETCH_AHEAD";
    scoped_environment environment;
    for (const auto& sh : shapes) {
      environment.set(name, sh.forced);
      auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
      local_grid grid(sh.interior, halo_widths::uniform(sh.halo));
      std::vector<std::vector<double>> memory(static_cast<size_t>(sh.nfields),
                                              std::vector<double>(grid.points()));
      std::vector<double*> fields;
      for (auto& m : memory) fields.push_back(m.data());
      verify_context ctx{grid, subdomain_per_rank(d, sh.interior), d.periodic(), algorithm::staged};
      halo_exchange ex(
          d, grid, std::span<double* const>(fields),
          {algorithm::staged, field_grouping::sequence, parse_transport_choice(transport)});
      const std::string settings = ex.transport_settings();
      std::string expected =
          fmt::format(fmt::runtime(sh.expected), transport == "mpi-p2p" ? "p2p" : "ucx");
      if (sh.interior[0] == 40 && !fits_l2) expected = "(the fields exceed the L2 cache)";
      const std::string where = fmt::format("{} {}='{}' interior {} halo {} x {}: '{}'", transport,
                                            name, sh.forced, sh.interior[0], sh.halo, sh.nfields,
                                            settings);
      if (expected.empty()) {
        EXPECT_EQ(settings, "") << where;
      } else {
        EXPECT_EQ(settings.rfind(transport + ": ", 0), 0u) << where;
        EXPECT_NE(settings.find(expected), std::string::npos) << where;
      }
      const std::string agreed =
          wrong_cells_in_two_exchanges(ex, fields, ctx, d.rank());
      ASSERT_TRUE(agreed.empty()) << where << ": " << agreed;
    }
  }
}

TEST(MpiNeighbor, PathSaysWhetherTheCollectiveIsPersistent) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  local_grid grid({4, 4, 4}, halo_widths::uniform(1));
  std::vector<double> a(grid.points());
  std::vector<double*> fields{a.data()};
  halo_exchange ex(d, grid, std::span<double* const>(fields), {.transport = parse_transport_choice("mpi-neighbor")});
  const std::string path = ex.transport_path();
  EXPECT_TRUE(path == "mpi-neighbor" || path == "mpi-neighbor(persistent)") << path;
  // An MPI 4 library has MPI_Neighbor_alltoallw_init, and the build must find it.
  if (MPI_VERSION >= 4) {
    EXPECT_EQ(path, "mpi-neighbor(persistent)");
  }
}

// Rank 1 sends to rank 0 and nothing comes back (open x, halo only above x):
// rank 0 starts and waits alone, times out naming rank 1 and the direction;
// then rank 1 joins and the same stage completes with exact halos.
class Timeout : public testing::TestWithParam<std::string> {};

TEST_P(Timeout, NamesThePeerThatDidNotArrive) {
  if (world_size() != 2) GTEST_SKIP() << "needs exactly two ranks";
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {2, 1, 1}, {false, false, false}, false);
  local_grid grid({4, 4, 4}, halo_widths{{0, 0, 0}, {1, 0, 0}});
  subdomain sub = subdomain_per_rank(d, {4, 4, 4});
  std::vector<double> a(grid.points());
  std::vector<double*> fields{a.data()};
  verify_context vctx{grid, sub, d.periodic(), algorithm::standard};
  fill_fields(fields, vctx, 0);
  exchange_plan plan =
      make_plan(d, testing_support::cell_fields(grid, 1, sizeof(double), algorithm::standard,
                                                field_grouping::compact));
  ASSERT_EQ(plan.stages.size(), 1u);
  ASSERT_EQ(plan.stages[0].sends.size(), d.rank() == 1 ? 1u : 0u);

  MPI_Comm comm;
  MPI_Comm_dup(d.comm(), &comm);
  node_membership node = make_node_membership(comm, 0);
  wait_policy waits;
  waits.timeout_seconds = 0.5;
  waits.oversubscribed = node.oversubscribed;
  waits.comm = comm;
  field_set set;
  set.pointers.push_back(reinterpret_cast<std::byte*>(a.data()));
  const transport_tuning tuning;
  {
    auto mover = make_transport(parse_transport_choice(GetParam()), {plan, comm, set, node, waits, tuning});
    if (d.rank() == 0) {
      mover->start(0);
      try {
        mover->wait(0);
        ADD_FAILURE() << "no timeout";
      } catch (const timeout_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("rank 1 (direction 1,0,0"), std::string::npos) << what;
        EXPECT_NE(what.find("rank 0:"), std::string::npos) << what;
      }
      MPI_Barrier(MPI_COMM_WORLD);
      mover->wait(0);
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
      mover->start(0);
      mover->wait(0);
    }
  }
  size_t total = 1;
  auto bad = check_fields(fields, vctx, 0, 1, &total);
  EXPECT_EQ(total, 0u) << "rank " << d.rank() << ": " << (bad.empty() ? "" : describe(bad[0]));
  MPI_Comm_free(&node.comm);
  MPI_Comm_free(&comm);
}

// A fence blocks like a barrier and cannot time out; the others can.
INSTANTIATE_TEST_SUITE_P(MpiTransports, Timeout, testing::Values("mpi-neighbor", "mpi-rma"),
                         test_name);

}  // namespace
