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
// That is what three steps of messages compute (z, y, x; two messages each):
// each step sends a halo slab to the rank that owns it, and the owner
// combines what lands into its points in the order above. A call into the
// owners may instead take one round: every holder sends its copies straight
// to the owner, which evaluates the same expression over the holders'
// copies, so the answer is the same bits either way.
// "Every holder" calls send the points both ranks hold to each other and
// combine them alike on both sides, so every holder computes the owner's
// total from the same operands in the same order. Where no point along an
// axis is held on both sides of its owner (halo widths below plus above at
// most the points a rank owns) that takes one round: every holder sends its
// copies to every other holder of the point (its neighbours, up to 26) and
// each evaluates the expression above. Else (or for a staged exchange) a
// round per axis, and along an axis held on both sides of its owner a step
// into the owner and one back.
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
#include "halox/extend/plan.hpp"
#include "halox/exchange.hpp"

namespace halox {

class node_signals;

// One step of a reverse call: an axis step (two sides, toward -axis and
// +axis) or, for a call into the owners whose halos are no deeper than the
// points they are filled from, one round in which every holder sends its
// copies straight to the owner (a side per neighbour direction).
struct reverse_step {
  enum class kind {
    into_owner,    // halo slab to its owner, combined there
    every_holder,  // the slab both ranks hold, to each other, combined on both
    from_owner,    // the owner's values copied back to the holders (a forward step)
    one_round,     // every copy to its owner at once; the owner combines them in the order
    one_round_every_holder,  // every copy to every other holder at once; each combines them
  };
  struct side {
    int peer = -1;  // -1: no neighbour on this side
    int send_tag = 0, recv_tag = 0;
    std::vector<field_box> send, recv;
    size_t send_bytes = 0, recv_bytes = 0;
    // One round only: the peer is this rank (across a periodic dimension of
    // one rank), whose copies are read in place, not sent.
    bool in_place = false;
  };
  int axis = 0;  // of an axis step
  kind what = kind::into_owner;
  // An axis step: [toward -axis, toward +axis]; one round: by direction_index
  // of the neighbour's direction (grid.hpp; the centre unused). The side facing
  // this rank on the peer is sides.size() - 1 - i.
  std::vector<side> sides;
};

// The steps of a reverse call over `moved` fields at `depth`, built locally.
// `one_round[axis]`: every rank may combine that axis in one round (agreed by
// the caller over all ranks). `all_at_once`: a call into the owners takes one
// round where every axis allows it (else three axis steps); the answer is the
// same bits either way.
std::vector<reverse_step> reverse_steps(const decomposition& d,
                                        const std::vector<field_layout>& layouts,
                                        const std::vector<int>& moved, int depth,
                                        bool every_holder, const std::array<bool, 3>& one_round,
                                        bool all_at_once);

// Whether this rank's points along each axis can be combined in one round
// (no point held on both sides of it).
std::array<bool, 3> one_round_axes(const std::vector<field_layout>& layouts,
                                   const std::vector<int>& moved, int depth);

// A run of one field's points: `bytes` from `offset` bytes past its first point.
struct halo_run {
  int field = 0;
  size_t offset = 0, bytes = 0;
};

// One region of a one-round step's combine: points of a field whose copies
// come from the same holders.
struct gathered_copies {
  int field = 0;
  box region;
  int along = 0;  // bit k: a neighbour along axis k holds a copy
  size_t me = 0;  // the source that is this rank's own copy (0 in the owner)
  // Every holder, across a periodic dimension of one rank: the region is this
  // rank's halo copy of its own points `twin` away, whose total it takes.
  bool copied = false;
  ivec3 twin{0, 0, 0};
  // By source a | b << 1 | c << 2 (the copy of the holder beside the owner
  // along x, y, z; 0 is the owner's own): the side whose buffer holds it, the
  // byte offset there of the region's first point, and the buffer's row and
  // plane, in elements (the field's for source `me`).
  std::array<size_t, 8> side{}, first{}, row{}, plane{};
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
  // `moved` and `depth`: those the steps were built for.
  reverse_schedule(std::vector<reverse_step> steps, const std::vector<field_layout>& layouts,
                   const std::vector<int>& moved, int depth, bool keep_halos,
                   const node_membership* node, const wait_policy& waits);
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
  // Message buffers, by side index (the largest of any step).
  std::vector<std::vector<std::byte>> send_, recv_;
  // The packs of each step toward -axis and +axis, built for the fields'
  // addresses at the first call (and again when a field moved).
  void build_packs(const field_set& fields);
  // What the peer of side `i` of a step sent this rank: a message received,
  // or, for a peer on the node, its outbox part facing this rank.
  const std::byte* received(size_t step, size_t i, size_t slot) const;
  void combine(size_t step, size_t slot);
  exchange_plan layout_plan_;  // the layouts, as the pack kernels take them
  // By outbox slot, then step, then side.
  using step_lists = std::vector<std::vector<copy_list>>;
  std::array<step_lists, 2> packs_;
  std::array<step_lists, 2> unpacks_;  // steps back from the owner
  std::vector<std::byte*> packed_for_;
  std::vector<gathered_copies> gathered_;  // of a one-round step
  std::vector<halo_run> kept_;  // halo runs restored at the end, and their values
  std::vector<std::byte> kept_values_;
  // The node path: each step's peers by node rank, by side (-1: by
  // message), the outbox (two slots, used by steps in turn, so that an owner
  // packs the next step while its readers still combine the last; in each
  // slot a part per side index at part_offset_, agreed by the node), the step
  // count so far, and for each slot the step that last used it and its
  // readers.
  std::vector<std::vector<int>> on_node_;
  std::unique_ptr<node_signals> signals_;
  std::vector<size_t> part_offset_;
  size_t slot_bytes_ = 0;
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
