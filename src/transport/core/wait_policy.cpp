#include "halox/extend/wait_policy.hpp"

#include <fmt/core.h>
#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "common/stage_timer.hpp"
#include "halox/common/environment.hpp"
#include "halox/common/error.hpp"
#include "halox/extend/launcher.hpp"

namespace halox {

namespace {

constexpr unsigned polls_before_yield = 4096;
constexpr unsigned polls_between_clock_reads = 256;

[[noreturn]] void time_out(MPI_Comm comm, double seconds, const std::string& what) {
  int rank = 0;
  if (comm != MPI_COMM_NULL) MPI_Comm_rank(comm, &rank);
  throw timeout_error(
      fmt::format("rank {}: nothing arrived for {:g} s while waiting for {} "
                  "(a peer died, hangs, or built a different exchange; "
                  "HALOX_TIMEOUT sets the limit)",
                  rank, seconds, what));
}

// One thread per process watches the blocking call in progress, if any.
class watchdog {
 public:
  static watchdog& instance() {
    static watchdog* w = new watchdog;  // never destroyed: the thread outlives main's statics
    return *w;
  }
  // No MPI call on this thread (the program may run MPI_THREAD_SINGLE).
  using clock = std::chrono::steady_clock;
  void arm(clock::time_point deadline, const std::function<std::string()>* what, double seconds,
           int rank) {
    std::lock_guard lock(mutex_);
    deadline_ = deadline;
    what_ = what;
    seconds_ = seconds;
    rank_ = rank;
    armed_ = true;
  }
  void disarm() {
    std::lock_guard lock(mutex_);
    armed_ = false;
  }

 private:
  watchdog() {
    std::thread([this] { watch(); }).detach();
  }
  void watch() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard lock(mutex_);
      if (!armed_ || clock::now() < deadline_) continue;
      std::fprintf(stderr,
                   "%s: error: rank %d: nothing arrived for %g s while waiting for %s "
                   "(a peer died, hangs, or built a different exchange; HALOX_TIMEOUT "
                   "sets the limit)\n",
                   program_invocation_short_name, rank_, seconds_, (*what_)().c_str());
      let_launcher_forward_output();
      std::_Exit(1);
    }
  }
  std::mutex mutex_;
  bool armed_ = false;
  clock::time_point deadline_;
  double seconds_ = 0;
  int rank_ = 0;
  const std::function<std::string()>* what_ = nullptr;
};

}  // namespace

void wait_policy::blocking(const std::function<void()>& call,
                           const std::function<std::string()>& what) const {
  const stage_timer::part_span waiting(stage_timer::wait_peers);
  int rank = 0;
  if (comm != MPI_COMM_NULL) MPI_Comm_rank(comm, &rank);
  auto& dog = watchdog::instance();
  dog.arm(watchdog::clock::now() + std::chrono::duration_cast<watchdog::clock::duration>(
                                       std::chrono::duration<double>(timeout_seconds)),
          &what, timeout_seconds, rank);
  call();
  dog.disarm();
}

double wait_policy::default_timeout() {
  return environment_seconds("HALOX_TIMEOUT").value_or(600);
}

void wait_policy::spin_until(const std::function<bool()>& ready,
                             const std::function<std::string()>& what) const {
  if (ready()) return;
  const stage_timer::part_span waiting(stage_timer::wait_peers);
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
  const stage_timer::part_span waiting(stage_timer::wait_peers);
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
