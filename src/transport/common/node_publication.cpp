#include "transport/common/node_publication.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"

namespace halox {

namespace {

// What every rank of a node tells the others once: its layout.
struct rank_layout {
  int interior[3] = {0, 0, 0};
  int halo_lo[3] = {0, 0, 0};
  int halo_hi[3] = {0, 0, 0};
};

// Set-up messages between neighbours; node_comm carries nothing else then.
constexpr int layout_tag = 7301, boxes_tag = 7302;

// Sends to[i] to neighbours[i] and returns, by the same index, what each
// neighbour sent me (a rank may be its own neighbour). Collective over the
// neighbours.
template <class T>
std::vector<std::vector<T>> exchange_with(const std::vector<int>& neighbours,
                                          const std::vector<std::vector<T>>& to, int tag,
                                          MPI_Comm comm) {
  static_assert(std::is_trivially_copyable_v<T>, "records travel as bytes");
  std::vector<MPI_Request> sends(neighbours.size(), MPI_REQUEST_NULL);
  for (size_t i = 0; i < neighbours.size(); ++i)
    MPI_Isend(to[i].data(), static_cast<int>(to[i].size() * sizeof(T)), MPI_BYTE, neighbours[i],
              tag, comm, &sends[i]);
  std::vector<std::vector<T>> from(neighbours.size());
  for (size_t i = 0; i < neighbours.size(); ++i) {
    MPI_Status status;
    yielding_probe(neighbours[i], tag, comm, &status);
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    from[i].resize(static_cast<size_t>(bytes) / sizeof(T));
    MPI_Recv(from[i].data(), bytes, MPI_BYTE, neighbours[i], tag, comm, MPI_STATUS_IGNORE);
  }
  MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
  return from;
}

}  // namespace

void require_on_node(const transport_context& ctx, std::string_view transport) {
  int me = 0;
  MPI_Comm_rank(ctx.comm, &me);
  std::string problem;
  for (const auto& s : ctx.plan.stages)
    for (const auto* list : {&s.sends, &s.recvs})
      for (const auto& m : *list)
        if (!ctx.node.on_node(m.peer))
          problem = fmt::format(
              "transport {} reaches only ranks of the same node, but rank {} "
              "is not on rank {}'s node",
              transport, m.peer, me);
  require_all(ctx.comm, problem);
}

std::vector<int> node_neighbours(const exchange_plan& plan, const node_membership& node) {
  std::vector<int> out;
  for (const auto& s : plan.stages)
    for (const auto* list : {&s.sends, &s.recvs})
      for (const auto& m : *list) {
        const int r = node.node_rank_of[static_cast<size_t>(m.peer)];
        if (r >= 0) out.push_back(r);
      }
  std::ranges::sort(out);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<node_layout> gather_layouts(const exchange_plan& plan,
                                        const std::vector<uint64_t>& words,
                                        const node_membership& node,
                                        const std::vector<int>& neighbours) {
  const size_t nfields = plan.layouts.size();
  const size_t grid_bytes = nfields * sizeof(rank_layout);
  std::vector<std::byte> my_record(grid_bytes + words.size() * sizeof(uint64_t));
  for (size_t f = 0; f < nfields; ++f) {
    const local_grid& mine = plan.layouts[f].grid;
    rank_layout l;
    for (int d = 0; d < 3; ++d) {
      l.interior[d] = mine.interior[d];
      l.halo_lo[d] = mine.halo.lo[d];
      l.halo_hi[d] = mine.halo.hi[d];
    }
    std::memcpy(my_record.data() + f * sizeof l, &l, sizeof l);
  }
  if (!words.empty())
    std::memcpy(my_record.data() + grid_bytes, words.data(), words.size() * sizeof(uint64_t));
  const auto records =
      exchange_with(neighbours, std::vector<std::vector<std::byte>>(neighbours.size(), my_record),
                    layout_tag, node.comm);
  std::vector<node_layout> out(static_cast<size_t>(node.size));
  auto fill = [&](int node_rank, const std::vector<std::byte>& record) {
    if (record.size() != my_record.size())
      throw std::logic_error("a neighbour's layout record has another size");
    node_layout& to = out[static_cast<size_t>(node_rank)];
    for (size_t f = 0; f < nfields; ++f) {
      rank_layout l;
      std::memcpy(&l, record.data() + f * sizeof l, sizeof l);
      to.grids.emplace_back(ivec3{l.interior[0], l.interior[1], l.interior[2]},
                            halo_widths{{l.halo_lo[0], l.halo_lo[1], l.halo_lo[2]},
                                        {l.halo_hi[0], l.halo_hi[1], l.halo_hi[2]}});
    }
    to.words.resize(words.size());
    if (!words.empty())
      std::memcpy(to.words.data(), record.data() + grid_bytes, words.size() * sizeof(uint64_t));
  };
  fill(node.rank, my_record);
  for (size_t i = 0; i < neighbours.size(); ++i) fill(neighbours[i], records[i]);
  return out;
}

node_publication::node_publication(const std::vector<published_box>& mine,
                                   const node_membership& node, int me,
                                   const std::vector<int>& neighbours)
    : me_(me) {
  std::vector<std::vector<published_box>> to(neighbours.size());
  for (const auto& p : mine) {
    const int r = node.node_rank_of[static_cast<size_t>(p.receiver)];
    if (r < 0) continue;  // off the node: another transport carries it
    const auto at = std::ranges::lower_bound(neighbours, r);
    if (at == neighbours.end() || *at != r)
      throw std::logic_error("a published box's receiver is not a neighbour on the node");
    to[static_cast<size_t>(at - neighbours.begin())].push_back(p);
  }
  for (auto& from : exchange_with(neighbours, to, boxes_tag, node.comm))
    for (const auto& p : from)
      if (p.receiver == me) to_me_.push_back(p);
  for (const auto& p : to_me_) by_message_[{p.stage, p.sender, p.tag}].push_back(&p);
}

std::vector<const published_box*> node_publication::boxes_of(size_t stage, const message& m,
                                                             std::string& problem) const {
  auto entry = by_message_.find({static_cast<int>(stage), m.peer, m.tag});
  if (entry == by_message_.end() || entry->second.size() != m.boxes.size()) {
    problem = fmt::format(
        "rank {}: rank {} publishes no matching boxes for direction "
        "({},{},{}) in stage {}",
        me_, m.peer, m.direction[0], m.direction[1], m.direction[2], stage);
    return {};
  }
  const auto& found = entry->second;
  for (size_t i = 0; i < found.size(); ++i) {
    const auto& to = m.boxes[i];
    if (found[i]->index != static_cast<int>(i) || found[i]->field != to.field ||
        found[i]->region().volume() != to.region.volume()) {
      problem = fmt::format(
          "rank {}: the boxes of rank {} do not match mine for direction "
          "({},{},{}); do the ranks agree on the sub-domain sizes?",
          me_, m.peer, m.direction[0], m.direction[1], m.direction[2]);
      return {};
    }
  }
  return found;
}

}  // namespace halox
