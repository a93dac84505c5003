// --decomposition auto: node shapes and the choice of grids.
#include "halox/programs/decomposition/auto.hpp"

#include <gtest/gtest.h>

#include "halox/common/error.hpp"
#include "betzy_topology.hpp"

namespace halox {
namespace {


std::vector<rank_placement> one_node(const std::string& source, binding_policy policy, int n) {
  return assumed_placements(topology::load(source), policy, 1, n);
}

using counts = std::vector<std::pair<level, int>>;

TEST(AutoShape, BetzyNodes) {
  auto half = shape_of_node(one_node(betzy, binding_policy::spread, 64));
  EXPECT_EQ(half.levels, (counts{{level::hwthread, 1},
                                 {level::core, 2},
                                 {level::l3, 4},
                                 {level::numa, 4},
                                 {level::socket, 2}}));
  EXPECT_TRUE(half.notes.empty());
  auto all = shape_of_node(one_node(betzy, binding_policy::core, 128));
  EXPECT_EQ(all.levels[1], (std::pair<level, int>{level::core, 4}));
  // One rank per node: nothing below the node.
  EXPECT_TRUE(shape_of_node(one_node(betzy, binding_policy::core, 1)).levels.empty());
}

TEST(AutoShape, UnboundOverlappingOrUnevenRanksUseSlots) {
  auto ranks = one_node("synthetic:core:4 pu:1", binding_policy::core, 4);
  auto unbound = ranks;
  for (auto& p : unbound) p.unbound = true;
  auto s = shape_of_node(unbound);
  EXPECT_EQ(s.levels, (counts{{level::slot, 4}}));
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("not bound"), std::string::npos);
  auto overlapping = ranks;
  overlapping[1].pus = overlapping[0].pus;
  EXPECT_EQ(shape_of_node(overlapping).levels, (counts{{level::slot, 4}}));
  // Three ranks on two L3 caches (2 + 1): the L3 level is uneven.
  auto uneven = one_node("synthetic:l3:2 core:2 pu:1", binding_policy::core, 3);
  auto u = shape_of_node(uneven);
  EXPECT_EQ(u.levels, (counts{{level::slot, 3}}));
  EXPECT_FALSE(u.notes.empty());
}

TEST(AutoChoice, BetzyHalfcoresBeatsTheSeedsGrids) {
  auto shape = shape_of_node(one_node(betzy, binding_policy::spread, 64));
  exchange_shape xs;
  xs.element_size = 4;
  const std::array<bool, 3> periodic{true, true, true};
  auto choice = choose_auto(shape, 27, {12, 12, 12}, xs, periodic, rank_order{});
  EXPECT_EQ(choice.grids.dims(), (ivec3{12, 12, 12}));
  EXPECT_EQ(choice.grids.find(level::node)->dims, (ivec3{3, 3, 3}));
  ASSERT_FALSE(choice.best.empty());
  for (size_t i = 1; i < choice.best.size(); ++i)
    EXPECT_LE(choice.best[i - 1].score, choice.best[i].score);
  auto seeds = hw_grids::make({{level::node, {3, 3, 3}},
                               {level::socket, {1, 1, 2}},
                               {level::numa, {1, 2, 2}},
                               {level::l3, {2, 2, 1}},
                               {level::core, {2, 1, 1}},
                               {level::hwthread, {1, 1, 1}}});
  auto seeds_bytes = predicted_traffic(seeds, messages_per_rank(xs), periodic);
  EXPECT_LE(choice.best.front().score, weighted_score(seeds_bytes));
  EXPECT_LE(choice.best.front().bytes[static_cast<size_t>(boundary::node)],
            seeds_bytes[static_cast<size_t>(boundary::node)]);
  EXPECT_NE(choice.explain().find("auto: chosen --node 3 3 3"), std::string::npos)
      << choice.explain();
}

TEST(AutoChoice, OrderDoesNotChangeTheChoice) {
  auto shape = shape_of_node(one_node(betzy, binding_policy::core, 128));
  exchange_shape xs;
  auto a = choose_auto(shape, 2, {8, 8, 4}, xs, {true, true, true}, rank_order::parse("XYZ"));
  auto b = choose_auto(shape, 2, {8, 8, 4}, xs, {true, true, true}, rank_order::parse("ZYX"));
  EXPECT_EQ(a.grids.options(true), b.grids.options(true));
  EXPECT_EQ(a.best.front().bytes, b.best.front().bytes);
}

TEST(AutoChoice, Errors) {
  node_shape shape;
  shape.levels = {{level::core, 4}};
  exchange_shape xs;
  // 2 nodes x 4 ranks do not fill a 3x3x1 grid.
  try {
    choose_auto(shape, 2, {3, 3, 1}, xs, {true, true, true}, rank_order{});
    ADD_FAILURE() << "no error";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("2 nodes x 4 ranks per node do not fill the 3x3x1 grid"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace halox
