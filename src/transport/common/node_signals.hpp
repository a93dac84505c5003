// Stage counters shared by the ranks of a node: how single-copy transports
// (shm, cma) order their stages without messages.
//
// Reference algorithm for stage number k (k counts stages over all exchanges):
//   owner:  ready[me] = k          once my cells for stage k are final
//   reader: wait until ready[p] >= k; copy from p
//           done[me] = k           once I read everything of stage k
//   owner, after the last stage: wait until done[r] >= k for every reader r
//           (nobody still reads my cells when the caller may change them)
//   pushing owner (shm): wait until ready[r] >= k; write into r's halo;
//           pushed[me] = k; the reader waits until pushed[p] >= k
// Counters only grow; a release store publishes everything written before it
// to the acquire load that sees it. Each counter of a rank sits on a cache
// line of its own, so readers polling one do not steal the line the owner writes.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "halox/extend/transport.hpp"

namespace halox {

class node_signals {
 public:
  // Collective over node.comm: all counters are zero on return. Each rank may
  // ask for `payload_bytes` of node-shared memory beside its counters (an
  // outbox its peers read); the payloads of the node ranks in `read_from` are
  // mapped into this process on return. `transport` names the waits in errors.
  node_signals(const node_membership& node, const wait_policy& waits, std::string transport,
               size_t payload_bytes = 0, const std::vector<int>& read_from = {});
  node_signals(const node_signals&) = delete;
  node_signals& operator=(const node_signals&) = delete;
  ~node_signals();  // collective over node.comm (frees the window)

  void raise_ready(uint64_t seq);
  void raise_done(uint64_t seq);
  void raise_pushed(uint64_t seq);
  // Return once node rank `node_rank` raised ready (done) to at least stage number `seq`;
  // time out through the wait policy.
  void wait_ready(int node_rank, uint64_t seq) const;
  void wait_done(int node_rank, uint64_t seq) const;
  void wait_pushed(int node_rank, uint64_t seq) const;

  int me() const { return me_; }  // this rank's node rank
  // The payload of node rank `node_rank` (64-byte aligned, page-aligned in its segment).
  std::byte* payload(int node_rank) const { return payload_[static_cast<size_t>(node_rank)]; }

 private:
  void wait_for(int node_rank, int counter, uint64_t seq) const;

  const wait_policy& waits_;
  std::string transport_;
  std::vector<int> comm_rank_of_;  // exchange rank of each node rank
  int me_ = 0;
  MPI_Win window_ = MPI_WIN_NULL;
  std::vector<uint64_t*> counters_;  // by node rank: ready, done, pushed, 128 bytes apart
  std::vector<std::byte*> payload_;  // by node rank
};

}  // namespace halox
