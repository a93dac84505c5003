// Fields as codes hold them: a location on the cell grid, halo widths and an
// element type of their own (the conventions of PETSc's DMStag).
//
// Reference: along each axis a field's points sit either at the cells' centres
// or on their faces ("staggered" along that axis). A location is staggered
// along the axes staggered_axes() names: x_face (u on an Arakawa C grid) along
// x, x_edge (an edge running along x) along y and z, vertex (a cell corner: a
// finite-element code's node) along all three.
// Point i of a staggered axis lies on the face between cells i-1 and i.
//
//   cells       |  0  |  1  |  2  |  3  |        rank A: cells 0-1, rank B: cells 2-3
//   points      0     1     2     3     4        (open axis: 5 points for 4 cells)
//   owner       A     A     B     B     B        B owns point 2, on the face A|B,
//                                                and point 4, the domain's high face
//
// A rank that owns cells [c, c + n) owns the points [c, c + n) of a staggered
// axis: the face between two ranks belongs to the rank above it, and the rank
// below receives it as the first point of its high halo. Along an open (not
// periodic) axis the rank at the high end also owns the domain's last face, so
// it holds n + 1 points; along a periodic axis there are as many points as
// cells. Local index 0 is the first owned point, as for cells.
//
// Halos are in points, per side, as the code allocated them. A call at depth d
// fills, on each side, the points within d cells of the sub-domain that
// another rank owns, as far as the field's allocation reaches: d points below,
// and above d points for a cell axis or d + 1 for a staggered one (the shared
// face and the d beyond it). A code that allocates CloverLeaf's extents (cells
// x_min-2:x_max+2, vertices x_min-2:x_max+3) gets every point it allocated;
// one that allocates DMStag's (d points each side) gets d. Halo widths agree
// on every rank on each side where it has a neighbour; at an open boundary a
// rank may allocate otherwise (CloverLeaf's last chunk has one point less
// above its n + 1 vertices).
//
// A field's shared points (the faces between two ranks along its staggered
// axes) are held by both ranks. By default a call sends the owner's values to
// the other holder (shared_points::from_owner). A code that computes the
// shared face on both sides, as CloverLeaf does, can keep each holder's own
// values (shared_points::kept): a call at depth d then moves only the d points
// beyond the shared face, on each side; the rank below needs a halo of at
// least one point above to hold its copy of the face.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/grid.hpp"

namespace halox {

enum class element_type { f32, f64 };
element_type parse_element_type(const std::string& name);  // "float" | "double"
std::string to_string(element_type t);
size_t element_size(element_type t);

enum class location { cell, x_face, y_face, z_face, x_edge, y_edge, z_edge, vertex };
inline constexpr location all_locations[] = {location::cell,   location::x_face, location::y_face,
                                              location::z_face, location::x_edge, location::y_edge,
                                              location::z_edge, location::vertex};
location parse_location(const std::string& name);  // throws usage_error
std::string to_string(location at);
// 1 along the axes whose points sit on the cells' faces, 0 along the others.
ivec3 staggered_axes(location at);

// How an exchange groups its fields into messages.
enum class field_grouping {
  compact,   // all fields of a neighbour travel in one message
  sequence,  // the fields are exchanged one after another
  cache,     // blocks of fields whose halo traffic fits the L2 cache, one after another
};
// Every field grouping, in the order the programs and reports list them.
inline constexpr field_grouping all_field_groupings[] = {
    field_grouping::compact, field_grouping::sequence, field_grouping::cache};
field_grouping parse_field_grouping(const std::string& name);  // throws usage_error
std::string to_string(field_grouping g);

enum class shared_points { from_owner, kept };
inline constexpr shared_points all_shared_points[] = {shared_points::from_owner,
                                                      shared_points::kept};
shared_points parse_shared_points(const std::string& name);  // "from_owner" | "kept"
std::string to_string(shared_points s);

// One field of a code, as handed to halo_exchange: its first allocated point,
// laid out x-fastest over the points this rank holds plus its halo.
struct field {
  void* data = nullptr;
  element_type type = element_type::f64;
  location at = location::cell;
  halo_widths halo{};  // allocated, in points
  std::string name{};  // names it in errors and in subset calls; empty: "field <index>"
  shared_points shared = shared_points::from_owner;  // the faces it shares with its neighbours
};

// Fields of cells alike on `grid`, one per pointer: what a code that keeps
// every field on one grid hands to halo_exchange.
std::vector<field> cell_fields(const local_grid& grid, element_type type,
                               const std::vector<void*>& data);

// The points of a field at `at` that this rank holds, for `cells` owned cells
// (one more along a staggered open axis at the domain's high end).
ivec3 field_points(const decomposition& d, const ivec3& cells, location at);

// How one field lies in memory on this rank, as the plan and the transports see it.
struct field_layout {
  local_grid grid;  // the points held (interior) and the allocated halo
  size_t element_bytes = 8;
  location at = location::cell;
  // The halo widths the ranks exchange, agreed by all: the allocated ones,
  // except on a side where this rank has no neighbour, whose halo nobody
  // writes (CloverLeaf's vertex arrays end at x_max+3 on every chunk, so the
  // chunk at the high end of an open axis, one point longer, has one less above).
  halo_widths exchanged{};
  shared_points shared = shared_points::from_owner;
  bool operator==(const field_layout& o) const {
    return grid.interior == o.grid.interior && grid.halo == o.grid.halo &&
           element_bytes == o.element_bytes && at == o.at && exchanged == o.exchanged &&
           shared == o.shared;
  }
};

field_layout layout_of(const decomposition& d, const ivec3& cells, const field& f);


// The points held by both a rank and its neighbours along each axis (1 along
// the staggered axes of a field whose shared points are kept, 0 otherwise).
ivec3 kept_shared_points(const field_layout& layout);

// How the forward calls see a field whose shared points are kept: the shared
// face above is one of the points this rank holds (interior one longer where
// it has a neighbour above, the halo above one shorter). The same memory.
field_layout holder_view(const field_layout& layout, const neighbour_sides& sides);

// The halo widths a call at `depth` fills for a field (0: all it exchanges).
halo_widths filled_widths(const field_layout& layout, int depth);

}  // namespace halox
