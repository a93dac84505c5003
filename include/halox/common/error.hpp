// Errors and the "one line on rank 0, non-zero exit everywhere" rule.
#pragma once

#include <mpi.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace halox {

// A bad option or an impossible configuration. Thrown identically on every rank
// (checks depend only on the arguments and the communicator size), so no rank
// is left waiting in a collective.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure found during a run (e.g. verification), agreed on by all ranks.
class run_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A peer did not arrive in time. Only this rank knows, and its peers may be
// stuck: programs print it on the rank that caught it and end the whole job.
class timeout_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Collective: every rank passes its own error text (empty when fine). Returns
// the message of the lowest failing rank on every rank, or an empty string.
std::string agree_on_error(MPI_Comm comm, const std::string& local_error);

// Collective: throws usage_error on every rank when any rank passed an error.
void require_all(MPI_Comm comm, const std::string& local_error);

// Exit codes shared by all halox programs.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;   // run failed (e.g. verification)
inline constexpr int exit_usage = 2;     // bad input

// Flushes stdout and stderr and waits until the launcher has had time to
// forward them: a job about to be torn down must not lose its last words.
void let_launcher_forward_output();

// let_launcher_forward_output(), then MPI_Abort(MPI_COMM_WORLD, exit_failure).
[[noreturn]] void abort_job_after_message();

// Runs body(MPI_COMM_WORLD) between MPI_Init and MPI_Finalize. A usage_error
// or run_error prints "prog: error: what" on rank 0 and returns non-zero on all
// ranks; any other exception aborts the job (a lone rank must not hang others).
int run_mpi_program(std::string_view prog, int argc, char** argv,
                    const std::function<int(MPI_Comm)>& body);

}  // namespace halox
