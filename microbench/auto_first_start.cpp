// What the automatic choice costs a code's first start: 14 located fields of 64^3 cells per
// rank (CloverLeaf's kinds: 5 cell fields, 3 node velocities, 6 face fluxes, halo 2, one more
// above along a staggered axis), doubles, every choice automatic, no wisdom file; rank 0
// prints the slowest rank's time to build the exchange and what was chosen.
//   mpiexec -n 2 --bind-to core build/openmpi/microbench/halox-auto-first-start
#include <mpi.h>
#include <cstdio>
#include <vector>
#include <halox/exchange.hpp>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    int size, rank; MPI_Comm_size(MPI_COMM_WORLD, &size); MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    halox::ivec3 dims{0, 0, 0}; MPI_Dims_create(size, 3, dims.data());
    auto d = halox::make_cart_decomposition(MPI_COMM_WORLD, dims, {false, false, false}, false);
    auto sub = halox::subdomain_of_global(d, {64 * dims[0], 64 * dims[1], 64 * dims[2]});
    using L = halox::location;
    const L at[14] = {L::cell, L::cell, L::cell, L::cell, L::cell, L::vertex, L::vertex, L::vertex,
                      L::x_face, L::y_face, L::z_face, L::x_face, L::y_face, L::z_face};
    std::vector<std::vector<double>> mem(14);
    std::vector<halox::field> fs;
    for (int f = 0; f < 14; ++f) {
      halox::halo_widths h = halox::halo_widths::uniform(2);
      const auto st = halox::staggered_axes(at[f]);
      for (int k = 0; k < 3; ++k) h.hi[k] += st[k];
      mem[f].assign(halox::local_grid(halox::field_points(d, sub.extent, at[f]), h).points(), 1.0);
      char name[8];
      std::snprintf(name, sizeof name, "f%d", f);
      fs.push_back({mem[f].data(), halox::element_type::f64, at[f], h, name});
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    halox::halo_exchange ex(
        d, sub, fs, {.auto_transport = true, .auto_algorithm = true, .auto_grouping = true});
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) std::printf("ready in %.2f s: %s\n", t, ex.choice_report().c_str());
  }
  MPI_Finalize();
}
