// shm: on-node neighbours by a direct single copy from the neighbour's field
// memory into this rank's halo (the seeds' "xpmem" path, portably: fields in a
// node-shared window, see field_memory.hpp); off-node neighbours by mpi-p2p.
//
// Boxes made of short x-runs (a halo of a few cells across x) would cost a
// cross-core cache-line transfer per run; for those the owner packs into an
// outbox in its shared segment and the reader unpacks the contiguous bytes.
//
// Reference algorithm for step k (k counts steps over all exchanges):
//   start: pack short-run boxes into my outbox
//          ready[me] = k                      (my cells for step k are final)
//          start the off-node messages; do self copies
//   wait:  for each on-node peer p of the step:
//            spin until ready[p] >= k; copy p's send boxes -> my halo boxes
//            (short-run boxes: unpack from p's outbox)
//          complete the off-node messages
//          done[me] = k
//   after the last step: spin until done[p] >= k for every on-node peer p
//          (nobody still reads my cells when the caller may change them)
// Steps only read cells that earlier steps finished and only write halos that
// no peer reads in the same step, so these two counters are the only sync.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "halox/transport.hpp"

namespace halox {

class shm_transport final : public transport {
 public:
  // Collective over comm. Throws usage_error on every rank when some rank's
  // fields are not in a shared_field_memory.
  shm_transport(const exchange_plan& plan, MPI_Comm comm, const std::vector<std::byte*>& fields);
  ~shm_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return "shm"; }

 private:
  struct peer_copy {
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
  struct stage_copies {
    std::vector<outbox_pack> packs;
    std::vector<peer_copy> pulls;
    std::vector<outbox_unpack> unpacks;
  };

  void spin_until(int node_rank, bool ready, uint64_t value) const;

  const exchange_plan& plan_;
  std::vector<std::byte*> fields_;
  std::unique_ptr<exchange_plan> remote_plan_;  // off-node messages only
  std::unique_ptr<transport> remote_;
  std::vector<stage_copies> stages_;
  std::vector<local_grid> peer_grids_;          // by node rank
  std::vector<int> readers_;                    // node ranks that read my cells
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  MPI_Win control_window_ = MPI_WIN_NULL;
  std::vector<uint64_t*> control_;              // by node rank: [0] ready, [8] done
  std::vector<std::byte*> outbox_;              // by node rank
  int node_rank_ = 0;
  uint64_t step_ = 0;
  bool oversubscribed_ = false;
};

}  // namespace halox
