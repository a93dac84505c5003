// What an exchange moves per rank: lets a decomposition weigh placements.
#pragma once

#include <cstddef>

#include "halox/grid.hpp"

namespace halox {

struct exchange_shape {
  ivec3 domain_per_rank{64, 64, 64};
  halo_widths halo = halo_widths::uniform(1);
  int nfields = 1;
  size_t element_size = 8;
  algorithm alg = algorithm::standard;
};

}  // namespace halox
