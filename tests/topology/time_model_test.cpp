// The time model's terms on synthetic topologies: each term grows with its
// count (bytes, sharing ranks), and each parameter moves its own term only.
#include "halox/programs/decomposition/time_model.hpp"

#include <gtest/gtest.h>

#include "betzy_topology.hpp"
#include "halox/common/error.hpp"
#include "halox/decomposition.hpp"

namespace halox {
namespace {

exchange_shape cube(int halo, int fields, algorithm a = algorithm::standard) {
  exchange_shape s;
  s.domain_per_rank = {16, 16, 16};
  s.halo = halo_widths::uniform(halo);
  s.nfields = fields;
  s.element_size = 4;
  s.alg = a;
  return s;
}

// mpicart's row-major layout of nodes x per_node ranks on a dims grid.
std::vector<rank_load> loads_of(const std::string& topo, int nodes, int per_node, ivec3 dims,
                                const exchange_shape& s) {
  auto ranks = assumed_placements(topology::load(topo), binding_policy::core, nodes, per_node);
  std::vector<ivec3> coords;
  for (int r = 0; r < nodes * per_node; ++r)
    coords.push_back(coords_of(r, dims, rank_order::mpi_cart()));
  return rank_loads(coords, dims, {true, true, true}, ranks, s);
}

// Every parameter at 1: every term with a count is present.
time_parameters all_ones() {
  time_parameters p;
  for (const auto& name : model_parameter_names()) p.value[name] = 1.0;
  return p;
}

double term(const std::vector<time_term>& terms, const std::string& name) {
  for (const auto& t : terms)
    if (t.name == name) return t.us;
  return 0.0;
}

const std::string two_sockets = "synthetic:pack:2 l3:2 core:2 pu:1";

TEST(TimeModel, EveryTermGrowsWithTheBytes) {
  const auto p = all_ones();
  for (algorithm a : {algorithm::standard, algorithm::staged, algorithm::faces}) {
    auto small = predict_time(loads_of(two_sockets, 2, 8, {4, 2, 2}, cube(1, 1, a)), p);
    auto large = predict_time(loads_of(two_sockets, 2, 8, {4, 2, 2}, cube(2, 3, a)), p);
    EXPECT_GT(large.us, small.us) << to_string(a);
    ASSERT_EQ(small.terms.size(), large.terms.size()) << to_string(a);
    for (size_t i = 0; i < small.terms.size(); ++i) {
      EXPECT_EQ(small.terms[i].name, large.terms[i].name);
      if (small.terms[i].name.rfind("latency.", 0) == 0)
        EXPECT_DOUBLE_EQ(large.terms[i].us, small.terms[i].us) << small.terms[i].name;
      else
        EXPECT_GT(large.terms[i].us, small.terms[i].us) << small.terms[i].name;
    }
  }
}

TEST(TimeModel, SharedTermsGrowWithTheRanksSharing) {
  // The same 2-rank-per-node block on every node; 2 or 4 nodes per socket-sharing group.
  time_parameters p;
  p.value["node.injection_ns_per_byte"] = 1.0;
  p.value["socket.memory_ns_per_byte"] = 1.0;
  p.value["rank.copy_ns_per_byte"] = 1.0;
  const auto s = cube(1, 2);
  // 4 ranks on one socket vs 2: the socket's memory term doubles, the copy term stays.
  auto two = time_terms(loads_of("synthetic:pack:1 core:2 pu:1", 2, 2, {2, 2, 1}, s)[0], p);
  auto four = time_terms(loads_of("synthetic:pack:1 core:4 pu:1", 1, 4, {2, 2, 1}, s)[0], p);
  EXPECT_DOUBLE_EQ(term(four, "socket-memory"), 2 * term(two, "socket-memory"));
  EXPECT_DOUBLE_EQ(term(four, "copy"), term(two, "copy"));
  // A node is a column along y, so each rank sends the same bytes off-node (its x faces):
  // 4 ranks per node put twice the bytes of 2 through the node's one port.
  auto port2 = predict_time(loads_of("synthetic:pack:1 core:2 pu:1", 4, 2, {4, 2, 1}, s), p);
  auto port4 = predict_time(loads_of("synthetic:pack:1 core:4 pu:1", 2, 4, {2, 4, 1}, s), p);
  EXPECT_GT(term(port2.terms, "node-injection"), 0);
  EXPECT_DOUBLE_EQ(term(port4.terms, "node-injection"), 2 * term(port2.terms, "node-injection"));
}

TEST(TimeModel, EachParameterMovesItsOwnTermOnly) {
  const auto loads = loads_of(betzy, 2, 128, {8, 8, 4}, cube(2, 2));
  const auto base = all_ones();
  const auto before = time_terms(loads[0], base);
  for (const auto& name : model_parameter_names()) {
    auto changed = base;
    changed.value[name] = 3.0;
    const auto after = time_terms(loads[0], changed);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      if (before[i].parameter == name)
        EXPECT_DOUBLE_EQ(after[i].us, 3 * before[i].us) << name;
      else
        EXPECT_DOUBLE_EQ(after[i].us, before[i].us) << name << " moved " << before[i].name;
    }
  }
  // Rank 0 of two Betzy nodes crosses core, L3, NUMA and node boundaries at least.
  EXPECT_GE(before.size(), 8u + 3u);
}

TEST(TimeModel, TheSlowestRankIsTheExchangesTime) {
  // Open boundaries: a corner rank sends less than an inner one.
  auto ranks = assumed_placements(topology::load(two_sockets), binding_policy::core, 1, 8);
  std::vector<ivec3> coords;
  for (int r = 0; r < 8; ++r) coords.push_back(coords_of(r, {8, 1, 1}, rank_order::mpi_cart()));
  auto loads = rank_loads(coords, {8, 1, 1}, {false, false, false}, ranks, cube(1, 1));
  auto t = predict_time(loads, all_ones());
  double slowest = 0;
  for (const auto& l : loads) {
    double us = 0;
    for (const auto& x : time_terms(l, all_ones())) us += x.us;
    slowest = std::max(slowest, us);
  }
  EXPECT_DOUBLE_EQ(t.us, slowest);
  EXPECT_NE(t.slowest_rank, 0);
  EXPECT_NE(t.slowest_rank, 7);
  // The distinct rows: the two ends, and the inner ranks split by socket edge.
  int ranks_in_rows = 0;
  for (const auto& row : distinct_rows(loads)) ranks_in_rows += row.ranks;
  EXPECT_EQ(ranks_in_rows, 8);
  EXPECT_LT(distinct_rows(loads).size(), 8u);
}

TEST(TimeModel, ParametersAreChecked) {
  time_parameters p;
  p.value["core.us_per_message"] = 1.0;
  EXPECT_NO_THROW(p.validate());
  p.value["core.us_per_mesage"] = 1.0;
  EXPECT_THROW(p.validate(), usage_error);
  time_parameters negative;
  negative.value["node.ns_per_byte"] = -1.0;
  EXPECT_THROW(negative.validate(), usage_error);
  EXPECT_EQ(p.get("node.ns_per_byte"), 0.0);
}

}  // namespace
}  // namespace halox
