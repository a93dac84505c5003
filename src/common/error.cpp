#include "halox/common/error.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/yielding_mpi.hpp"
#include "halox/extend/launcher.hpp"

namespace halox {

void let_launcher_forward_output() {
  std::fflush(stdout);
  std::fflush(stderr);
  // MPICH's hydra can tear the job down before it has forwarded the line just
  // written (seen: the whole output of an aborted job lost in 2 of 6 runs).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

std::string agree_on_error(MPI_Comm comm, const std::string& local_error) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = local_error.empty() ? size : rank;
  int first = size;
  yielding_allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return {};
  int length = rank == first ? static_cast<int>(local_error.size()) : 0;
  yielding_bcast(&length, 1, MPI_INT, first, comm);
  std::string message(static_cast<size_t>(length), '\0');
  if (rank == first) message = local_error;
  if (length > 0) yielding_bcast(message.data(), length, MPI_CHAR, first, comm);
  return message;
}

void require_all(MPI_Comm comm, const std::string& local_error) {
  if (auto message = agree_on_error(comm, local_error); !message.empty())
    throw usage_error(message);
}

}  // namespace halox
