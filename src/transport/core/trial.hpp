// Measurements a transport takes of itself when it is built, to choose
// between ways of moving the same boxes (shm, cma: which boxes to pack into the outbox).
//
// Reference algorithm of fastest_candidate:
//   repeat 7 rounds (at most 21, 7 at a time, while the choice is unclear):
//     for each candidate c:                  (interleaved, so that the
//       use(c); 1 untimed exchange; barrier   machine's slow and fast moments
//       t[round][c] = 2 timed exchanges       fall on all of them)
//   t = max over comm; the choice is choose_from_rounds(t) below
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "halox/common/median.hpp"  // the median the trials take

namespace halox {

class transport;

// Collective over comm: the index of the candidate whose exchanges were
// fastest on the slowest rank; use(i) switches the transport to candidate i.
size_t fastest_candidate(transport& t, size_t stages, size_t candidates,
                         const std::function<void(size_t)>& use, MPI_Comm comm);

// Collective over comm: a barrier that yields the core while it waits (a
// blocking MPI_Barrier spins in some MPI libraries, which starves the ranks
// it waits for where they outnumber the cores).
void start_together(MPI_Comm comm);

// The choice from seconds[round * candidates + c], the same on every rank.
// Each round's times are taken relative to that round's fastest (a slow
// moment of the machine slows every candidate of its round alike), and the
// candidate with the least median over rounds of its relative time wins,
// unless candidate 0 is within `trial_tie` of it: the first candidate is the
// default, and a difference the trial cannot tell from noise does not move
// a run off it. `clear` is false when the runner-up is within
// `trial_clear_gap` of the winner and beat it in more than a third of the
// rounds: the caller measures more rounds.
struct trial_choice {
  size_t best = 0;
  bool clear = true;
};
inline constexpr double trial_tie = 0.02, trial_clear_gap = 0.10;
trial_choice choose_from_rounds(const std::vector<double>& seconds, size_t candidates);

// Collective over comm: the sorted union of every rank's values, each below
// `below`; one reduction of below bits, whatever the number of ranks.
std::vector<size_t> agreed_union(const std::vector<size_t>& mine, size_t below, MPI_Comm comm);

}  // namespace halox
