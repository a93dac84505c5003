// What the MPI tests ask of the world they run in, and the conventions of
// halox/field.hpp written out again, so that a checker does not ask the library.
#pragma once

#include <mpi.h>

#include "halox/field.hpp"

namespace halox::testing_support {

inline int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// 1 along the axes on which a location's points sit on the cells' faces.
inline ivec3 staggered(location at) {
  switch (at) {
    case location::x_face: return {1, 0, 0};
    case location::y_face: return {0, 1, 0};
    case location::z_face: return {0, 0, 1};
    case location::x_edge: return {0, 1, 1};
    case location::y_edge: return {1, 0, 1};
    case location::z_edge: return {1, 1, 0};
    case location::vertex: return {1, 1, 1};
    default: return {0, 0, 0};
  }
}

}  // namespace halox::testing_support
