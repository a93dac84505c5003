// A stencil code using halox: explicit 7-point heat diffusion on a periodic
// global grid, the exchange overlapped with the interior update.
//
//   mpiexec -n 4 halox-example-heat3d [global N] [steps]
//
// Prints a checksum of the final field that does not depend on the number of
// ranks (the test compares 1 rank with several).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/exchange.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int n = argc > 1 ? std::atoi(argv[1]) : 24;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  {
    auto decomp = halox::make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
    auto sub = halox::subdomain_of_global(decomp, {n, n, n});
    halox::local_grid grid(sub.extent, halox::halo_widths::uniform(1));
    std::vector<double> u(grid.points()), next(grid.points());

    // A smooth initial condition, a function of the global cell only.
    for (int z = 0; z < sub.extent[2]; ++z)
      for (int y = 0; y < sub.extent[1]; ++y)
        for (int x = 0; x < sub.extent[0]; ++x) {
          double gx = sub.offset[0] + x, gy = sub.offset[1] + y, gz = sub.offset[2] + z;
          u[grid.index(x, y, z)] = std::sin(2 * M_PI * gx / n) * std::cos(2 * M_PI * gy / n) +
                                   0.5 * std::sin(4 * M_PI * gz / n);
        }

    // Faces are all a 7-point stencil needs; two exchangers swap roles each step.
    halox::exchange_options options{.alg = halox::algorithm::faces,
                                    .grouping = halox::field_grouping::compact,
                                    .transport = halox::parse_transport_choice("mpi-p2p")};
    auto field = [&](std::vector<double>& data) {
      return std::vector<halox::field>{{.data = data.data(), .halo = grid.halo}};
    };
    halox::halo_exchange exchange_u(decomp, sub.extent, field(u), options);
    halox::halo_exchange exchange_next(decomp, sub.extent, field(next), options);

    const double alpha = 0.1;
    auto update = [&](const std::vector<double>& in, std::vector<double>& out, int lo_margin,
                      int hi_margin, bool skip_inner) {
      for (int z = lo_margin; z < sub.extent[2] - hi_margin; ++z)
        for (int y = lo_margin; y < sub.extent[1] - hi_margin; ++y)
          for (int x = lo_margin; x < sub.extent[0] - hi_margin; ++x) {
            bool inner = x > 0 && y > 0 && z > 0 && x < sub.extent[0] - 1 &&
                         y < sub.extent[1] - 1 && z < sub.extent[2] - 1;
            if (skip_inner && inner) continue;
            auto at = [&](int dx, int dy, int dz) { return in[grid.index(x + dx, y + dy, z + dz)]; };
            out[grid.index(x, y, z)] =
                at(0, 0, 0) + alpha * (at(1, 0, 0) + at(-1, 0, 0) + at(0, 1, 0) + at(0, -1, 0) +
                                       at(0, 0, 1) + at(0, 0, -1) - 6 * at(0, 0, 0));
          }
    };
    for (int step = 0; step < steps; ++step) {
      bool even = step % 2 == 0;
      auto& in = even ? u : next;
      auto& out = even ? next : u;
      auto& exchange = even ? exchange_u : exchange_next;
      exchange.start();
      update(in, out, 1, 1, false);  // cells that need no halo
      exchange.wait();
      update(in, out, 0, 0, true);   // the boundary shell
    }

    const auto& final_field = steps % 2 == 0 ? u : next;
    double local_sum = 0, local_sq = 0, sum = 0, sq = 0;
    for (int z = 0; z < sub.extent[2]; ++z)
      for (int y = 0; y < sub.extent[1]; ++y)
        for (int x = 0; x < sub.extent[0]; ++x) {
          double v = final_field[grid.index(x, y, z)];
          local_sum += v;
          local_sq += v * v;
        }
    MPI_Allreduce(&local_sum, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&local_sq, &sq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (decomp.rank() == 0) std::printf("heat3d n=%d steps=%d sum=%.10e norm2=%.10e\n", n, steps, sum, sq);
  }
  MPI_Finalize();
  return 0;
}
