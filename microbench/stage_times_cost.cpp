// What recording the stage splits (halo_exchange::record_stages) costs an
// exchange: blocks of exchanges with recording off and on, alternating in one
// process, every exchange started by all ranks together; the median of each
// block, slowest rank; then per pair of neighbouring blocks on / off.
//   scripts/mpirun.sh 2 build/openmpi/microbench/halox-stage-times-cost [TRANSPORT]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "halox/exchange.hpp"
#include "halox/extend/registry.hpp"
#include "halox/field_memory.hpp"

namespace {

constexpr int blocks = 60, per_block = 200, warmup = 200;

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void measure(const std::string& transport) {
  using namespace halox;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto decomp = make_cart_decomposition(MPI_COMM_WORLD, {size, 1, 1}, {true, true, true}, false);
  local_grid grid({64, 64, 64}, halo_widths::uniform(1));
  shared_fields<float> memory(decomp, grid, 1);
  halo_exchange ex(decomp, grid, memory.pointers(),
                   {.alg = algorithm::staged,
                    .grouping = field_grouping::sequence,
                    .transport = parse_transport_choice(transport)});
  for (int i = 0; i < warmup; ++i) ex.exchange();
  std::vector<double> on, off;
  for (int b = 0; b < blocks; ++b) {
    const bool recording = b % 2 == 1;
    ex.record_stages(recording);
    std::vector<double> times;
    for (int i = 0; i < per_block; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      ex.exchange();
      times.push_back(MPI_Wtime() - t0);
    }
    double mine = median(times), slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    (recording ? on : off).push_back(slowest);
  }
  std::vector<double> ratio;
  for (size_t i = 0; i < on.size(); ++i) ratio.push_back(on[i] / off[i]);
  std::sort(ratio.begin(), ratio.end());
  if (rank == 0)
    std::printf("%s, %d rank(s), 64^3 floats, halo 1, staged: block medians off %.2f us, on %.2f "
                "us; on/off of neighbouring blocks p25 %.3f median %.3f p75 %.3f\n",
                transport.c_str(), size, median(off) * 1e6, median(on) * 1e6,
                ratio[ratio.size() / 4], ratio[ratio.size() / 2], ratio[3 * ratio.size() / 4]);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  measure(argc > 1 ? argv[1] : "shm");
  MPI_Finalize();
}
