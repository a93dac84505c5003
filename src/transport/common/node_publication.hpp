// What the owners of a node tell their readers once, when a single-copy
// transport (shm, cma) is built: their layout with a few words of the
// transport's own (field offsets, addresses, a pid), and their send boxes in
// their own layout. A reader then copies what the owner's plan sends; nothing
// is re-derived.
//
// Only neighbours talk: a rank sends its layout to, and receives one from,
// every rank of the node it exchanges halos with, and sends each of them the
// boxes it sends them; the set-up grows with the neighbours, not with the
// ranks of the node.
//
// Reference algorithm (set-up, collective over the node's neighbours):
//   send (grid, words) and the boxes I send r to every neighbour r; receive theirs
//   for each message m I receive in stage s:
//     owner's boxes = those published with (stage s, sender m.peer, tag m.tag, receiver me)
//     check they match m's boxes one to one (field, cell count), or fail on every rank
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "halox/extend/transport.hpp"

namespace halox {

// Collective over ctx.comm: throws usage_error on every rank when a peer of
// ctx.plan is not on this rank's node.
void require_on_node(const transport_context& ctx, std::string_view transport);

struct node_layout {
  std::vector<local_grid> grids;  // by field: each field's points and halo on that rank
  std::vector<uint64_t> words;    // what the transport published beside the grids
  const local_grid& grid_of(int field) const { return grids[static_cast<size_t>(field)]; }
};

// The node ranks this rank exchanges halos with (every on-node peer of the
// plan's messages, sent or received), in order; the relation is symmetric.
std::vector<int> node_neighbours(const exchange_plan& plan, const node_membership& node);

// Collective over the neighbours (the same number of words on every rank):
// by node rank, the field grids and words of every neighbour and mine; the
// entries of other node ranks stay empty.
std::vector<node_layout> gather_layouts(const exchange_plan& plan, const std::vector<uint64_t>& words,
                                        const node_membership& node,
                                        const std::vector<int>& neighbours);

// One box an owner sends on the node, as it publishes it to its readers.
struct published_box {
  int stage = 0, sender = 0, receiver = 0, tag = 0, index = 0, field = 0;
  int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  int in_outbox = 0;           // packed into the owner's outbox
  uint64_t outbox_offset = 0;  // where, when in the outbox
  box region() const { return {{lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}}; }
};

// Box `index` of a message that stage `stage` sends from rank `me`, as published.
inline published_box published_box_of(int stage, int me, const message& m, size_t index) {
  const auto& fb = m.boxes[index];
  published_box p{stage, me, m.peer, m.tag, static_cast<int>(index), fb.field};
  for (int d = 0; d < 3; ++d) {
    p.lo[d] = fb.region.lo[d];
    p.hi[d] = fb.region.hi[d];
  }
  return p;
}

class node_publication {
 public:
  // Collective over the neighbours: each box of `mine` goes to the node rank
  // of its receiver (a neighbour; boxes for ranks off the node are dropped);
  // I keep those sent to me. `me`
  // is this rank in the exchange's communicator.
  node_publication(const std::vector<published_box>& mine, const node_membership& node, int me,
                   const std::vector<int>& neighbours);
  node_publication(const node_publication&) = delete;  // the index points into to_me_
  node_publication& operator=(const node_publication&) = delete;

  // The owner's boxes for message m that I receive in stage `stage`, in m's
  // order; empty, with `problem` set, when the owner published none or they do
  // not match m's boxes.
  std::vector<const published_box*> boxes_of(size_t stage, const message& m,
                                             std::string& problem) const;

 private:
  std::vector<published_box> to_me_;  // the boxes I receive
  // by (stage, sender, tag), in the owner's order
  std::map<std::tuple<int, int, int>, std::vector<const published_box*>> by_message_;
  int me_ = 0;
};

}  // namespace halox
