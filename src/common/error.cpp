#include "halox/common/error.hpp"

#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace halox {

void let_launcher_forward_output() {
  std::fflush(stdout);
  std::fflush(stderr);
  // MPICH's hydra can tear the job down before it has forwarded the line just
  // written (seen: the whole output of an aborted job lost in 2 of 6 runs).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

void abort_job_after_message() {
  let_launcher_forward_output();
  MPI_Abort(MPI_COMM_WORLD, exit_failure);
  std::_Exit(exit_failure);  // MPI_Abort does not return
}

std::string agree_on_error(MPI_Comm comm, const std::string& local_error) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = local_error.empty() ? size : rank;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return {};
  int length = rank == first ? static_cast<int>(local_error.size()) : 0;
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  std::string message(static_cast<size_t>(length), '\0');
  if (rank == first) message = local_error;
  if (length > 0) MPI_Bcast(message.data(), length, MPI_CHAR, first, comm);
  return message;
}

void require_all(MPI_Comm comm, const std::string& local_error) {
  if (auto message = agree_on_error(comm, local_error); !message.empty())
    throw usage_error(message);
}

int run_mpi_program(std::string_view prog, int argc, char** argv,
                    const std::function<int(MPI_Comm)>& body) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = exit_ok;
  try {
    code = body(MPI_COMM_WORLD);
  } catch (const usage_error& e) {
    if (rank == 0) fmt::print(stderr, "{}: error: {}\n", prog, e.what());
    code = exit_usage;
  } catch (const run_error& e) {
    if (rank == 0) fmt::print(stderr, "{}: error: {}\n", prog, e.what());
    code = exit_failure;
  } catch (const timeout_error& e) {
    fmt::print(stderr, "{}: error: {}\n", prog, e.what());
    abort_job_after_message();
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: fatal error on rank {}: {}\n", prog, rank, e.what());
    abort_job_after_message();
  }
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Finalize();
  return code;
}

}  // namespace halox
