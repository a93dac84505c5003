#include "halox/transport/wait_policy.hpp"

#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <fmt/core.h>
#include <vector>

#include "halox/common/error.hpp"

namespace halox {

namespace {

constexpr unsigned polls_before_yield = 4096;
constexpr unsigned polls_between_clock_reads = 256;

[[noreturn]] void time_out(MPI_Comm comm, double seconds, const std::string& what) {
  int rank = 0;
  if (comm != MPI_COMM_NULL) MPI_Comm_rank(comm, &rank);
  throw timeout_error(fmt::format("rank {}: nothing arrived for {:g} s while waiting for {} "
                                  "(a peer died, hangs, or built a different exchange; "
                                  "HALOX_TIMEOUT sets the limit)",
                                  rank, seconds, what));
}

}  // namespace

double wait_policy::default_timeout() {
  const char* text = std::getenv("HALOX_TIMEOUT");
  if (!text || !*text) return 600;
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !(value > 0))
    throw usage_error(fmt::format("HALOX_TIMEOUT='{}' is not a positive number of seconds", text));
  return value;
}

void wait_policy::spin_until(const std::function<bool()>& ready,
                             const std::function<std::string()>& what) const {
  if (ready()) return;
  const double start = MPI_Wtime();
  for (unsigned polls = 1;; ++polls) {
    if (ready()) return;
    if (polls % 64 == 0 && comm != MPI_COMM_NULL) {
      // Off-node messages of the same stage progress while we wait on memory.
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
    }
    if (oversubscribed || polls > polls_before_yield) sched_yield();
    if (polls % polls_between_clock_reads == 0 && MPI_Wtime() - start > timeout_seconds)
      time_out(comm, timeout_seconds, what());
  }
}

void wait_policy::wait_all(std::span<MPI_Request> requests,
                           const std::function<void(size_t)>& on_complete,
                           const std::function<std::string(size_t)>& what) const {
  if (requests.empty()) return;
  const int count = static_cast<int>(requests.size());
  std::vector<int> indices(requests.size());
  size_t done = 0;
  const double start = MPI_Wtime();
  for (unsigned polls = 1; done < requests.size(); ++polls) {
    int completed = 0;
    MPI_Testsome(count, requests.data(), &completed, indices.data(), MPI_STATUSES_IGNORE);
    if (completed == MPI_UNDEFINED) break;  // no active request left
    for (int i = 0; i < completed; ++i) {
      if (on_complete) on_complete(static_cast<size_t>(indices[static_cast<size_t>(i)]));
      ++done;
    }
    if (completed > 0) continue;
    if (oversubscribed || polls > polls_before_yield) sched_yield();
    if (polls % polls_between_clock_reads == 0 && MPI_Wtime() - start > timeout_seconds) {
      size_t pending = 0;
      for (size_t i = 0; i < requests.size(); ++i)
        if (requests[i] != MPI_REQUEST_NULL) {
          int flag = 0;
          MPI_Request_get_status(requests[i], &flag, MPI_STATUS_IGNORE);
          if (!flag) {
            pending = i;
            break;
          }
        }
      time_out(comm, timeout_seconds, what(pending));
    }
  }
}

}  // namespace halox
