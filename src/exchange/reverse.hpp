// The reverse exchange: every holder's copy of a point combined into the
// point's owner (or into every holder), in one fixed order.
//
// Reference: along one axis a point owned by rank P may also be held by the
// rank below P (in its high halo) and by the rank above (in its low halo).
// Its copies are named by the offset of their holder from the owner:
// v(0) the owner's, v(-1) and v(+1). Along an axis the combined value is
//
//   c = (v(0) op v(-1)) op v(+1)          (an absent copy is left out)
//
// and in three dimensions the axes are combined z first, then y, then x:
//
//   total = X(Y(Z(v)))    Z over the z copies at every (x, y) position held
//                         (halo included), Y over the y copies of those sums,
//                         X over the x copies of those.
//
// That is what three steps of messages compute (z, y, x; two messages each),
// so the answer is the same bitwise whatever carried the forward exchange:
// each step sends a halo slab to the rank that owns it, and the owner
// combines what lands into its points in the order above. "Every holder"
// steps send the slab both ranks hold to each other and combine it alike on
// both sides, so every holder computes the owner's total from the same
// operands in the same order: one round where no point along an axis is held
// on both sides of its owner (halo widths below plus above at most the
// points a rank owns), else a step into the owner and one back.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/extend/wait_policy.hpp"
#include "halox/field.hpp"
#include "halox/field_memory.hpp"
#include "halox/extend/pack.hpp"
#include "halox/extend/transport.hpp"
#include "halox/plan.hpp"
#include "halox/exchange.hpp"

namespace halox {

class node_signals;

// One axis step of a reverse call.
struct reverse_step {
  enum class kind {
    into_owner,    // halo slab to its owner, combined there
    every_holder,  // the slab both ranks hold, to each other, combined on both
    from_owner,    // the owner's values copied back to the holders (a forward step)
  };
  struct side {
    int peer = -1;  // -1: no neighbour on this side
    int send_tag = 0, recv_tag = 0;
    std::vector<field_box> send, recv;
    size_t send_bytes = 0, recv_bytes = 0;
  };
  int axis = 0;
  kind what = kind::into_owner;
  side lo, hi;
};

// The steps of a reverse call over `moved` fields at `depth`, built locally.
// `one_round[axis]`: every rank may combine that axis in one round (agreed by
// the caller over all ranks).
std::vector<reverse_step> reverse_steps(const decomposition& d,
                                        const std::vector<field_layout>& layouts,
                                        const std::vector<int>& moved, int depth,
                                        bool every_holder, const std::array<bool, 3>& one_round);

// Whether this rank's points along each axis can be combined in one round
// (no point held on both sides of it).
std::array<bool, 3> one_round_axes(const std::vector<field_layout>& layouts,
                                   const std::vector<int>& moved, int depth);

// A run of one field's points: `bytes` from `offset` bytes past its first point.
struct halo_run {
  int field = 0;
  size_t offset = 0, bytes = 0;
};

// Runs the steps: start() posts the first, wait() the rest.
class reverse_schedule {
 public:
  // keep_halos: the halo points the steps combine into on the way (the copies
  // that are owned along one axis but not along another) get their own values
  // back at the end, so that only the owners' points change.
  // node: where given, the steps' peers on this rank's node read what this
  // rank sends straight from its outbox in node-shared memory (one copy
  // less than a message, no MPI), the others get messages. Collective over
  // node->comm then.
  reverse_schedule(std::vector<reverse_step> steps, const std::vector<field_layout>& layouts,
                   bool keep_halos, const node_membership* node, const wait_policy& waits);
  ~reverse_schedule();
  reverse_schedule(const reverse_schedule&) = delete;
  reverse_schedule& operator=(const reverse_schedule&) = delete;

  void start(const field_set& fields, reduction op, MPI_Comm comm, const wait_policy& waits);
  void wait();
  size_t message_count() const;   // per call
  size_t bytes_sent() const;      // per call
  const std::vector<reverse_step>& steps() const { return steps_; }

 private:
  void post(size_t step);
  void complete(size_t step);

  std::vector<reverse_step> steps_;
  const std::vector<field_layout>* layouts_;
  std::vector<std::byte> send_lo_, send_hi_, recv_lo_, recv_hi_;
  // The packs of each step toward -axis and +axis, built for the fields'
  // addresses at the first call (and again when a field moved).
  void build_packs(const field_set& fields);
  const std::byte* from_lo(size_t step, size_t slot) const;
  const std::byte* from_hi(size_t step, size_t slot) const;
  exchange_plan layout_plan_;  // the layouts, as the pack kernels take them
  // By outbox slot, then step, then side (-axis, +axis).
  using step_lists = std::vector<std::array<copy_list, 2>>;
  std::array<step_lists, 2> packs_;
  std::array<step_lists, 2> unpacks_;  // steps back from the owner
  std::vector<std::byte*> packed_for_;
  std::vector<halo_run> kept_;  // halo runs restored at the end, and their values
  std::vector<std::byte> kept_values_;
  // The node path: each step's peers by node rank (-1: by message), the
  // outbox (two slots, used by steps in turn, so that an owner packs the next
  // step while its readers still combine the last; in each slot the part
  // toward -axis at 0, toward +axis at hi_offset_, agreed by the node), the
  // step count so far, and for each slot the step that last used it and its
  // readers.
  struct node_sides {
    int lo = -1, hi = -1;
  };
  std::vector<node_sides> on_node_;
  std::unique_ptr<node_signals> signals_;
  size_t hi_offset_ = 0, slot_bytes_ = 0;
  uint64_t seq_ = 0;
  std::array<uint64_t, 2> slot_seq_{};
  std::array<std::vector<int>, 2> slot_readers_;
  // The call in flight.
  const field_set* fields_ = nullptr;
  reduction op_ = reduction::sum;
  MPI_Comm comm_ = MPI_COMM_NULL;
  const wait_policy* waits_ = nullptr;
  size_t next_ = 0;
  std::vector<MPI_Request> requests_;
};

}  // namespace halox
