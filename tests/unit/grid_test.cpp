#include <gtest/gtest.h>

#include <map>

#include "halox/grid.hpp"

using namespace halox;

namespace {

// How often each halo cell is received over all steps, and whether steps
// only read cells that are final by then.
std::map<std::array<int, 3>, int> coverage(const local_grid& g, algorithm a) {
  std::map<std::array<int, 3>, int> hits;
  for (const auto& step : halo_regions(g, a))
    for (const auto& r : step)
      for (int z = r.recv.lo[2]; z < r.recv.hi[2]; ++z)
        for (int y = r.recv.lo[1]; y < r.recv.hi[1]; ++y)
          for (int x = r.recv.lo[0]; x < r.recv.hi[0]; ++x) ++hits[{x, y, z}];
  return hits;
}

int outside_dims(const local_grid& g, int x, int y, int z) {
  int c[3] = {x, y, z}, n = 0;
  for (int d = 0; d < 3; ++d) n += (c[d] < 0 || c[d] >= g.interior[d]);
  return n;
}

struct grid_case {
  ivec3 interior;
  halo_widths halo;
};

class RegionTiling : public testing::TestWithParam<grid_case> {};

TEST_P(RegionTiling, EveryAlgorithmCoversTheShellExactlyOnce) {
  local_grid g(GetParam().interior, GetParam().halo);
  for (auto a : {algorithm::standard, algorithm::staged, algorithm::faces}) {
    auto hits = coverage(g, a);
    box all = g.allocated_box();
    for (int z = all.lo[2]; z < all.hi[2]; ++z)
      for (int y = all.lo[1]; y < all.hi[1]; ++y)
        for (int x = all.lo[0]; x < all.hi[0]; ++x) {
          int outside = outside_dims(g, x, y, z);
          int expected = outside == 0 ? 0 : (a == algorithm::faces && outside > 1 ? 0 : 1);
          auto it = hits.find({x, y, z});
          int got = it == hits.end() ? 0 : it->second;
          ASSERT_EQ(got, expected) << to_string(a) << " cell " << x << "," << y << "," << z;
        }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RegionTiling,
    testing::Values(grid_case{{4, 4, 4}, halo_widths::uniform(1)},
                    grid_case{{5, 3, 7}, halo_widths::uniform(2)},
                    grid_case{{3, 3, 3}, halo_widths::uniform(3)},
                    grid_case{{6, 4, 5}, {{1, 0, 2}, {2, 1, 0}}},
                    grid_case{{1, 1, 1}, halo_widths::uniform(1)}));

TEST(Regions, SendAndReceiveBoxesMatchTheOppositeNeighbour) {
  local_grid g({6, 5, 4}, {{1, 2, 3}, {2, 1, 1}});
  for (auto a : {algorithm::standard, algorithm::staged, algorithm::faces})
    for (const auto& step : halo_regions(g, a))
      for (const auto& r : step)
        for (const auto& other : step)
          if (other.direction == opposite(r.direction)) {
            EXPECT_EQ(r.send.volume(), other.recv.volume()) << to_string(a);
          }
}

TEST(Regions, StagedHasThreeStepsOfTwoMessages) {
  local_grid g({8, 8, 8}, halo_widths::uniform(2));
  auto steps = halo_regions(g, algorithm::staged);
  ASSERT_EQ(steps.size(), 3u);
  for (const auto& s : steps) EXPECT_EQ(s.size(), 2u);
  // The z slab spans x and y including their halos.
  EXPECT_EQ(steps[2][0].send.extent(0), 12);
  EXPECT_EQ(steps[2][0].send.extent(1), 12);
  EXPECT_EQ(steps[2][0].send.extent(2), 2);
  EXPECT_EQ(halo_regions(g, algorithm::standard)[0].size(), 26u);
  EXPECT_EQ(halo_regions(g, algorithm::faces)[0].size(), 6u);
}

TEST(Regions, DirectionIndexRoundTrips) {
  for (int i = 0; i < direction_count; ++i) EXPECT_EQ(direction_index(direction_of(i)), i);
  EXPECT_EQ(direction_index({0, 0, 0}), center_direction);
}

TEST(Grid, IndexIsXFastestFromTheHaloCorner) {
  local_grid g({4, 3, 2}, halo_widths::uniform(1));
  EXPECT_EQ(g.index(-1, -1, -1), 0u);
  EXPECT_EQ(g.index(0, -1, -1), 1u);
  EXPECT_EQ(g.index(-1, 0, -1), 6u);
  EXPECT_EQ(g.index(-1, -1, 0), 30u);
  EXPECT_EQ(g.points(), 6u * 5u * 4u);
}

TEST(Grid, HaloWiderThanTheInteriorIsRejected) {
  EXPECT_THROW(validate_grid(local_grid({4, 4, 4}, halo_widths::uniform(5))), std::exception);
  EXPECT_NO_THROW(validate_grid(local_grid({4, 4, 4}, halo_widths::uniform(4))));
  EXPECT_THROW(validate_grid(local_grid({0, 4, 4}, halo_widths::uniform(0))), std::exception);
}

}  // namespace
