// The pure mapping (topology, binding, level grids, order) -> coordinates.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "halox/common/error.hpp"
#include "halox/programs/decomposition/hw.hpp"
#include "halox_programs/program.hpp"
#include "betzy_topology.hpp"

namespace halox {
namespace {

const std::vector<std::string> orders = {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"};

std::vector<rank_placement> placements(const std::string& source, binding_policy policy, int nodes,
                                       int per_node) {
  return assumed_placements(topology::load(source), policy, nodes, per_node);
}

hw_grids grids(std::vector<level_grid> levels) {
  return hw_grids::make(std::move(levels));
}

// Betzy runs of the seeds: 64 ranks per node (2 cores each) and 128 ranks per node.
hw_grids halfcores(int nodes_x = 3) {
  return grids({{level::node, {nodes_x, 3, 3}},
                {level::socket, {1, 1, 2}},
                {level::numa, {1, 2, 2}},
                {level::l3, {2, 2, 1}},
                {level::core, {2, 1, 1}}});
}
hw_grids allcores() {
  return grids({{level::socket, {1, 1, 2}},
                {level::numa, {1, 2, 2}},
                {level::l3, {2, 2, 1}},
                {level::core, {4, 1, 1}}});
}

ivec3 block_of(const hw_grids& g, level l) {  // ranks per object of level l
  ivec3 e{1, 1, 1};
  for (const auto& lg : g.levels) {
    if (lg.where >= l) break;
    for (int d = 0; d < 3; ++d) e[d] *= lg.dims[d];
  }
  return e;
}

std::string text(const ivec3& c) {
  return std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]);
}

// Coordinates are a bijection onto the grid, and the ranks of every object of
// every given level form an aligned block of the expected shape.
void expect_compact_blocks(const std::vector<rank_placement>& ranks,
                           const std::vector<ivec3>& coords, const hw_grids& g) {
  const ivec3 dims = g.dims();
  std::set<int> seen;
  for (const auto& c : coords) {
    for (int d = 0; d < 3; ++d) ASSERT_TRUE(c[d] >= 0 && c[d] < dims[d]) << text(c);
    EXPECT_TRUE(seen.insert(linear_index(c, dims, rank_order{})).second) << "duplicate " << text(c);
  }
  for (const auto& lg : g.levels) {
    const ivec3 e = block_of(g, lg.where);
    std::map<std::pair<int, int>, std::vector<ivec3>> members;  // (node, object) -> coords
    for (size_t r = 0; r < ranks.size(); ++r)
      members[{ranks[r].node, ranks[r].object[index_of(lg.where)]}].push_back(coords[r]);
    for (const auto& [key, cs] : members) {
      ivec3 lo = cs.front(), hi = cs.front();
      for (const auto& c : cs)
        for (int d = 0; d < 3; ++d) {
          lo[d] = std::min(lo[d], c[d]);
          hi[d] = std::max(hi[d], c[d]);
        }
      for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(hi[d] - lo[d] + 1, e[d]) << to_string(lg.where) << " " << key.second;
        EXPECT_EQ(lo[d] % e[d], 0) << to_string(lg.where) << " " << key.second;
      }
      EXPECT_EQ(static_cast<int>(cs.size()), e[0] * e[1] * e[2]);
    }
  }
}

TEST(HwMapping, BetzyHalfcoresAllOrders) {
  auto ranks = placements(betzy, binding_policy::spread, 27, 64);
  for (const auto& name : orders) {
    SCOPED_TRACE(name);
    auto g = halfcores();
    EXPECT_EQ(g.dims(), (ivec3{12, 12, 12}));
    EXPECT_EQ(g.node_block(), (ivec3{4, 4, 4}));
    auto coords = map_ranks(ranks, g, rank_order::parse(name));
    expect_compact_blocks(ranks, coords, g);
  }
}

TEST(HwMapping, BetzyAllcoresAllOrders) {
  auto ranks = placements(betzy, binding_policy::core, 1, 128);
  for (const auto& name : orders) {
    SCOPED_TRACE(name);
    auto coords = map_ranks(ranks, allcores(), rank_order::parse(name));
    EXPECT_EQ(allcores().dims(), (ivec3{8, 4, 4}));
    expect_compact_blocks(ranks, coords, allcores());
  }
}

TEST(HwMapping, OneLevelFollowsTheOrder) {
  // Four cores of one L3, --core 2 2 1: core k sits where the order puts index k.
  auto ranks = placements("synthetic:l3:1 core:4 pu:1", binding_policy::core, 1, 4);
  for (const auto& name : orders) {
    auto order = rank_order::parse(name);
    auto coords = map_node(ranks, grids({{level::core, {2, 2, 1}}}), order);
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(coords[static_cast<size_t>(k)], coords_of(k, {2, 2, 1}, order)) << name;
      EXPECT_EQ(linear_index(coords[static_cast<size_t>(k)], {2, 2, 1}, order), k) << name;
    }
  }
}

TEST(HwMapping, LevelsCombineAsInHwcart) {
  // 2 L3 x 4 cores; --l3 1 2 1 --core 2 2 1: c = core coords + l3 coords * (2,2,1).
  auto ranks = placements("synthetic:l3:2 core:4 pu:1", binding_policy::core, 1, 8);
  auto g = grids({{level::l3, {1, 2, 1}}, {level::core, {2, 2, 1}}});
  auto xyz = map_node(ranks, g, rank_order::parse("XYZ"));
  EXPECT_EQ(xyz[1], (ivec3{1, 0, 0}));
  EXPECT_EQ(xyz[2], (ivec3{0, 1, 0}));
  EXPECT_EQ(xyz[5], (ivec3{1, 2, 0}));  // core 1 of L3 1
  auto zyx = map_node(ranks, g, rank_order::parse("ZYX"));
  EXPECT_EQ(zyx[1], (ivec3{0, 1, 0}));  // y before x when z has extent 1
  EXPECT_EQ(zyx[2], (ivec3{1, 0, 0}));
  EXPECT_EQ(zyx[6], (ivec3{1, 2, 0}));
}

TEST(HwMapping, NeighboursInsideBlocks) {
  // A neighbour shares my L3 / NUMA node / socket exactly when it lies in my block.
  auto ranks = placements(betzy, binding_policy::core, 1, 128);
  const auto g = allcores();
  const ivec3 dims = g.dims();
  for (const auto& name : orders) {
    auto coords = map_ranks(ranks, g, rank_order::parse(name));
    std::map<int, size_t> at;
    for (size_t r = 0; r < coords.size(); ++r) at[linear_index(coords[r], dims, rank_order{})] = r;
    for (size_t r = 0; r < coords.size(); ++r)
      for (int i = 0; i < direction_count; ++i) {
        if (i == center_direction) continue;
        ivec3 c = coords[r], dir = direction_of(i);
        bool inside = true;
        for (int d = 0; d < 3; ++d) {
          c[d] += dir[d];
          inside = inside && c[d] >= 0 && c[d] < dims[d];
        }
        if (!inside) continue;
        size_t q = at[linear_index(c, dims, rank_order{})];
        for (level l : {level::l3, level::numa, level::socket}) {
          ivec3 e = block_of(g, l);
          bool same_block = true;
          for (int d = 0; d < 3; ++d) same_block = same_block && coords[r][d] / e[d] == c[d] / e[d];
          EXPECT_EQ(ranks[r].object[index_of(l)] == ranks[q].object[index_of(l)], same_block)
              << name << " " << to_string(l) << " rank " << r << " dir " << text(dir);
        }
      }
  }
}

TEST(HwMapping, UnevenTopology) {
  // 3 L3 caches of 2 cores with 2 hardware threads each.
  const std::string uneven = "synthetic:pack:1 l3:3 core:2 pu:2";
  auto threads = placements(uneven, binding_policy::hwthread, 1, 12);
  auto g = grids({{level::l3, {3, 1, 1}}, {level::core, {1, 2, 1}}, {level::hwthread, {1, 1, 2}}});
  for (const auto& name : orders)
    expect_compact_blocks(threads, map_ranks(threads, g, rank_order::parse(name)), g);
  auto cores = placements(uneven, binding_policy::core, 2, 6);
  auto g2 = grids({{level::node, {1, 1, 2}}, {level::l3, {1, 3, 1}}, {level::core, {2, 1, 1}}});
  for (const auto& name : orders)
    expect_compact_blocks(cores, map_ranks(cores, g2, rank_order::parse(name)), g2);
  // Five cores: one level only (the counts do not factor over the L3s).
  auto five = placements(uneven, binding_policy::core, 1, 5);
  auto coords = map_ranks(five, grids({{level::core, {5, 1, 1}}}), rank_order{});
  EXPECT_EQ(coords[4], (ivec3{4, 0, 0}));
  EXPECT_THROW(
      map_ranks(five, grids({{level::l3, {3, 1, 1}}, {level::core, {2, 1, 1}}}), rank_order{}),
      usage_error);
}

TEST(HwMapping, SingleCore) {
  auto one = placements("synthetic:core:1 pu:1", binding_policy::core, 1, 1);
  EXPECT_EQ(map_ranks(one, grids({{level::core, {1, 1, 1}}}), rank_order{})[0], (ivec3{0, 0, 0}));
  EXPECT_EQ(map_ranks(one, grids({}), rank_order{})[0], (ivec3{0, 0, 0}));
  // Two hardware threads of one core.
  auto two = placements("synthetic:core:1 pu:2", binding_policy::hwthread, 1, 2);
  for (const auto& name : orders) {
    auto coords = map_ranks(two, grids({{level::core, {1, 1, 1}}, {level::hwthread, {1, 2, 1}}}),
                            rank_order::parse(name));
    EXPECT_EQ(coords[1], (ivec3{0, 1, 0})) << name;
  }
}

TEST(HwMapping, NodesAndSlots) {
  // 4 nodes of 4 ranks; ranks of a node laid out by their rank on it (no binding needed).
  auto ranks = placements("synthetic:core:4 pu:1", binding_policy::core, 4, 4);
  for (auto& p : ranks) p.unbound = true;  // slots ignore the binding
  auto g = grids({{level::node, {2, 2, 1}}, {level::slot, {2, 1, 2}}});
  for (const auto& name : orders) {
    auto order = rank_order::parse(name);
    auto coords = map_ranks(ranks, g, order);
    for (size_t r = 0; r < ranks.size(); ++r) {
      ivec3 origin = node_origin(ranks[r].node, g, order);
      EXPECT_EQ(origin, (ivec3{coords_of(ranks[r].node, {2, 2, 1}, order)[0] * 2,
                               coords_of(ranks[r].node, {2, 2, 1}, order)[1] * 1, 0}));
      ivec3 local = coords_of(ranks[r].local_rank, {2, 1, 2}, order);
      for (int d = 0; d < 3; ++d) EXPECT_EQ(coords[r][d], origin[d] + local[d]) << name;
    }
  }
  EXPECT_EQ(g.options(), "--node 2 2 1 --slot 2 1 2");
}

// ---- errors: one clear message naming the level, the expectation and the finding ----

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const usage_error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST(HwMappingErrors, ProductAndNodes) {
  auto ranks = placements(betzy, binding_policy::spread, 1, 32);
  auto e = error_of([&] { map_ranks(ranks, halfcores(), rank_order{}); });
  EXPECT_CONTAINS(e, "make a 12x12x12 grid of 1728 ranks, but there are 32 ranks");
  auto two_nodes = grids({{level::node, {2, 1, 1}}, {level::core, {16, 1, 1}}});
  e = error_of([&] { map_ranks(ranks, two_nodes, rank_order{}); });
  EXPECT_CONTAINS(e, "node level: grid 2x1x1 needs 2 nodes, but the ranks are on 1 node");
  // The library names its option and variable; the programs say their flag instead.
  EXPECT_CONTAINS(e, "ranks_per_node N or HALOX_RANKS_PER_NODE=N");
  EXPECT_EQ(e.find("--ranks-per-node"), std::string::npos) << e;
  EXPECT_CONTAINS(halox::in_flag_terms(e), "--ranks-per-node N or HALOX_RANKS_PER_NODE=N");
  // Uneven ranks per node.
  auto three = placements(betzy, binding_policy::core, 1, 3);
  e = error_of([&] { map_node(three, grids({{level::core, {2, 2, 1}}}), rank_order{}); });
  EXPECT_CONTAINS(e, "node 0 holds 3 ranks, but the levels below the node (core 2x2x1) need 4");
}

TEST(HwMappingErrors, Binding) {
  auto topo = topology::load("synthetic:core:4 pu:1");
  std::vector<rank_placement> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(topo.place({0, 1, 2, 3}));
    ranks.back().rank = r;
    ranks.back().local_rank = r;
  }
  auto g = grids({{level::core, {2, 1, 1}}});
  auto e = error_of([&] { map_node(ranks, g, rank_order{}); });
  EXPECT_CONTAINS(e, "rank 0 is not bound");
  EXPECT_CONTAINS(e, "--bind-to core");
  EXPECT_CONTAINS(e, "srun --cpu-bind=cores");
  ranks[0] = topo.place({1});
  ranks[1] = topo.place({1, 2});
  ranks[1].rank = ranks[1].local_rank = 1;
  e = error_of([&] { map_node(ranks, g, rank_order{}); });
  EXPECT_CONTAINS(e,
                  "ranks 0 and 1 of node 0 are bound to overlapping hardware threads (1 and 1-2)");
  // Slots need no binding.
  for (auto& p : ranks) p.unbound = true;
  EXPECT_NO_THROW(map_node(ranks, grids({{level::slot, {2, 1, 1}}}), rank_order{}));
}

TEST(HwMappingErrors, LevelCounts) {
  // Four ranks on cores 0, 1, 2 and 4: three L3 caches occupied, unevenly.
  auto topo = topology::load("synthetic:pack:1 l3:3 core:2 pu:1");
  std::vector<rank_placement> ranks;
  for (int core : {0, 1, 2, 4}) {
    ranks.push_back(topo.place({core}));
    ranks.back().rank = ranks.back().local_rank = static_cast<int>(ranks.size()) - 1;
  }
  auto e = error_of([&] {
    map_node(ranks, grids({{level::l3, {2, 1, 1}}, {level::core, {2, 1, 1}}}), rank_order{});
  });
  EXPECT_CONTAINS(e,
                  "l3 level: grid 2x1x1 needs 2 occupied L3 caches in each node, but node 0 has "
                  "ranks on 3");
  EXPECT_CONTAINS(e, "L3 cache 0: ranks 0-1");
  e = error_of([&] {
    map_node(ranks, grids({{level::l3, {1, 1, 4}}, {level::core, {1, 1, 1}}}), rank_order{});
  });
  EXPECT_CONTAINS(e, "l3 level: grid 1x1x4 needs 4 occupied L3 caches");
  // Three L3 caches, but two cores in the first and one in the others.
  e = error_of([&] {
    map_node(ranks, grids({{level::l3, {3, 1, 1}}, {level::core, {1, 1, 1}}}), rank_order{});
  });
  EXPECT_CONTAINS(e, "node 0 holds 4 ranks, but the levels below the node");
  // Ranks spread unevenly: L3 0 holds three of them, L3 1 one.
  auto wide = topology::load("synthetic:l3:2 core:3 pu:1");
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r] = wide.place({std::vector<int>{0, 1, 2, 4}[r]});
    ranks[r].rank = ranks[r].local_rank = static_cast<int>(r);
  }
  e = error_of([&] {
    map_node(ranks, grids({{level::l3, {2, 1, 1}}, {level::core, {2, 1, 1}}}), rank_order{});
  });
  EXPECT_CONTAINS(e,
                  "core level: grid 2x1x1 needs 2 occupied cores in each L3 cache, but L3 "
                  "cache 0 of node 0 has ranks on 3 (core 0: ranks 0, core 1: ranks 1, core 2: "
                  "ranks 2)");
}

TEST(HwMappingErrors, AbsentAndUnnestedLevels) {
  auto ranks = placements(betzy, binding_policy::core, 1, 4);
  auto e = error_of([&] {
    map_node(ranks, grids({{level::l2, {2, 1, 1}}, {level::core, {2, 1, 1}}}), rank_order{});
  });
  EXPECT_CONTAINS(e, "--l2 2x1x1: the topology has no L2 caches");
  // A 1x1x1 grid of a missing level changes nothing.
  EXPECT_NO_THROW(
      map_node(ranks, grids({{level::l2, {1, 1, 1}}, {level::core, {4, 1, 1}}}), rank_order{}));
  // An L3 holding two NUMA nodes.
  auto odd = placements("synthetic:l3:1 numa:2 core:2 pu:1", binding_policy::core, 1, 4);
  e = error_of([&] {
    map_node(odd,
             grids({{level::numa, {2, 1, 1}}, {level::l3, {1, 1, 1}}, {level::core, {2, 1, 1}}}),
             rank_order{});
  });
  EXPECT_CONTAINS(e, "L3 cache 0 of node 0 holds ranks in NUMA nodes 0 and 1");
  EXPECT_CONTAINS(e, "give only one of --l3 and --numa");
}

TEST(HwMappingErrors, Grids) {
  EXPECT_CONTAINS(error_of([] {
                    grids({{level::core, {0, 1, 1}}});
                  }),
                  "--core 0 1 1: grid entries must be positive");
  EXPECT_CONTAINS(error_of([] {
                    grids({{level::core, {1, 1, 1}}, {level::core, {2, 1, 1}}});
                  }),
                  "--core is given twice");
  auto g = halfcores();
  EXPECT_EQ(g.options(), "--node 3 3 3 --socket 1 1 2 --numa 1 2 2 --l3 2 2 1 --core 2 1 1");
  EXPECT_EQ(g.ranks(), 1728);
  EXPECT_EQ(g.ranks_per_node(), 64);
  EXPECT_EQ(g.nodes(), 27);
}

}  // namespace
}  // namespace halox
