// Measurements a transport takes of itself when it is built, to choose
// between ways of moving the same boxes (shm, cma: which boxes to stage).
//
// Reference algorithm of fastest_candidate:
//   for round in 1..rounds:                 (candidates interleaved, so that
//     for each candidate c:                  the machine's slow and fast
//       use(c); 1 untimed exchange;          moments fall on all of them)
//       t[round][c] = 2 timed exchanges (every stage started and waited for in order)
//   the candidate with the least median over rounds of max over comm of t[round][c]
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace halox {

class transport;

// Collective over comm: the index of the candidate whose exchanges were
// fastest on the slowest rank; use(i) switches the transport to candidate i.
size_t fastest_candidate(transport& t, size_t stages, size_t candidates,
                         const std::function<void(size_t)>& use, MPI_Comm comm);

// Collective over comm: the sorted union of every rank's values.
std::vector<size_t> agreed_union(const std::vector<size_t>& mine, MPI_Comm comm);

}  // namespace halox
