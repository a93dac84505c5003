// Pack / unpack kernels: boxes of x-fastest fields <-> a contiguous buffer.
//
// Reference algorithm (what every kernel below must equal):
//   for each (field f, box b) in order:
//     for z in b.z: for y in b.y: for x in b.x:
//       buffer[i++] = field[f][grid.index(x, y, z)]
// The kernels copy whole x-runs, merge runs into planes or blocks when a box
// spans the allocated extent, and use fixed-size moves for short runs so that
// a halo of width 1..8 does not pay a memcpy call per cell.
#pragma once

#include <cstddef>
#include <span>

#include "halox/grid.hpp"
#include "halox/plan.hpp"

namespace halox {

// Bytes of a list of field boxes.
size_t packed_bytes(std::span<const field_box> boxes, size_t element_bytes);

// fields[f] is the first allocated cell (the corner of the halo) of field f.
size_t pack(std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
            const local_grid& grid, size_t element_bytes);
size_t unpack(const std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
              const local_grid& grid, size_t element_bytes);
// Copies one box of a field laid out as `from_grid` into a box of the same
// extents in a field laid out as `to_grid` (e.g. a neighbour's field mapped
// into this process).
void copy_box_between(const std::byte* from_field, const local_grid& from_grid, const box& from,
                      std::byte* to_field, const local_grid& to_grid, const box& to,
                      size_t element_bytes);
// Copies from[i] to to[i] (same extents) without a buffer.
void copy_boxes(std::span<const field_box> from, std::span<const field_box> to,
                std::byte* const* fields, const local_grid& grid, size_t element_bytes);

}  // namespace halox
