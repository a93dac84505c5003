// Transports execute the stages of a plan: start(stage) then wait(stage).
//
// The exchange hands each transport what it needs and nothing global: its part
// of the plan, a communicator of its own, the fields and how they were
// allocated, which ranks share this rank's node, and how to wait. The
// registry (extend/registry.hpp) names every transport and builds them;
// a routing LOCAL+REMOTE (a router inside the library) runs the on-node messages by
// one transport and the others by another.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "halox/field_memory.hpp"
#include "halox/extend/plan.hpp"
#include "halox/transport/choice.hpp"
#include "halox/transport/tuning.hpp"
#include "halox/extend/wait_policy.hpp"

namespace halox {

// Which ranks share this rank's node (real shared-memory nodes, or groups of
// consecutive ranks with --ranks-per-node / HALOX_RANKS_PER_NODE).
struct node_membership {
  MPI_Comm comm = MPI_COMM_NULL;  // the ranks of this node
  int rank = 0, size = 1;         // on the node
  std::vector<int> node_rank_of;  // by exchange rank: rank on this node, or -1
  bool oversubscribed = false;    // more ranks on this machine than cores (nodes may share one)
  bool on_node(int peer) const { return node_rank_of[static_cast<size_t>(peer)] >= 0; }
};

// Collective over comm. The caller frees node.comm.
node_membership make_node_membership(MPI_Comm comm, int ranks_per_node);

// "a message from rank 3 (direction 1,0,0, tag 14, mpi-p2p)", for errors.
std::string describe_message(const message& m, std::string_view from_or_to,
                             std::string_view transport);

// What a transport is built from. Everything outlives the transport.
struct transport_context {
  const exchange_plan& plan;  // the messages and copies this transport runs
  MPI_Comm comm;              // the exchange's own communicator
  const field_set& fields;
  const node_membership& node;
  const wait_policy& waits;
  const transport_tuning& tuning;  // the tuning set by the caller; unset ones are measured
};

class transport {
 public:
  virtual ~transport() = default;
  // Posts the receives and sends of a stage (and does its local copies).
  virtual void start(size_t stage) = 0;
  // Completes a stage: every halo cell of the stage holds its final value.
  virtual void wait(size_t stage) = 0;
  // The registry name.
  virtual std::string name() const = 0;
  // How the data moves in this run, when that says more than the name (a
  // fallback, a routing): recorded with the results.
  virtual std::string path() const { return name(); }
  // What the transport chose when it was built (e.g. which boxes go through its outbox,
  // and how that was decided), for the results; empty when nothing.
  virtual std::string settings() const { return {}; }
  // Writes the tuning this transport measured, or was given, when it was built:
  // an exchange of the same plan built with them measures none of them again.
  virtual void tuning_as_built(transport_tuning&) const {}
  // Bytes sent so far, one entry per transport that carried messages (the
  // router counts for every choice).
  virtual std::vector<transport_stats> stats() const { return {}; }
  // True when start(stage) and wait(stage) do nothing on this rank (no message, no copy, no
  // collective call, no signal), so that the router skips them: an empty part's calls would
  // still bring its structures into the cache, which the kernels between calls evicted.
  virtual bool idle(size_t /*stage*/) const { return false; }
};

// Builds a transport for a context (a registry entry's constructor).
using transport_factory = std::function<std::unique_ptr<transport>(const transport_context&)>;

}  // namespace halox
