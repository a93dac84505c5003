#include "halox/grid.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/enum_names.hpp"
#include "halox/common/error.hpp"

namespace halox {

long long box::volume() const {
  long long v = 1;
  for (int d = 0; d < 3; ++d) v *= std::max(0, hi[d] - lo[d]);
  return v;
}

bool box::contains(const ivec3& point) const {
  for (int d = 0; d < 3; ++d)
    if (point[d] < lo[d] || point[d] >= hi[d]) return false;
  return true;
}

std::string to_string(const box& b) {
  return fmt::format("[{},{})x[{},{})x[{},{})", b.lo[0], b.hi[0], b.lo[1], b.hi[1], b.lo[2],
                     b.hi[2]);
}

box intersect(const box& a, const box& b) {
  box out;
  for (int d = 0; d < 3; ++d) {
    out.lo[d] = std::max(a.lo[d], b.lo[d]);
    out.hi[d] = std::max(out.lo[d], std::min(a.hi[d], b.hi[d]));
  }
  return out;
}

int halo_widths::max() const {
  return std::max({lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]});
}

int direction_index(const ivec3& d) { return (d[0] + 1) + 3 * (d[1] + 1) + 9 * (d[2] + 1); }

ivec3 direction_of(int index) { return {index % 3 - 1, (index / 3) % 3 - 1, index / 9 - 1}; }

ivec3 opposite(const ivec3& d) { return {-d[0], -d[1], -d[2]}; }

local_grid::local_grid(const ivec3& interior_extent, const halo_widths& widths)
    : interior(interior_extent), halo(widths) {
  for (int d = 0; d < 3; ++d) allocated_[d] = interior[d] + halo.lo[d] + halo.hi[d];
}

ivec3 local_grid::allocated() const { return allocated_; }

size_t local_grid::points() const {
  return static_cast<size_t>(allocated_[0]) * static_cast<size_t>(allocated_[1]) *
         static_cast<size_t>(allocated_[2]);
}

box local_grid::allocated_box() const {
  return {{-halo.lo[0], -halo.lo[1], -halo.lo[2]},
          {interior[0] + halo.hi[0], interior[1] + halo.hi[1], interior[2] + halo.hi[2]}};
}

constexpr auto algorithm_names =
    make_enum_names<algorithm>("algorithm", "standard", "staged", "faces");
static_assert(algorithm_names.names.size() == std::size(all_algorithms));

algorithm parse_algorithm(const std::string& name) { return algorithm_names.parse(name); }

std::string to_string(algorithm a) { return algorithm_names.to_string(a); }

int step_count(algorithm a) { return a == algorithm::staged ? 3 : 1; }

namespace {

// Per dimension: the cells sent toward side s (-1, 0, +1) and received from it.
// `shared` points at each end are held by the neighbour there as well: what it
// needs lies beyond them.
void send_range(const local_grid& g, int dim, int side, int shared, int& lo, int& hi) {
  const int n = g.interior[dim];
  if (side < 0) { lo = shared; hi = shared + g.halo.hi[dim]; }
  else if (side > 0) { lo = n - shared - g.halo.lo[dim]; hi = n - shared; }
  else { lo = 0; hi = n; }
}

void recv_range(const local_grid& g, int dim, int side, int& lo, int& hi) {
  const int n = g.interior[dim];
  if (side < 0) { lo = -g.halo.lo[dim]; hi = 0; }
  else if (side > 0) { lo = n; hi = n + g.halo.hi[dim]; }
  else { lo = 0; hi = n; }
}

halo_region region_for(const local_grid& g, const ivec3& direction, int staged_dim,
                       const neighbour_sides& sides, const ivec3& shared) {
  halo_region r;
  r.direction = direction;
  for (int d = 0; d < 3; ++d) {
    send_range(g, d, direction[d], shared[d], r.send.lo[d], r.send.hi[d]);
    recv_range(g, d, direction[d], r.recv.lo[d], r.recv.hi[d]);
    // Staged: dimensions exchanged in earlier steps travel with their halos.
    // Only across sides with a neighbour: beside an open boundary the earlier
    // step filled nothing, and the halo there stays the code's own.
    if (staged_dim >= 0 && d < staged_dim) {
      r.send.lo[d] = r.recv.lo[d] = sides.lo[d] ? -g.halo.lo[d] : 0;
      r.send.hi[d] = r.recv.hi[d] = g.interior[d] + (sides.hi[d] ? g.halo.hi[d] : 0);
    }
  }
  return r;
}

}  // namespace

std::vector<std::vector<halo_region>> halo_regions(const local_grid& g, algorithm a,
                                                   const neighbour_sides& sides,
                                                   const ivec3& shared) {
  std::vector<std::vector<halo_region>> steps;
  auto keep = [](const halo_region& r) { return !r.send.empty() || !r.recv.empty(); };
  if (a == algorithm::staged) {
    for (int dim = 0; dim < 3; ++dim) {
      std::vector<halo_region> step;
      for (int side : {-1, +1}) {
        ivec3 direction{0, 0, 0};
        direction[dim] = side;
        auto r = region_for(g, direction, dim, sides, shared);
        if (keep(r)) step.push_back(r);
      }
      steps.push_back(step);
    }
    return steps;
  }
  std::vector<halo_region> step;
  for (int i = 0; i < direction_count; ++i) {
    if (i == center_direction) continue;
    ivec3 direction = direction_of(i);
    int nonzero = std::abs(direction[0]) + std::abs(direction[1]) + std::abs(direction[2]);
    if (a == algorithm::faces && nonzero != 1) continue;
    auto r = region_for(g, direction, -1, sides, shared);
    if (keep(r)) step.push_back(r);
  }
  steps.push_back(step);
  return steps;
}

void validate_grid(const local_grid& g) {
  static const char* names = "xyz";
  for (int d = 0; d < 3; ++d) {
    if (g.interior[d] <= 0)
      throw usage_error(fmt::format("sub-domain extent in {} must be positive, got {}", names[d],
                                    g.interior[d]));
    if (g.halo.lo[d] < 0 || g.halo.hi[d] < 0)
      throw usage_error(fmt::format("halo width in {} must not be negative", names[d]));
    int widest = std::max(g.halo.lo[d], g.halo.hi[d]);
    if (widest > g.interior[d])
      throw usage_error(fmt::format(
          "halo width {} in {} is wider than the sub-domain extent {} it is filled from", widest,
          names[d], g.interior[d]));
  }
}

}  // namespace halox
