// How transports wait: drive progress, yield when the node is oversubscribed,
// and give up with an error naming the peer after a timeout.
//
// Reference algorithm (every wait of every transport):
//   while not done():
//     poll progress (MPI_Test*, a shared-memory flag, ucp_worker_progress)
//     if oversubscribed or polled long: sched_yield()
//     if elapsed > timeout: throw timeout_error("rank R: no data from rank P (direction ...)")
#pragma once

#include <mpi.h>

#include <functional>
#include <span>
#include <string>

namespace halox {

struct wait_policy {
  double timeout_seconds = 600;  // HALOX_TIMEOUT=seconds, or exchange_options::timeout_seconds
  bool oversubscribed = false;   // yield at once instead of polling first
  MPI_Comm comm = MPI_COMM_NULL; // polled for MPI progress while spinning on memory

  // The default timeout: HALOX_TIMEOUT when set (throws usage_error when malformed).
  static double default_timeout();

  // Spins until ready() is true. `what()` names what is awaited, for the error.
  void spin_until(const std::function<bool()>& ready, const std::function<std::string()>& what) const;

  // Runs a blocking MPI call that cannot be polled (MPI_Win_fence,
  // MPI_Win_start). If it outlasts the timeout, a watchdog prints the error
  // naming what() and ends this process, which ends the job: the call cannot
  // be interrupted and unwinding would leave the peers waiting.
  void blocking(const std::function<void()>& call, const std::function<std::string()>& what) const;

  // Completes all requests; after each completion calls on_complete(index)
  // (e.g. to unpack as messages land). `what(index)` names a pending request.
  void wait_all(std::span<MPI_Request> requests, const std::function<void(size_t)>& on_complete,
                const std::function<std::string(size_t)>& what) const;
};

}  // namespace halox
