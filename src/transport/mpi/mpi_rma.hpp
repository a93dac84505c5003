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
//           per stage, per receive m: packed = average run of m's boxes here < min run;
//             tell m.peer the offset of m in my landing window (or -1: direct)
//           landing = MPI_Win_create(a buffer of the largest stage's packed receives)
//   per stage s, per window w the stage uses:
//     start: MPI_Win_post(origins[s][w]); MPI_Win_start(targets[s][w])   | MPI_Win_fence(NOPRECEDE)
//            for m in sends, packed: pack m; MPI_Put(its bytes, m.peer, offset, landing)
//            for m in sends, direct, box b of field f in m:
//              MPI_Put(field f, 1, box b in my layout, m.peer, 0, 1,
//                      the same cells as halo box in m.peer's layout, win[f])
//            copy_boxes(self copies)
//     wait:  MPI_Win_complete(w); poll MPI_Win_test(w) until done         | MPI_Win_fence(NOSUCCEED)
//            unpack the packed receives from the landing window
//
// Waits: MPI_Win_test polls through the wait policy (yields, times out naming
// the origins). MPI_Win_start/MPI_Win_complete may block inside MPI until the
// targets have posted, and a fence blocks like a barrier: those do not time out.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "halox/extend/pack.hpp"
#include "halox/extend/transport.hpp"
#include "transport/core/names.hpp"

namespace halox {

// A neighbour's layout of one field: its points and allocated halo.
struct rma_peer_layout {
  ivec3 interior, lo, hi;
};

enum class rma_sync { pscw, fence };

class mpi_rma_transport final : public transport {
 public:
  mpi_rma_transport(const transport_context& ctx, rma_sync sync);
  ~mpi_rma_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override {
    return std::string(sync_ == rma_sync::fence ? transport_names::mpi_rma_fence
                                                : transport_names::mpi_rma);
  }
  std::string settings() const override;

  // Messages whose runs on the receiver average fewer bytes go packed: some
  // MPI libraries move every run of a datatype put as an operation of its
  // own, while packing costs two copies of the bytes (docs/results/).
  static constexpr size_t direct_min_run = 8192;

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
  // A message packed here and put as one run into the target's landing window.
  struct packed_put {
    int target;
    size_t from = 0;  // in send_buffer_
    size_t bytes = 0;
    MPI_Aint offset = 0;  // in the target's landing window
  };
  struct stage_ops {
    std::vector<put_op> puts;
    std::vector<packed_put> packed;
    copy_list pack;    // packed sends -> send_buffer_
    copy_list unpack;  // landing_ -> halo boxes, after the stage's puts are complete
    size_t landing_window = 0;
    std::vector<epoch> epochs;  // fence: every window any rank uses in the stage
  };
  // Per stage and window kind (a field, or the landing window: kind nfields),
  // the ranks that put into this rank and those this rank puts into.
  struct window_use {
    std::set<int> origins, targets;
    bool operator==(const window_use&) const = default;
  };

  void choose_packed_messages();
  std::vector<std::vector<window_use>> window_uses() const;
  void assign_window_slots(const std::vector<std::vector<window_use>>& uses);
  size_t window_of(size_t stage, size_t kind) const {
    return kind * window_slots_ + slot_of_[stage][kind];
  }
  void build_schedule(const std::map<int, std::vector<rma_peer_layout>>& interiors,
                      const std::vector<std::vector<window_use>>& uses);
  void agree_on_fences(MPI_Comm comm);

  const exchange_plan& plan_;
  const field_set& fields_;
  const wait_policy& waits_;
  const rma_sync sync_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // own: set-up messages and windows
  std::vector<MPI_Win> windows_;   // per kind (field, then landing) and slot: window_of()
  size_t window_slots_ = 1;
  std::vector<std::vector<size_t>> slot_of_;  // [stage][kind]
  // Offsets of packed messages: [stage][receive or send] in the receiver's
  // landing window, -1 for a direct one.
  std::vector<std::vector<long long>> recv_offsets_, send_offsets_;
  size_t min_run_ = direct_min_run;
  std::string rule_ = "default";  // how min_run_ was set
  size_t packed_receives_ = 0, receives_ = 0;  // messages per exchange, on this rank
  std::byte* landing_ = nullptr;      // MPI_Alloc_mem
  std::byte* send_buffer_ = nullptr;  // MPI_Alloc_mem
  size_t landing_bytes_ = 0, send_bytes_ = 0;
  bool landing_anywhere_ = false;  // some rank packs: every rank has landing windows
  std::vector<MPI_Datatype> types_;
  std::vector<stage_ops> stages_;
};

}  // namespace halox
