// The staggered geometry that needs no decomposition (halox/field.hpp): the
// axes each location staggers along, the halo widths a call fills, and how a
// field whose shared points are kept is seen, each against the conventions
// written out point by point here.
#include <gtest/gtest.h>

#include "halox/field.hpp"
#include "halox/common/error.hpp"

namespace {

using halox::halo_widths;
using halox::ivec3;
using halox::location;

// The location's name says where its points sit: a face normal to an axis
// staggers along it, an edge along an axis staggers along the other two.
ivec3 axes_from_the_name(location at) {
  const std::string name = halox::to_string(at);
  if (name == "cell") return {0, 0, 0};
  if (name == "vertex") return {1, 1, 1};
  const int axis = name[0] - 'x';
  ivec3 s{0, 0, 0};
  for (int k = 0; k < 3; ++k)
    s[k] = name.substr(2) == "face" ? (k == axis ? 1 : 0) : (k == axis ? 0 : 1);
  return s;
}

halox::field_layout layout(location at, const ivec3& points, const halo_widths& halo,
                           halox::shared_points shared = halox::shared_points::from_owner) {
  return {halox::local_grid(points, halo), 8, at, halo, shared};
}

TEST(Field, EveryLocationStaggersAlongTheAxesItsNameSays) {
  for (location at : halox::all_locations) {
    EXPECT_EQ(halox::staggered_axes(at), axes_from_the_name(at)) << halox::to_string(at);
    EXPECT_EQ(halox::parse_location(halox::to_string(at)), at);
  }
  // The old name of the vertex location names the ranks that share memory only.
  EXPECT_THROW(halox::parse_location("node"), halox::usage_error);
}

TEST(Field, ACallAtDepthDFillsDBelowAndDPlusTheSharedFaceAbove) {
  const halo_widths halo{{2, 1, 3}, {3, 2, 1}};
  for (location at : halox::all_locations)
    for (int depth = 0; depth <= 4; ++depth) {
      const auto filled = halox::filled_widths(layout(at, {6, 5, 4}, halo), depth);
      const ivec3 s = axes_from_the_name(at);
      for (int k = 0; k < 3; ++k) {
        const int below = depth == 0 ? halo.lo[k] : std::min(depth, halo.lo[k]);
        const int above = depth == 0 ? halo.hi[k] : std::min(depth + s[k], halo.hi[k]);
        EXPECT_EQ(filled.lo[k], below) << halox::to_string(at) << " depth " << depth;
        EXPECT_EQ(filled.hi[k], above) << halox::to_string(at) << " depth " << depth;
      }
    }
}

TEST(Field, KeptSharedFacesAreHeldPointsOfTheRankBelow) {
  const halo_widths halo{{2, 2, 2}, {3, 3, 3}};
  const ivec3 points{6, 5, 4};
  for (location at : halox::all_locations)
    for (bool above : {true, false}) {
      halox::neighbour_sides sides;
      sides.hi = {above, true, above};
      const auto kept = layout(at, points, halo, halox::shared_points::kept);
      const auto view = halox::holder_view(kept, sides);
      const ivec3 s = axes_from_the_name(at);
      EXPECT_EQ(halox::kept_shared_points(kept), s);
      EXPECT_EQ(halox::kept_shared_points(layout(at, points, halo)), (ivec3{0, 0, 0}));
      for (int k = 0; k < 3; ++k) {
        // Along a staggered axis with a neighbour above, the shared face (point n) is held.
        const int moved_up = s[k] && sides.hi[static_cast<size_t>(k)] ? 1 : 0;
        EXPECT_EQ(view.grid.interior[k], points[k] + moved_up) << halox::to_string(at) << k;
        EXPECT_EQ(view.grid.halo.hi[k], halo.hi[k] - moved_up);
        EXPECT_EQ(view.grid.halo.lo[k], halo.lo[k]);
        EXPECT_EQ(view.exchanged.hi[k], halo.hi[k] - s[k]);  // the points beyond the face
      }
      // The same memory: the first allocated point and the extents do not move.
      EXPECT_EQ(view.grid.allocated(), kept.grid.allocated());
      EXPECT_EQ(view.grid.index(0, 0, 0), kept.grid.index(0, 0, 0));
    }
  EXPECT_EQ(halox::parse_shared_points("kept"), halox::shared_points::kept);
  EXPECT_EQ(halox::to_string(halox::shared_points::from_owner), "from_owner");
  EXPECT_THROW(halox::parse_shared_points("mine"), halox::usage_error);
}

}  // namespace
