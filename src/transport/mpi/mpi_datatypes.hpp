// MPI derived datatypes over halo boxes, shared by the transports that let
// the MPI library read and write the field memory in place.
//
// Reference: a box b of a field laid out as `grid` (x fastest over the
// allocated box [-lo, n + hi)) is the subarray of sizes grid.allocated(),
// subsizes extent(b), starts b.lo + lo, in Fortran order.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <map>
#include <vector>

#include "halox/extend/plan.hpp"

namespace halox {

// MPI_FLOAT or MPI_DOUBLE.
MPI_Datatype mpi_element_type(size_t element_bytes);

// One box of one field, relative to the field's first allocated cell (committed).
MPI_Datatype make_box_type(const box& region, const local_grid& grid, MPI_Datatype element);

// All boxes of a message at absolute addresses, for MPI_BOTTOM (committed),
// each field laid out as the plan says (its own grid and element type).
MPI_Datatype make_boxes_type(const std::vector<field_box>& boxes, const exchange_plan& plan,
                             const std::vector<std::byte*>& fields);

// The boxes of a message by the direction they go toward (sends) or come
// from (receives), in the message's order: one MPI message per direction.
std::map<int, std::vector<field_box>> by_direction(const message& m);

}  // namespace halox
