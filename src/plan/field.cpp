#include "halox/field.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/enum_names.hpp"
#include "halox/common/error.hpp"

namespace halox {

element_type parse_element_type(const std::string& name) {
  if (name == "float" || name == "f32") return element_type::f32;
  if (name == "double" || name == "f64") return element_type::f64;
  throw usage_error(fmt::format("unknown type '{}' (expected float or double)", name));
}

std::string to_string(element_type t) { return t == element_type::f32 ? "float" : "double"; }

size_t element_size(element_type t) { return t == element_type::f32 ? 4 : 8; }

constexpr auto location_names = make_enum_names<location>(
    "location", "cell", "x_face", "y_face", "z_face", "x_edge", "y_edge", "z_edge", "vertex");
static_assert(location_names.names.size() == std::size(all_locations));

location parse_location(const std::string& name) { return location_names.parse(name); }

std::string to_string(location at) { return location_names.to_string(at); }

constexpr auto grouping_names =
    make_enum_names<field_grouping>("field grouping", "compact", "sequence", "cache");
static_assert(grouping_names.names.size() == std::size(all_field_groupings));

field_grouping parse_field_grouping(const std::string& name) {
  return grouping_names.parse(name);
}

std::string to_string(field_grouping g) {
  return grouping_names.to_string(g);
}

ivec3 staggered_axes(location at) {
  switch (at) {
    case location::cell: return {0, 0, 0};
    case location::x_face: return {1, 0, 0};
    case location::y_face: return {0, 1, 0};
    case location::z_face: return {0, 0, 1};
    case location::x_edge: return {0, 1, 1};
    case location::y_edge: return {1, 0, 1};
    case location::z_edge: return {1, 1, 0};
    case location::vertex: return {1, 1, 1};
  }
  return {0, 0, 0};
}

constexpr auto shared_points_names =
    make_enum_names<shared_points>("shared points", "from_owner", "kept");
static_assert(shared_points_names.names.size() == std::size(all_shared_points));

shared_points parse_shared_points(const std::string& name) {
  return shared_points_names.parse(name);
}

std::string to_string(shared_points s) { return shared_points_names.to_string(s); }

ivec3 field_points(const decomposition& d, const ivec3& cells, location at) {
  const ivec3 staggered = staggered_axes(at);
  ivec3 points = cells;
  for (int dim = 0; dim < 3; ++dim)
    if (staggered[dim] && !d.periodic()[dim] && d.coords()[dim] == d.dims()[dim] - 1)
      ++points[dim];
  return points;
}

std::vector<field> cell_fields(const local_grid& grid, element_type type,
                               const std::vector<void*>& data) {
  std::vector<field> fields;
  for (void* d : data) fields.push_back({d, type, location::cell, grid.halo});
  return fields;
}

field_layout layout_of(const decomposition& d, const ivec3& cells, const field& f) {
  return {local_grid(field_points(d, cells, f.at), f.halo), element_size(f.type), f.at, f.halo,
          f.shared};
}

ivec3 kept_shared_points(const field_layout& layout) {
  return layout.shared == shared_points::kept ? staggered_axes(layout.at) : ivec3{0, 0, 0};
}

field_layout holder_view(const field_layout& layout, const neighbour_sides& sides) {
  const ivec3 kept = kept_shared_points(layout);
  field_layout view = layout;
  ivec3 interior = layout.grid.interior;
  halo_widths halo = layout.grid.halo;
  for (int dim = 0; dim < 3; ++dim) {
    if (!kept[dim]) continue;
    // The width every rank agreed on counts the shared face: a point less beyond it. A rank
    // with no neighbour above (the high end of an open axis) holds its last face anyway.
    view.exchanged.hi[dim] = std::max(view.exchanged.hi[dim] - 1, 0);
    if (sides.hi[static_cast<size_t>(dim)] && halo.hi[dim] > 0) {
      ++interior[dim];
      --halo.hi[dim];
    }
  }
  view.grid = local_grid(interior, halo);
  return view;
}

halo_widths filled_widths(const field_layout& layout, int depth) {
  halo_widths w = layout.exchanged;
  if (depth <= 0) return w;
  const ivec3 staggered = staggered_axes(layout.at);
  for (int dim = 0; dim < 3; ++dim) {
    w.lo[dim] = std::min(w.lo[dim], depth);
    w.hi[dim] = std::min(w.hi[dim], depth + staggered[dim]);
  }
  return w;
}

}  // namespace halox
