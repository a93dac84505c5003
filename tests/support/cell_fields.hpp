// The plan request most plan and transport tests make: fields of cells alike.
#pragma once

#include <cstddef>
#include <vector>

#include "halox/field.hpp"
#include "halox/extend/plan.hpp"

namespace halox::testing_support {

// `count` fields of cells alike on `grid`, each exchanging its whole halo.
inline std::vector<field_layout> cell_layouts(const local_grid& grid, size_t element_bytes,
                                              size_t count) {
  return std::vector<field_layout>(count,
                                   field_layout{grid, element_bytes, location::cell, grid.halo});
}

// `count` fields of cells of `element_bytes` on `grid`, each exchanging its
// whole halo; what else a request holds is its default (all fields moved, in
// messages as the grouping groups them).
inline plan_request cell_fields(const local_grid& grid, size_t count, size_t element_bytes,
                                algorithm alg, field_grouping grouping = field_grouping::compact) {
  plan_request request;
  request.layouts = cell_layouts(grid, element_bytes, count);
  request.alg = alg;
  request.grouping = grouping;
  return request;
}

}  // namespace halox::testing_support
