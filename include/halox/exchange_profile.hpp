// Where an exchange's time goes: how long it took to build (measured
// choices, plan, transports) and, while recording (halo_exchange::
// record_stages), each stage's time split into copying, waiting for
// neighbours and the rest.
//
// A stage's time is what start(stage) and wait(stage) spend on this rank
// (the caller's work between start() and wait() is not counted). Within it:
//   pack:          copying what this rank sends into an outbox or a message
//   copy:          every other copy of halo cells: landing what neighbours
//                  published or sent, unpacking, copies within the rank
//                  (cma's kernel copies included)
//   wait_peers:    waiting for neighbours' data: their readiness to be read,
//                  their writes into our halos, messages arriving
//   wait_readers:  waiting for neighbours to finish reading what we publish
//                  (our outbox slot before it is packed again, our cells in
//                  place before the exchange returns)
//   other:         the rest: raising signals, posting messages, bookkeeping
// A copy made while waiting (a message unpacked as it lands) counts as copy;
// copies the MPI library makes itself (datatype transports: mpi-types,
// mpi-neighbor) count as waiting.
#pragma once

#include <cstdint>
#include <vector>

namespace halox {

// Seconds of one stage, summed over the exchanges recorded.
struct stage_split {
  double pack_s = 0;
  double copy_s = 0;
  double wait_peers_s = 0;
  double wait_readers_s = 0;
  double other_s = 0;
  double total_s() const { return pack_s + copy_s + wait_peers_s + wait_readers_s + other_s; }
};

// Seconds this rank spent building the exchange.
struct setup_times {
  double measured_choice_s = 0;  // the auto choices' trials (0 without them)
  double plan_s = 0;             // the plan and the ranks' agreement on it
  double transports_s = 0;       // building the transports, their own trials included
  double total_s = 0;            // the whole constructor
};

struct exchange_profile {
  setup_times setup;
  uint64_t exchanges = 0;           // recorded since recording started
  std::vector<stage_split> stages;  // by stage of the plan, summed over those exchanges
  // By stage, per exchange: the mean over the middle half of the recorded
  // exchanges by their whole time on this rank (the first 65536 recorded),
  // so that a moment the process was not running does not dominate it.
  std::vector<stage_split> typical;
};

}  // namespace halox
