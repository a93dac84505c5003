// mpi-rma: one-sided. Every field is an MPI window over the caller's memory
// (MPI_Win_create), and each rank writes its halo cells straight into its
// neighbours' halos with MPI_Put: origin and target are derived datatypes over
// the sender's and the receiver's layouts (sub-domains may differ in size, so
// the neighbours tell each other theirs at set-up). Synchronisation per stage
// is post-start-complete-wait with the groups of origin and target neighbours
// (`mpi-rma`), or MPI_Win_fence, collective over all ranks (`mpi-rma-fence`).
//
// Reference algorithm:
//   set-up: exchange interior extents with the neighbours (O(neighbours));
//           win[f] = MPI_Win_create(field f, its allocated bytes)     (collective)
//   per stage s, per window w the stage uses:
//     start: MPI_Win_post(origins[s][w]); MPI_Win_start(targets[s][w])   | MPI_Win_fence(NOPRECEDE)
//            for m in sends, box b of field f in m:
//              MPI_Put(field f, 1, box b in my layout, m.peer, 0, 1,
//                      the same cells as halo box in m.peer's layout, win[f])
//            copy_boxes(self copies)
//     wait:  MPI_Win_complete(w); poll MPI_Win_test(w) until done         | MPI_Win_fence(NOSUCCEED)
//
// Waits: MPI_Win_test polls through the wait policy (yields, times out naming
// the origins). MPI_Win_start/MPI_Win_complete may block inside MPI until the
// targets have posted, and a fence blocks like a barrier: those do not time out.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "halox/transport.hpp"

namespace halox {

enum class rma_sync { pscw, fence };

class mpi_rma_transport final : public transport {
 public:
  mpi_rma_transport(const transport_context& ctx, rma_sync sync);
  ~mpi_rma_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return sync_ == rma_sync::fence ? "mpi-rma-fence" : "mpi-rma"; }

 private:
  struct put_op {
    const std::byte* origin;  // first allocated cell of the field
    MPI_Datatype origin_type;
    int target;
    MPI_Datatype target_type;
    size_t window = 0;
  };
  // One window's part of a stage.
  struct epoch {
    size_t window = 0;
    MPI_Group origins = MPI_GROUP_NULL;  // who puts into this rank (PSCW; null: none)
    MPI_Group targets = MPI_GROUP_NULL;  // whom this rank puts into (PSCW; null: none)
    std::string what;                    // the origins, for a timeout
  };
  struct stage_ops {
    std::vector<put_op> puts;
    std::vector<epoch> epochs;  // fence: every window any rank uses in the stage
  };

  void assign_window_slots();
  size_t window_of(size_t stage, size_t field) const {
    return field * window_slots_ + slot_of_[stage][field];
  }
  void build_schedule(const std::map<int, ivec3>& interiors);
  void agree_on_fences(MPI_Comm comm);

  const exchange_plan& plan_;
  const field_set& fields_;
  const wait_policy& waits_;
  const rma_sync sync_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // own: set-up messages and windows
  std::vector<MPI_Win> windows_;   // per field and slot: window_of()
  size_t window_slots_ = 1;
  std::vector<std::vector<size_t>> slot_of_;  // [stage][field]
  std::vector<MPI_Datatype> types_;
  std::vector<stage_ops> stages_;
};

}  // namespace halox
