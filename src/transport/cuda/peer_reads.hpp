// What a single-copy transport of device fields (cuda-ipc) copies, built on
// the host without a GPU: stage by stage, the boxes this rank reads straight
// out of its on-node owners' fields into its own halos (as each owner
// publishes them, in the owner's layout), and its local copies.
//
// Reference algorithm (set-up, collective over the node):
//   publish my send boxes; gather everybody's (node_publication.hpp)
//   for each stage s, each message m I receive from owner o:
//     for each box i of m: copy o's published box i (o's layout, o's field as
//                          field_of(o, field) maps it here) -> my box i
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "transport/cuda/copy_batch.hpp"
#include "halox/extend/transport.hpp"
#include "transport/common/node_publication.hpp"

namespace halox::device {

struct peer_stage {
  std::vector<int> owners, readers;  // exchange ranks I read from / that read from me
  copy_batch reads;                  // owners' fields -> my halos
  copy_batch local;                  // my local copies
};

// Collective over ctx.node.comm. `layouts`: every node rank's grid (by node
// rank); `field_of(peer, field)`: where the peer's field starts in this
// process. Sets `problem` when an owner's boxes do not match mine.
std::vector<peer_stage> plan_peer_reads(
    const transport_context& ctx, const std::vector<node_layout>& layouts,
    const std::function<const std::byte*(int peer, int field)>& field_of, std::string& problem);

}  // namespace halox::device
