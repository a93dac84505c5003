// The yardsticks beside every exchange: the single-copy floor, the device
// floor and the self-copy reference, and the compute step of --timing compute.
#pragma once

#include <algorithm>
#include <vector>

#include "bench_program.hpp"
#include "halox/extend/pack.hpp"

namespace halox::bench {

// Collective: the median of samples worth about `floor_sample_seconds` (at
// least 5, at most 101) of `timed`, every sample started by all ranks
// together after an untimed `prepare(i)`, so that a moment of the machine
// shorter than half of them does not move it; slowest rank. Ranks with
// nothing to time (`any` false) take part with 0. The first sample, untimed,
// brings the lines in; its whole time (barrier included: slow where ranks
// outnumber cores) sets how many follow. `every_rank`, when given, gets each
// rank's median on rank 0.
constexpr double floor_sample_seconds = 2e-3;
template <class Prepare, class Timed>
double median_of_samples(MPI_Comm comm, bool any, Prepare&& prepare, Timed&& timed,
                         std::vector<double>* every_rank = nullptr) {
  auto sample = [&](int i) {
    prepare(i);
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    if (any) timed(i);
    return MPI_Wtime() - t0;
  };
  const double started = MPI_Wtime();
  sample(0);
  double first = MPI_Wtime() - started, slowest_first = 0;
  MPI_Allreduce(&first, &slowest_first, 1, MPI_DOUBLE, MPI_MAX, comm);
  const int count = static_cast<int>(
      std::clamp(floor_sample_seconds / std::max(slowest_first, 1e-9), 5.0, 101.0));
  std::vector<double> times;
  for (int i = 1; i <= count; ++i) times.push_back(sample(i));
  double median = any ? summarize(times).median : 0, slowest = 0;
  MPI_Allreduce(&median, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (every_rank) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    every_rank->assign(rank == 0 ? static_cast<size_t>(size) : 0, 0.0);
    MPI_Gather(&median, 1, MPI_DOUBLE, every_rank->data(), 1, MPI_DOUBLE, 0, comm);
  }
  return slowest;
}

double single_copy_floor(MPI_Comm comm, size_t bytes, shape_memory& mem, size_t field_bytes,
                         bool after_compute);
double device_copy_floor(MPI_Comm comm, size_t bytes, shape_memory& mem, size_t field_bytes);

// --timing compute: one time step between exchanges, field after field, in
// one pass over each field's rows: every halo cell read (as a stencil reads
// what the exchange delivered: lines an owner wrote into this rank's halo
// come back here) and every interior cell rewritten (the faces the next
// exchange sends are freshly written; the later fields take the caches).
inline volatile double halo_read_sink;  // keeps compute_timestep's halo reads

template <class T>
void compute_timestep(const std::vector<T*>& fields, const local_grid& grid) {
  const ivec3 n = grid.interior;
  const halo_widths& h = grid.halo;
  for (T* field : fields) {
    T read = 0;
    for (int z = -h.lo[2]; z < n[2] + h.hi[2]; ++z)
      for (int y = -h.lo[1]; y < n[1] + h.hi[1]; ++y) {
        T* row = field + grid.index(0, y, z);
        if (y < 0 || y >= n[1] || z < 0 || z >= n[2]) {
          for (int x = -h.lo[0]; x < n[0] + h.hi[0]; ++x) read += row[x];
          continue;
        }
        for (int x = -h.lo[0]; x < 0; ++x) read += row[x];
        for (int x = n[0]; x < n[0] + h.hi[0]; ++x) read += row[x];
        for (int x = 0; x < n[0]; ++x) row[x] = row[x] * T(0.5) + T(1);
      }
    halo_read_sink = static_cast<double>(read);
  }
}

// The self-copy reference (halox_programs/self_copy_reference.hpp): every rank fills
// the halos its exchange fills from its own cells, all ranks at the same
// time, on the exchange's fields; nothing crosses ranks. Collective. The
// slowest rank's time; `every_rank` gets each rank's on rank 0 (a slower core
// shows here without any exchange).
template <class T>
double self_copy_reference_time(MPI_Comm comm, const copy_list& copies, const std::vector<T*>& fields,
                                const local_grid& grid, bool after_compute,
                                std::vector<double>* every_rank = nullptr) {
  return median_of_samples(
      comm, !copies.empty(),
      [&](int) {
        if (after_compute) compute_timestep(fields, grid);
      },
      [&](int) { copies.run(); }, every_rank);
}

}  // namespace halox::bench
