// Timing one mechanism on one layout: the protocol of halox-ipc, kept in the
// library so tests drive the mechanisms exactly as the tool does.
//
// One copy ("iteration"), all ranks of `control` (every group at once):
//   owner: write the generation's pattern into its blocks        (untimed)
//   barrier                                                      (settle, untimed)
//   barrier                                 "data ready"         (control time)
//   copy()                                                       (copy time)
//   barrier                                 "copy done"          (control time)
//   peer: verify the destination against the generation          (untimed)
// The copy time of a peer is its span's end minus the earlier of its own and
// its owner's span starts (the owner's start counts when the owner moves data,
// as in SHMEM copy-in). Spans use CLOCK_MONOTONIC, common to the node.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "halox_programs/stats.hpp"
#include "halox_programs/ipc/mechanism.hpp"

namespace halox::ipc {

struct measure_options {
  int warmup = 5;           // untimed copies after the first
  int repetitions = 50;     // timed copies, at most
  double cell_seconds = 0;  // > 0: fewer repetitions when a copy is slow
  int min_repetitions = 3;
  bool check = true;  // verify every copy (the first error is kept)
};

// This rank's record of one cell.
struct cell_samples {
  copy_span first;  // the cold copy right after prepare()
  double first_control = 0;
  std::vector<copy_span> spans;  // timed copies
  std::vector<double> control;   // seconds in the two barriers, per timed copy
  int warmup_done = 0;
  std::string problem;  // first verification or copy error, else empty
};

// Collective over control (which holds every rank of every group). `owner`
// and the source are used on owners, destination on peers; generation is
// advanced on every rank alike.
cell_samples measure_cell(copy_mechanism& mechanism, const block_layout& layout, std::byte* source,
                          std::byte* destination, MPI_Comm control, uint64_t& generation,
                          const measure_options& options);

// The result of one cell on rank 0 of control.
struct peer_result {
  int rank = 0;     // in control
  int owner = 0;    // its owner's rank in control
  summary copy_us;  // over timed copies
  double first_us = 0;
  double control_us = 0;  // median
};
struct cell_result {
  std::vector<peer_result> peers;
  double time_us = 0;     // max over peers of the median copy time
  double first_us = 0;    // max over peers
  double control_us = 0;  // max over peers of the median control time
  int repetitions = 0;
};

// Collective over control: gathers the samples to rank 0 and reduces them
// there (other ranks get an empty result). owner_of[r] is the control rank of
// r's owner, or -1 when r owns.
cell_result reduce_cell(const cell_samples& samples, MPI_Comm control,
                        const std::vector<int>& owner_of);

void to_json(nlohmann::json& j, const peer_result& p);

}  // namespace halox::ipc
