#include "halox/transport/trial.hpp"

#include <algorithm>
#include <cstdint>

#include "halox/transport.hpp"

namespace halox {

namespace {
constexpr int rounds = 7, untimed = 1, timed = 2;
}  // namespace

size_t fastest_candidate(transport& t, size_t stages, size_t candidates,
                         const std::function<void(size_t)>& use, MPI_Comm comm) {
  auto exchange = [&] {
    for (size_t s = 0; s < stages; ++s) {
      t.start(s);
      t.wait(s);
    }
  };
  // seconds[round * candidates + c]: the slowest rank's time, round by round.
  std::vector<double> seconds(rounds * candidates, 0.0);
  for (int round = 0; round < rounds; ++round)
    for (size_t c = 0; c < candidates; ++c) {
      use(c);
      for (int i = 0; i < untimed; ++i) exchange();
      const double t0 = MPI_Wtime();
      for (int i = 0; i < timed; ++i) exchange();
      seconds[static_cast<size_t>(round) * candidates + c] = MPI_Wtime() - t0;
    }
  MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE,
                MPI_MAX, comm);
  // The median over rounds: one slow moment of the machine does not decide.
  std::vector<double> medians(candidates);
  for (size_t c = 0; c < candidates; ++c) {
    std::vector<double> of(rounds);
    for (int round = 0; round < rounds; ++round)
      of[static_cast<size_t>(round)] = seconds[static_cast<size_t>(round) * candidates + c];
    std::nth_element(of.begin(), of.begin() + rounds / 2, of.end());
    medians[c] = of[rounds / 2];
  }
  return static_cast<size_t>(std::min_element(medians.begin(), medians.end()) - medians.begin());
}

std::vector<size_t> agreed_union(const std::vector<size_t>& mine, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<uint64_t> values(mine.begin(), mine.end()), all(static_cast<size_t>(total));
  MPI_Allgatherv(values.data(), count, MPI_UINT64_T, all.data(), counts.data(), displs.data(),
                 MPI_UINT64_T, comm);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return {all.begin(), all.end()};
}

}  // namespace halox
