// hw and auto decompositions under MPI: node groups, synthetic topologies with
// assumed bindings (oversubscribed runs), real bindings, errors on all ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>

#include "halox/common/error.hpp"
#include "halox/programs/decomposition/auto.hpp"
#include "halox/programs/decomposition/hw.hpp"
#include "halox_programs/decomposition/options.hpp"

namespace halox {
namespace {

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}
int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void set_grid(decomposition_options& o, level l, ivec3 g) {
  o.level_grids[static_cast<size_t>(index_of(l))] = {g[0], g[1], g[2]};
}

// A hw layout for any number of ranks on this 2-core machine: nodes of up to
// 4 ranks (node groups) on a 2-socket x 2-core synthetic node, spread binding.
decomposition_options oversubscribed(int size, bool with_grids = true) {
  decomposition_options o;
  o.topology = "synthetic:pack:2 core:2 pu:1";
  o.binding = "spread";
  if (size == 2) {
    o.ranks_per_node = 2;
    if (with_grids) set_grid(o, level::socket, {1, 2, 1});
  } else if (size % 4 == 0) {
    o.ranks_per_node = 4;
    if (with_grids) {
      set_grid(o, level::node, {1, 1, size / 4});
      set_grid(o, level::socket, {2, 1, 1});
      set_grid(o, level::core, {1, 2, 1});
    }
  } else {
    o.ranks_per_node = 1;
    if (with_grids) set_grid(o, level::node, {size, 1, 1});
  }
  return o;
}

std::vector<rank_placement> pure_placements(const decomposition_options& o) {
  int per_node = o.ranks_per_node;
  return assumed_placements(topology::load(o.topology), parse_binding_policy(o.binding),
                            world_size() / per_node, per_node);
}

std::vector<ivec3> all_coords(const decomposition& d) {
  // Indexed by rank in d.comm().
  std::vector<int> flat(3 * static_cast<size_t>(d.size()));
  MPI_Allgather(d.coords().data(), 3, MPI_INT, flat.data(), 3, MPI_INT, d.comm());
  std::vector<ivec3> out;
  for (int r = 0; r < d.size(); ++r)
    out.push_back({flat[3 * static_cast<size_t>(r)], flat[3 * static_cast<size_t>(r) + 1],
                   flat[3 * static_cast<size_t>(r) + 2]});
  return out;
}

void expect_neighbours_consistent(const decomposition& d) {
  auto coords = all_coords(d);
  for (int i = 0; i < direction_count; ++i) {
    if (i == center_direction) continue;
    ivec3 dir = direction_of(i), want = d.coords();
    for (int k = 0; k < 3; ++k) want[k] = (want[k] + dir[k] + d.dims()[k]) % d.dims()[k];
    auto n = d.neighbor(dir);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(coords[static_cast<size_t>(*n)], want);
  }
}

TEST(HwMpi, MatchesThePureMappingInEveryOrder) {
  for (const char* name : {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"}) {
    auto o = oversubscribed(world_size());
    o.order = name;
    auto d = build_decomposition(MPI_COMM_WORLD, o, exchange_shape{});
    EXPECT_EQ(d.kind(), "hw");
    EXPECT_EQ(d.order().name(), name);
    auto pure = map_ranks(pure_placements(o), level_grids_of(o), rank_order::parse(name));
    EXPECT_EQ(d.dims(), level_grids_of(o).dims());
    EXPECT_EQ(d.coords(), pure[static_cast<size_t>(world_rank())]) << name;
    expect_neighbours_consistent(d);
  }
}

TEST(HwMpi, ExportedCartesianKeepsCoordinates) {
  auto o = oversubscribed(world_size());
  o.order = "XYZ";
  auto d = build_decomposition(MPI_COMM_WORLD, o, exchange_shape{});
  MPI_Comm cart = d.export_cartesian();
  int rank = 0, coords[3] = {-1, -1, -1}, dims[3], periods[3], mine[3];
  MPI_Comm_rank(cart, &rank);
  MPI_Cart_coords(cart, rank, 3, coords);
  MPI_Cart_get(cart, 3, dims, periods, mine);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(coords[k], d.coords()[k]);
    EXPECT_EQ(mine[k], d.coords()[k]);
    EXPECT_EQ(dims[k], d.dims()[k]);
    EXPECT_EQ(periods[k], 1);
  }
  MPI_Comm_free(&cart);
}

TEST(HwMpi, AutoMatchesThePureChoice) {
  auto o = oversubscribed(world_size(), false);
  o.kind = "auto";
  exchange_shape shape;
  shape.halo = halo_widths::uniform(2);
  auto d = build_decomposition(MPI_COMM_WORLD, o, shape);
  EXPECT_EQ(d.kind(), "auto");
  auto placements = pure_placements(o);
  std::vector<rank_placement> node0(placements.begin(), placements.begin() + o.ranks_per_node);
  auto choice =
      choose_auto(shape_of_node(node0), world_size() / o.ranks_per_node,
                  global_rank_grid({}, world_size()), shape, {true, true, true}, rank_order{});
  auto pure = map_ranks(placements, choice.grids, rank_order{});
  EXPECT_EQ(d.coords(), pure[static_cast<size_t>(world_rank())]);
  expect_neighbours_consistent(d);
  auto text = describe_layout(MPI_COMM_WORLD, o, shape, d);
  if (world_rank() == 0) {
    EXPECT_NE(text.find("auto: chosen"), std::string::npos) << text;
    EXPECT_NE(text.find("cross-node"), std::string::npos) << text;
  } else {
    EXPECT_TRUE(text.empty());
  }
}

TEST(HwMpi, DescribeLayout) {
  auto o = oversubscribed(world_size());
  auto d = build_decomposition(MPI_COMM_WORLD, o, exchange_shape{});
  auto text = describe_layout(MPI_COMM_WORLD, o, exchange_shape{}, d);
  if (world_rank() == 0) {
    EXPECT_NE(text.find("decomposition hw"), std::string::npos) << text;
    EXPECT_NE(text.find("world rank"), std::string::npos) << text;
    EXPECT_NE(text.find("rank in the hw communicator"), std::string::npos) << text;
    EXPECT_NE(text.find("same-core"), std::string::npos) << text;
    if (world_size() % 4 == 0) {
      EXPECT_NE(text.find("level socket"), std::string::npos) << text;
    }
  }
  // The plain cart kind, on the real machine and binding.
  decomposition_options cart;
  auto c = build_decomposition(MPI_COMM_WORLD, cart, exchange_shape{});
  EXPECT_EQ(c.kind(), "cart");
  text = describe_layout(MPI_COMM_WORLD, cart, exchange_shape{}, c);
  if (world_rank() == 0) {
    EXPECT_NE(text.find("--mpicart"), std::string::npos) << text;
  }
}

TEST(HwMpi, NodeCommunicators) {
  const int size = world_size(), rank = world_rank();
  MPI_Comm shared = node_communicator(MPI_COMM_WORLD, 0);
  int n = 0;
  MPI_Comm_size(shared, &n);
  EXPECT_EQ(n, size);  // one machine
  MPI_Comm_free(&shared);
  for (int group : {1, size}) {
    MPI_Comm node = node_communicator(MPI_COMM_WORLD, group);
    int local = 0;
    MPI_Comm_size(node, &n);
    MPI_Comm_rank(node, &local);
    EXPECT_EQ(n, group);
    EXPECT_EQ(local, rank % group);
    auto info = describe_node(MPI_COMM_WORLD, node);
    EXPECT_EQ(info.index, rank / group);
    EXPECT_EQ(info.count, size / group);
    MPI_Comm_free(&node);
  }
  // The environment variable, as rank 0 sees it.
  setenv("HALOX_RANKS_PER_NODE", "1", 1);
  MPI_Comm single = node_communicator(MPI_COMM_WORLD);
  MPI_Comm_size(single, &n);
  EXPECT_EQ(n, 1);
  MPI_Comm_free(&single);
  setenv("HALOX_RANKS_PER_NODE", "two", 1);
  EXPECT_THROW(node_communicator(MPI_COMM_WORLD), usage_error);
  unsetenv("HALOX_RANKS_PER_NODE");
  if (size > 1) {
    EXPECT_THROW(node_communicator(MPI_COMM_WORLD, size + 1), usage_error);
  }
}

TEST(HwMpi, NodeGroupsFollowWorldRanksOnAReorderedCommunicator) {
  if (world_size() % 4 != 0) GTEST_SKIP() << "needs 4k ranks";
  auto o = oversubscribed(world_size());
  o.order = "ZYX";
  auto d = build_decomposition(MPI_COMM_WORLD, o, exchange_shape{});
  MPI_Comm node = node_communicator(d.comm(), 4);
  int n = 0;
  MPI_Comm_size(node, &n);
  EXPECT_EQ(n, 4);
  int mine = world_rank() / 4, lo = mine, hi = mine;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, node);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, node);
  EXPECT_EQ(lo, hi);
  MPI_Comm_free(&node);
}

// Every rank throws, and all with the same message.
void expect_usage_error_everywhere(const decomposition_options& o, const std::string& part) {
  std::string message;
  try {
    build_decomposition(MPI_COMM_WORLD, o, exchange_shape{});
  } catch (const usage_error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(part), std::string::npos) << "'" << message << "'";
  int length = static_cast<int>(message.size()), lo = length, hi = length;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi) << "ranks disagree: " << message;
}

TEST(HwMpiErrors, ReportedOnEveryRank) {
  const int size = world_size();
  auto o = oversubscribed(size);
  set_grid(o, level::slot, {2, 1, 1});
  expect_usage_error_everywhere(o, "ranks, but there are");
  o = oversubscribed(size);
  o.ranks_per_node = size;  // one node
  o.level_grids = {};
  if (size % 2 == 0) {
    o.topology = "synthetic:core:" + std::to_string(size) + " pu:1";
    set_grid(o, level::node, {2, 1, 1});
    set_grid(o, level::slot, {1, 1, size / 2});
    expect_usage_error_everywhere(
        o, "node level: grid 2x1x1 needs 2 nodes, but the ranks are on 1 node");
  }
  o = oversubscribed(size);
  o.mpicart = {size, 1, 1};
  expect_usage_error_everywhere(o, "--mpicart and per-level grids exclude each other");
  o = oversubscribed(size);
  o.topology = "synthetic:nonsense";
  expect_usage_error_everywhere(o, "invalid synthetic topology");
  o = oversubscribed(size);
  o.binding = "real";
  expect_usage_error_everywhere(o, "placement_options::binding real needs the topology of this machine");
  o = oversubscribed(size);
  o.ranks_per_node = 5;  // 5 ranks on the 4 cores of the synthetic node, or not a divisor
  o.level_grids = {};
  set_grid(o, level::core, {5, 1, 1});
  expect_usage_error_everywhere(o, size == 5 ? "do not fit" : "ranks");
}

// Ranks on this machine with their real binding: bound runs lay them out by
// core; unbound runs get the binding error.
TEST(RealBinding, CoresOfThisMachine) {
  const int size = world_size();
  auto topo = topology::load("");
  auto mine = topo.place(topo.current_binding());
  int unbound = mine.unbound && size > 1 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &unbound, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  decomposition_options o;
  set_grid(o, level::core, {size, 1, 1});
  set_grid(o, level::l3, {1, 1, 1});
  const bool expect_bound = std::getenv("HALOX_TEST_EXPECT_BOUND") != nullptr;
  if (unbound) {
    EXPECT_FALSE(expect_bound) << "ranks are not bound";
    expect_usage_error_everywhere(o, "is not bound");
    return;
  }
  if (size > topo.count(level::core)) GTEST_SKIP() << "more ranks than cores";
  auto d = build_decomposition(MPI_COMM_WORLD, o, exchange_shape{});
  // Ranks sit in core order along x.
  int cores_before = 0, my_core = mine.object[index_of(level::core)];
  std::vector<int> cores(static_cast<size_t>(size));
  MPI_Allgather(&my_core, 1, MPI_INT, cores.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int c : cores) cores_before += c < my_core ? 1 : 0;
  EXPECT_EQ(d.coords(), (ivec3{cores_before, 0, 0}));
  expect_neighbours_consistent(d);
}

}  // namespace
}  // namespace halox
