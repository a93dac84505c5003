// shm: on-node neighbours by shared memory, without MPI messages (the seeds'
// "xpmem" path, portably).
//
// When every rank of the node keeps its fields in node-shared memory
// (shared_fields), a reader copies its halo straight out of the neighbour's
// fields: one copy, no packing. Boxes made of short x-runs (a halo of a few
// cells across x) would cost a cross-core cache-line transfer per run; the
// owner packs those into its outbox (a shared staging area) and the reader
// unpacks contiguous bytes. Fields in private memory go through the outbox
// entirely (path "shm(staged)").
//
// Which boxes a reader copies from where is published by their owner when the
// transport is built (its send boxes, in its own layout), so both sides follow
// the plan and nothing is re-derived.
//
// Reference algorithm for step k (k counts stages over all exchanges):
//   start: pack staged boxes into my outbox; do self copies
//          ready[me] = k                      (my cells for step k are final)
//   wait:  for each on-node peer p of the step:
//            wait until ready[p] >= k; copy p's send boxes -> my halo boxes
//            (staged boxes: unpack from p's outbox)
//          done[me] = k
//   after the last step: wait until done[p] >= k for every peer p that reads
//          my cells (nobody still reads them when the caller may change them)
// Steps only read cells that earlier steps finished and only write halos that
// no peer reads in the same step, so these two counters are the only sync.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "halox/transport.hpp"
#include "halox/transport/node_signals.hpp"

namespace halox {

class shm_transport final : public transport {
 public:
  // Collective over ctx.node.comm. Every peer of ctx.plan must be on this node.
  explicit shm_transport(const transport_context& ctx);
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return "shm"; }
  std::string path() const override { return direct_ ? "shm" : "shm(staged)"; }

 private:
  struct peer_copy {  // one received message copied straight from the peer's fields
    int node_rank = 0;
    std::vector<const std::byte*> from_fields;  // per box: the peer's field base
    std::vector<box> from;                      // in the peer's layout
    std::vector<std::byte*> to_fields;
    std::vector<box> to;
    const local_grid* from_grid = nullptr;
  };
  struct outbox_pack {
    std::vector<field_box> boxes;
    size_t offset = 0;  // in my outbox
  };
  struct outbox_unpack {
    int node_rank = 0;
    std::vector<field_box> boxes;
    size_t offset = 0;  // in the peer's outbox
  };
  struct stage_work {
    std::vector<outbox_pack> packs;
    std::vector<peer_copy> pulls;
    std::vector<outbox_unpack> unpacks;
  };

  const exchange_plan& plan_;
  const field_set& fields_;
  const wait_policy& waits_;
  const node_membership& node_;
  std::vector<stage_work> stages_;
  std::vector<local_grid> peer_grids_;  // by node rank
  std::vector<int> readers_;            // node ranks that read my cells
  std::optional<node_signals> signals_;  // ready/done counters; the payload is the outbox
  uint64_t step_ = 0;
  bool direct_ = false;                 // fields of the whole node in shared memory
};

}  // namespace halox
