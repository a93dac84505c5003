// A peer that never arrives: every rank builds the exchange, then the last
// rank sleeps instead of exchanging. The others must fail with a timeout
// error naming what they waited for, and the job must end.
//
//   mpiexec -n 2 halox-test-peer-timeout TRANSPORT TIMEOUT_SECONDS SLEEP_SECONDS
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/exchange.hpp"
#include "halox_programs/program.hpp"

int main(int argc, char** argv) {
  return halox::run_mpi_program("halox-test-peer-timeout", argc, argv, [&](MPI_Comm world) {
    if (argc != 4) throw halox::usage_error("usage: TRANSPORT TIMEOUT_SECONDS SLEEP_SECONDS");
    auto decomp = halox::make_cart_decomposition(world, {0, 0, 0}, {true, true, true}, false);
    halox::local_grid grid({8, 8, 8}, halox::halo_widths::uniform(1));
    std::vector<double> field(grid.points(), 1.0);
    std::vector<double*> fields{field.data()};
    halox::exchange_options options;
    options.transport = halox::parse_transport_choice(argv[1]);
    options.timeout_seconds = std::atof(argv[2]);
    halox::halo_exchange ex(decomp, grid, std::span<double* const>(fields), options);
    if (decomp.rank() == decomp.size() - 1) {
      sleep(static_cast<unsigned>(std::atoi(argv[3])));
      return halox::exit_ok;
    }
    ex.exchange();
    return halox::exit_ok;
  });
}
