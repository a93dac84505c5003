// A staggered stencil code using halox: a small 3-D compressible-flow step in
// CloverLeaf's shape. Cell fields (density, energy, pressure, viscosity,
// sound speed), vertex velocities and face fluxes; within a step, halo updates
// of different subsets at depths 2 and 1, as CloverLeaf's update_halo calls:
//
//   {density, energy} at depth 2 -> pressure, viscosity, sound speed
//   {pressure, viscosity, soundspeed} at depth 1 -> vertex velocities
//   {xvel, yvel, zvel} at depth 1 -> face volume and mass fluxes (2nd order)
//   {the six fluxes} at depth 1 -> density and energy advected
//
//   mpiexec -n 4 halox-example-hydro3d [key=value ...]
//     global=N (24) steps=S (5) periodic=XYZ (111) exchange=halox|plain
//     transport=NAME (mpi-p2p) algorithm=NAME (staged) order=XYZ|ZYX (ZYX)
//
// Prints a digest of the final state that depends on neither the number of
// ranks nor the exchange (the tests compare 1 rank with several, and halox
// with the plain-MPI exchange written the way CloverLeaf's is).
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "fields.hpp"
#include "step.hpp"
#include "halox/common/error.hpp"

namespace {

using hydro::field3d;
using halox::ivec3;

struct app_options {
  int global = 24, steps = 5;
  std::array<bool, 3> periodic{true, true, true};
  std::string exchange = "halox", transport = "mpi-p2p", algorithm = "staged", order = "ZYX";
};

app_options parse(int argc, char** argv) {
  app_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto [key, value] = hydro::split_argument(arg);
    if (key == "global") o.global = std::stoi(value);
    else if (key == "steps") o.steps = std::stoi(value);
    else if (key == "periodic" && value.size() == 3)
      for (int k = 0; k < 3; ++k) o.periodic[static_cast<size_t>(k)] = value[static_cast<size_t>(k)] == '1';
    else if (key == "exchange") o.exchange = value;
    else if (key == "transport") o.transport = value;
    else if (key == "algorithm") o.algorithm = value;
    else if (key == "order") o.order = value;
    else throw halox::usage_error("unknown argument '" + arg + "'");
  }
  if (o.exchange != "halox" && o.exchange != "plain")
    throw halox::usage_error("exchange must be halox or plain, not '" + o.exchange + "'");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, status = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    const app_options o = parse(argc, argv);
    // The code numbers its ranks in its own order and splits the grid its own way; halox
    // adopts both (and would refuse sub-domains that do not follow the order).
    ivec3 dims{0, 0, 0};
    MPI_Dims_create(size, 3, dims.data());
    const auto order = halox::rank_order::parse(o.order);
    const ivec3 at = halox::coords_of(rank, dims, order);
    halox::subdomain sub;
    sub.global = {o.global, o.global, o.global};
    for (int k = 0; k < 3; ++k)
      std::tie(sub.offset[k], sub.extent[k]) = halox::split_extent(o.global, dims[k], at[k]);
    const auto decomp = halox::adopt_decomposition(MPI_COMM_WORLD, dims, o.periodic, order, sub);
    std::vector<field3d> fields = hydro::make_fields(decomp, sub.extent);
    const hydro::geometry g{sub.offset, sub.global, o.periodic};
    std::unique_ptr<hydro::halo_updater> halos;
    if (o.exchange == "halox")
      halos = std::make_unique<hydro::halox_updater>(
          decomp, sub.extent, fields,
          halox::exchange_options{.alg = halox::parse_algorithm(o.algorithm),
                                  .grouping = halox::field_grouping::compact,
                                  .transport = halox::parse_transport_choice(o.transport)});
    else
      halos = std::make_unique<hydro::plain_updater>(decomp, fields);
    hydro::initial_state(fields, g);
    for (int s = 0; s < o.steps; ++s) hydro::step(fields, g, *halos);
    const uint64_t d = hydro::digest(fields, g, decomp.comm());
    if (rank == 0) std::printf("digest %016llx\n", static_cast<unsigned long long>(d));
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "halox-example-hydro3d: error: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
