// The staggered mini-app's time step and its digest (fields.hpp: the fields).
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <vector>

#include "fields.hpp"

namespace hydro {

// Where a rank's points sit in the global grid, and whether a point lies on
// an open boundary (it keeps its value: walls).
struct geometry {
  ivec3 offset, global;
  std::array<bool, 3> periodic;
  bool on_open_boundary(const field3d& f, int x, int y, int z) const {
    const ivec3 s = halox::staggered_axes(f.at), p{x, y, z};
    for (int k = 0; k < 3; ++k)
      if (s[k] && !periodic[static_cast<size_t>(k)]) {
        const int g = offset[k] + p[k];
        if (g == 0 || g == global[k]) return true;
      }
    return false;
  }
};

void initial_state(std::vector<field3d>& f, const geometry& g);
// One step: four halo updates of different subsets, at depths 2 and 1.
void step(std::vector<field3d>& f, const geometry& g, halo_updater& halos);
// An exact digest of every owned point, independent of how the points are
// split over ranks: sums of the values' bit patterns weighted by global index.
uint64_t digest(const std::vector<field3d>& f, const geometry& g, MPI_Comm comm);

}  // namespace hydro
