// A probe of what an exchange between the ranks depends on, taken around every
// turn of the timed exchanges: the cache-line round trip between the cores of
// on-node neighbour ranks, a copy bandwidth, and how much of the ranks' cores
// the ranks had (steal time, run-queue wait, load). A VM's vCPUs move between
// host cores that share a cache and cores that do not, and pinning inside the
// VM does not pin the host: the probe says when that happened.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

#include "halox/decomposition.hpp"
#include "stability_thresholds.hpp"

namespace halox::bench {

// ping_pong_cap_s (stability_thresholds.hpp): a round trip the partner did not
// answer within this long (it had lost its core) ends the ping-pong; the time
// waited then stands for the round trip.

// Two ranks on one node whose cores pass a cache line back and forth.
struct probe_pair {
  int rank_a = -1, rank_b = -1;
  int cpu_a = -1, cpu_b = -1;  // where the ranks ran when the pairs were chosen
  const char* role = "";       // "nearest" or "farthest" of the on-node neighbour pairs
};

struct probe_sample {
  double at_s = 0;                     // since the launch's first probe
  double unix_s = 0;                   // wall-clock time (seconds since 1970), rank 0's
  std::vector<double> round_trip_ns;   // per pair of machine_probe::pairs()
  double copy_GBps = 0;                // the slowest rank's memcpy of probe_copy_bytes
  // Over the interval since the previous sample, the worst rank: the share of
  // its CPU's time the hypervisor took (steal) and of its own wall time it
  // waited on a run queue (another process on its core). Absent where /proc lacks them.
  std::optional<double> steal_share, run_wait_share;
  std::optional<int> run_wait_cpu;     // the CPU of the rank that waited most
  std::optional<double> load1;         // /proc/loadavg, rank 0's node
  double cost_s = 0;                   // what taking it cost (slowest rank)
};

nlohmann::json to_json(const probe_sample& s);

// Collective over the decomposition's communicator for every call.
class machine_probe {
 public:
  explicit machine_probe(const decomposition& decomp);
  ~machine_probe();
  machine_probe(const machine_probe&) = delete;
  machine_probe& operator=(const machine_probe&) = delete;

  probe_sample take();
  const std::vector<probe_pair>& pairs() const { return pairs_; }
  nlohmann::json pairs_json() const;
  double total_cost_s() const { return total_cost_s_; }
  int samples_taken() const { return taken_; }

 private:
  double round_trip_ns(size_t pair);
  double copy_GBps();

  MPI_Comm comm_;
  int rank_ = 0;
  std::vector<probe_pair> pairs_;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  std::vector<char*> lines_;            // per pair: its cache line, where this rank is in it
  std::vector<char> copy_from_, copy_to_;
  double started_ = 0;
  // The previous sample's counters, for the shares over the interval.
  unsigned long long cpu_total_ = 0, cpu_steal_ = 0, run_wait_ns_ = 0;
  int counters_cpu_ = -1;  // the CPU whose counters those are (an unbound rank moves)
  double wall_ = 0;
  bool have_counters_ = false;
  double total_cost_s_ = 0;
  int taken_ = 0;
};

}  // namespace halox::bench
