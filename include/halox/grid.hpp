// Boxes, halo widths and the halo regions of each exchange algorithm.
//
// Reference: a field's array holds an interior of n = (nx, ny, nz) points (a
// cell field's points are its rank's cells; halox/field.hpp), surrounded by a
// halo of widths lo[d] (below) and hi[d] (above) per dimension. Local
// coordinates put the first interior point at (0,0,0); memory is x-fastest over
// the allocated box [-lo, n + hi). For the neighbour in direction
// d in {-1,0,1}^3 a rank sends, per dimension, [0, hi) if d = -1,
// [n - lo, n) if d = +1, [0, n) if d = 0, and receives into [-lo, 0),
// [n, n + hi), [0, n) respectively.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace halox {

using ivec3 = std::array<int, 3>;

struct box {
  ivec3 lo{0, 0, 0};  // first point
  ivec3 hi{0, 0, 0};  // one past the last point
  int extent(int dim) const { return hi[dim] - lo[dim]; }
  long long volume() const;
  bool empty() const { return volume() == 0; }
  bool contains(const ivec3& point) const;
  bool operator==(const box&) const = default;
};
std::string to_string(const box& b);
box intersect(const box& a, const box& b);

struct halo_widths {
  ivec3 lo{0, 0, 0};
  ivec3 hi{0, 0, 0};
  static halo_widths uniform(int width) { return {{width, width, width}, {width, width, width}}; }
  int max() const;
  bool operator==(const halo_widths&) const = default;
};

// The 27 directions, center included, indexed x-fastest: (dx+1) + 3(dy+1) + 9(dz+1).
inline constexpr int direction_count = 27;
inline constexpr int center_direction = 13;
int direction_index(const ivec3& direction);
ivec3 direction_of(int index);
ivec3 opposite(const ivec3& direction);

// The memory layout of one field on one rank, in points.
struct local_grid {
  ivec3 interior{0, 0, 0};
  halo_widths halo{};

  ivec3 allocated() const;
  size_t points() const;  // allocated points
  box interior_box() const { return {{0, 0, 0}, interior}; }
  box allocated_box() const;
  // Linear index of a local point (interior starts at 0, halo points negative).
  size_t index(int x, int y, int z) const {
    return static_cast<size_t>(x + halo.lo[0]) +
           static_cast<size_t>(allocated_[0]) *
               (static_cast<size_t>(y + halo.lo[1]) +
                static_cast<size_t>(allocated_[1]) * static_cast<size_t>(z + halo.lo[2]));
  }
  local_grid() = default;
  local_grid(const ivec3& interior_extent, const halo_widths& widths);

 private:
  ivec3 allocated_{0, 0, 0};
};

enum class algorithm {
  standard,  // one step, a message per each of the 26 neighbours
  staged,    // three steps (x, y, z), 2 messages each; edges and corners travel in 2-3 hops
  faces,     // one step, the 6 face neighbours only (star stencils)
};
// Every algorithm, in the order the programs and reports list them.
inline constexpr algorithm all_algorithms[] = {algorithm::standard, algorithm::staged,
                                               algorithm::faces};
algorithm parse_algorithm(const std::string& name);  // throws usage_error
std::string to_string(algorithm a);
int step_count(algorithm a);

// One neighbour's part of a step: the points sent toward `direction` and the
// halo points received from the neighbour in `direction`.
struct halo_region {
  ivec3 direction{0, 0, 0};
  box send;
  box recv;
};

// Which sides of each dimension have a neighbour (another rank, or this rank
// across a periodic wrap). Beside a side without one (an open boundary) no
// algorithm writes the halo: `staged` then carries an earlier step's halo on
// only across the sides that have a neighbour, so that its edges and corners
// next to an open boundary stay untouched, as `standard` leaves them
// (docs/library.md#one-halo-content-whatever-the-algorithm).
struct neighbour_sides {
  std::array<bool, 3> lo{true, true, true};
  std::array<bool, 3> hi{true, true, true};
};

// The regions of every step of an algorithm, in step order. `shared`: along
// each axis, the points at each end of the interior that the neighbour there
// holds too and keeps (not sent; field.hpp, shared_points::kept).
std::vector<std::vector<halo_region>> halo_regions(const local_grid& grid, algorithm a,
                                                   const neighbour_sides& sides = {},
                                                   const ivec3& shared = {0, 0, 0});

// Throws usage_error when a halo is wider than the interior it is filled from.
void validate_grid(const local_grid& grid);

}  // namespace halox
