// Command-line options that choose a decomposition, shared by the apps.
//
//   cart: --mpicart NX NY NZ (MPI_Dims_create / MPI_Cart_create), the default
//   hw:   per-level grids --node --socket --numa --l3 --l2 --l1 --core --hwthread
//         (--slot: ranks of a node by their rank on it) and --order
//   auto: the level grids chosen from the topology and the exchange (see
//         auto.hpp), for the global grid of --mpicart (default MPI_Dims_create)
// Where ranks sit: --topology (this machine, XML, "synthetic:..."),
// --assume-binding, and --ranks-per-node / HALOX_RANKS_PER_NODE node groups.
#pragma once

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <array>
#include <string>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/programs/decomposition/hw.hpp"
#include "halox/programs/decomposition/shape.hpp"
#include "halox/grid.hpp"
#include "halox/extend/topology.hpp"

namespace halox {

struct decomposition_options {
  std::vector<int> mpicart;            // NX NY NZ, 0 = let MPI_Dims_create choose
  std::vector<int> periodic{1, 1, 1};  // per dimension
  bool reorder = false;                // MPI_Cart_create reorder flag
  std::string kind;  // cart | hw | auto; "" = hw if a level grid is given, else cart
  std::array<std::vector<int>, level_count> level_grids;  // indexed by index_of(level)
  std::string order;                                      // hw/auto numbering order, "" = XYZ
  int ranks_per_node = 0;  // node groups; 0 = shared-memory nodes / HALOX_RANKS_PER_NODE
  std::string topology;    // "" = this machine
  std::string binding;     // "" = real on this machine, spread otherwise
  bool print = false;      // print the layout and exit
};

void add_decomposition_options(CLI::App& app, decomposition_options& options);

// The decomposition kind the options ask for; throws usage_error for
// contradicting options (identical on all ranks).
std::string decomposition_kind(const decomposition_options& options);
hw_grids level_grids_of(const decomposition_options& options);  // the hw grids given
placement_options placement_of(const decomposition_options& options);
rank_order order_of(const decomposition_options& options);
std::array<bool, 3> periodic_of(const decomposition_options& options);
// The global rank grid for cart and auto: --mpicart with 0 entries (or none)
// filled in by MPI_Dims_create. Throws usage_error when it cannot fit.
ivec3 global_rank_grid(const std::vector<int>& mpicart, int ranks);

// Collective over world. Checks everything before communicating; throws
// usage_error identically on all ranks for impossible requests.
decomposition build_decomposition(MPI_Comm world, const decomposition_options& options,
                                  const exchange_shape& shape);

// Collective over world: the layout of d as text on rank 0 (empty elsewhere):
// the grids (and for auto the reasons), per level the 3-D grid of object
// numbers, then decomposition rank, world rank, node and core of every rank,
// and the bytes per exchange by domain.
std::string describe_layout(MPI_Comm world, const decomposition_options& options,
                            const exchange_shape& shape, const decomposition& d);

// The per-level grids of a 3-D grid as text: z slices top-down, y rows top-down,
// x left to right (as hwcart prints them). value[r] belongs to the rank at coords[r].
std::string grid_picture(const ivec3& dims, const std::vector<ivec3>& coords,
                         const std::vector<int>& value);

}  // namespace halox
