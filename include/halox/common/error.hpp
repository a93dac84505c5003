// Errors and the "one line on rank 0, non-zero exit everywhere" rule.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

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

}  // namespace halox
