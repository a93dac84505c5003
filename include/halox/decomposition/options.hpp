// Command-line options that choose a decomposition, shared by the apps.
#pragma once

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <vector>

#include "halox/decomposition.hpp"
#include "halox/grid.hpp"

namespace halox {

struct decomposition_options {
  std::vector<int> mpicart;            // NX NY NZ, 0 = let MPI_Dims_create choose
  std::vector<int> periodic{1, 1, 1};  // per dimension
  bool reorder = false;                // MPI_Cart_create reorder flag
};

// What the exchange will move: lets a decomposition weigh placements.
struct exchange_shape {
  ivec3 domain_per_rank{64, 64, 64};
  halo_widths halo = halo_widths::uniform(1);
  int nfields = 1;
  size_t element_size = 8;
  algorithm alg = algorithm::standard;
};

void add_decomposition_options(CLI::App& app, decomposition_options& options);

// Collective over world. Checks everything before communicating; throws
// usage_error identically on all ranks for impossible requests.
decomposition build_decomposition(MPI_Comm world, const decomposition_options& options,
                                  const exchange_shape& shape);

}  // namespace halox
